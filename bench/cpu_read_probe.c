/* Read bandwidth of this machine's caches and memory on 2 threads: a sum over float32
 * arrays of 4 to 96 MiB with AVX-512 loads, best and median of 300 passes. Where the decode step's
 * 27 MiB of weights sit between L3 and memory (bench/cpu_batch1_notes.md, tenth session).
 *
 *   gcc -O2 -march=native -fopenmp bench/cpu_read_probe.c -o /tmp/rd && OMP_NUM_THREADS=2 /tmp/rd
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(void){
  for(int mib=4; mib<=64; mib*=2) for (int extra=0; extra<2; extra++){
    size_t n=(size_t)(mib + extra*(mib/2+ (mib==4?0:0)))*(1<<20)/4;
    if(extra && mib<16) continue;
    float*a=aligned_alloc(64,n*4); for(size_t i=0;i<n;i++)a[i]=1.0f/(i%7+1);
    double best=1e9, ts[300]; float sink=0;
    for(int r=0;r<300;r++){
      double t=now();
      #pragma omp parallel reduction(+:sink)
      { int id=omp_get_thread_num(), nt=omp_get_num_threads();
        size_t lo=n*id/nt, hi=n*(id+1)/nt; lo&=~63; hi= (id==nt-1)?n:(hi&~63);
        __m512 s0=_mm512_setzero_ps(),s1=s0,s2=s0,s3=s0;
        for(size_t i=lo;i<hi;i+=64){s0=_mm512_add_ps(s0,_mm512_load_ps(a+i));s1=_mm512_add_ps(s1,_mm512_load_ps(a+i+16));s2=_mm512_add_ps(s2,_mm512_load_ps(a+i+32));s3=_mm512_add_ps(s3,_mm512_load_ps(a+i+48));}
        sink+=_mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0,s1),_mm512_add_ps(s2,s3)));
      }
      t=now()-t; ts[r]=t; if(t<best)best=t;
    }
    qsort(ts,300,sizeof(double),cmp); printf("%5.1f MiB: best %.0f GB/s median %.0f (%g)\n", n*4.0/(1<<20), n*4/best/1e9, n*4/ts[150]/1e9, sink);
    free(a);
  }
}
