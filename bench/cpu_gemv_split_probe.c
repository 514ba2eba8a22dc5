/* GPT-2's four decode GEMVs (x @ W, W (K, N) row-major: 768x2304, 768x768, 768x3072,
 * 3072x768, 27 MiB) on 2 threads, three ways interleaved, best of 1500: the columns split
 * in halves (each thread 8 rows of W at a time, as the runtime's rows_stream), the rows
 * split in halves with the same 8-row steps, and the rows split with one row at a time (one
 * sequential stream a thread, partial sums added after). The k split looked faster here
 * but was slower in the runtime (bench/cpu_batch1_notes.md, tenth session): not kept.
 *
 *   gcc -O2 -march=native -fopenmp bench/cpu_gemv_split_probe.c -o /tmp/gv \
 *       && OMP_WAIT_POLICY=active /tmp/gv
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
/* y[j0:j1] += sum_p x[p] W[p, j0:j1] for p in [p0,p1) */
static void part(const float*x,const float*W,long N,long p0,long p1,long j0,long j1,float*y){
  long p=p0;
  for(;p+8<=p1;p+=8){
    __m512 a[8]; for(int i=0;i<8;i++)a[i]=_mm512_set1_ps(x[p+i]);
    for(long j=j0;j<j1;j+=16){
      for(int i=0;i<8;i++) _mm_prefetch((const char*)(W+(p+8+i)*N+j),_MM_HINT_T0);
      __m512 s=_mm512_loadu_ps(y+j);
      for(int i=0;i<8;i++) s=_mm512_fmadd_ps(a[i],_mm512_loadu_ps(W+(p+i)*N+j),s);
      _mm512_storeu_ps(y+j,s);
    }
  }
  for(;p<p1;p++){__m512 a=_mm512_set1_ps(x[p]); for(long j=j0;j<j1;j+=16) _mm512_storeu_ps(y+j,_mm512_fmadd_ps(a,_mm512_loadu_ps(W+p*N+j),_mm512_loadu_ps(y+j)));}
}
static void part1(const float*x,const float*W,long N,long p0,long p1,float*y){
  for(long p=p0;p<p1;p++){__m512 a=_mm512_set1_ps(x[p]); const float*w=W+p*N;
    for(long j=0;j<N;j+=64){ _mm_prefetch((const char*)(w+j+2048),_MM_HINT_T0);
      _mm512_storeu_ps(y+j,_mm512_fmadd_ps(a,_mm512_loadu_ps(w+j),_mm512_loadu_ps(y+j)));
      _mm512_storeu_ps(y+j+16,_mm512_fmadd_ps(a,_mm512_loadu_ps(w+j+16),_mm512_loadu_ps(y+j+16)));
      _mm512_storeu_ps(y+j+32,_mm512_fmadd_ps(a,_mm512_loadu_ps(w+j+32),_mm512_loadu_ps(y+j+32)));
      _mm512_storeu_ps(y+j+48,_mm512_fmadd_ps(a,_mm512_loadu_ps(w+j+48),_mm512_loadu_ps(y+j+48)));}}
}
int main(){
  long K[4]={768,768,768,3072}, N[4]={2304,768,3072,768};
  float*W[4],*x[4],*y[4],*yp[4][2];
  size_t tot=0;
  for(int m=0;m<4;m++){W[m]=aligned_alloc(64,K[m]*N[m]*4);for(long i=0;i<K[m]*N[m];i++)W[m][i]=(i%13)*0.01f;tot+=K[m]*N[m]*4;
    x[m]=aligned_alloc(64,K[m]*4);for(long i=0;i<K[m];i++)x[m][i]=1;y[m]=aligned_alloc(64,N[m]*4);
    for(int t=0;t<2;t++)yp[m][t]=aligned_alloc(64,N[m]*4);}
  double bests[3]={1e9,1e9,1e9};
  for(int r=0;r<1500;r++) for(int mode=0;mode<3;mode++){
      double t0=now();
      for(int m=0;m<4;m++){
        #pragma omp parallel num_threads(2)
        { int id=omp_get_thread_num();
          if(mode==0){ long h=N[m]/2; memset(y[m]+id*h,0,h*4); part(x[m],W[m],N[m],0,K[m],id*h,(id+1)*h,y[m]); }
          else if(mode==1){ long h=K[m]/2; memset(yp[m][id],0,N[m]*4); part(x[m],W[m],N[m],id*h,(id+1)*h,0,N[m],yp[m][id]); }
          else { long h=K[m]/2; memset(yp[m][id],0,N[m]*4); part1(x[m],W[m],N[m],id*h,(id+1)*h,yp[m][id]); }
        }
        if(mode>=1) for(long j=0;j<N[m];j++) y[m][j]=yp[m][0][j]+yp[m][1][j];
      }
      double t=now()-t0; if(t<bests[mode])bests[mode]=t;
  }
  for(int mode=0;mode<3;mode++) printf("%s: %.0f us = %.0f GB/s\n", mode==2?"row halves 1-row":mode?"row halves 8-row":"column halves", bests[mode]*1e6, tot/bests[mode]/1e9);
}
