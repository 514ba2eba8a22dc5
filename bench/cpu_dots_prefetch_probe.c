/* The dots kernel's memory side alone (gemm_dots_body.h's shape: 8 rows of A, 4 x 6
 * register blocks, B's rows of 768 floats streamed once), on 2 threads, B from memory
 * (96 MB, a 64 MB buffer written between calls) or from cache, in 4 KB or 2 MB pages:
 * which prefetch keeps the streams fed. Variants: 3 a plain read of B (the bandwidth),
 * 0 no prefetch, 1 prefetcht0 of the columns `pfd` blocks ahead (3 per row block),
 * 11 the same into L2 (prefetcht1). Output: bench/cpu_dots_prefetch_probe.txt.
 *
 *   gcc -O3 -march=x86-64-v4 -pthread bench/cpu_dots_prefetch_probe.c -o /tmp/dp
 *   /tmp/dp HUGEPAGES [MB [FLUSH]]   # e.g. /tmp/dp 0; /tmp/dp 1; /tmp/dp 0 16 0 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#define M 8
#define K 768
#define DJ 6
static int64_t NCOL; static float *w, *x, *c; static int variant, pfd, hp;
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9;}
static inline void pf(const void *p, int kind){
  switch(kind){case 0: _mm_prefetch(p,_MM_HINT_T0);break;case 1:_mm_prefetch(p,_MM_HINT_T1);break;case 2:_mm_prefetch(p,_MM_HINT_T2);break;case 3:_mm_prefetch(p,_MM_HINT_NTA);break;}
}
__attribute__((target("avx512f"))) static void block(const float *xa, const float *b, float *cc, int64_t ldc, const float *pfp, int npf, int kind, int pfstep){
  __m512 acc[4][DJ];
  for (int i=0;i<4;i++) for(int j=0;j<DJ;j++) acc[i][j]=_mm512_setzero_ps();
  for (int p=0;p<K;p+=16){
    if (npf) for (int j=0;j<npf;j++) pf(pfp + j*pfstep + p, kind);
    __m512 bv[DJ];
    for(int j=0;j<DJ;j++){ bv[j]=_mm512_loadu_ps(b+j*K+p); __asm__("" : "+v"(bv[j]));}
    for(int i=0;i<4;i++){ __m512 av=_mm512_loadu_ps(xa+i*K+p); __asm__("" : "+v"(av)); for(int j=0;j<DJ;j++) acc[i][j]=_mm512_fmadd_ps(av,bv[j],acc[i][j]);}
  }
  for (int i=0;i<4;i++) for(int j=0;j<DJ;j++) cc[i*ldc+j]=_mm512_reduce_add_ps(acc[i][j]);
}
/* variant 0: no prefetch; 1: row block g prefetches 3 columns (g*3..) PF blocks ahead; 
   2: each row block prefetches all 6 columns' lines at half rate (every other step) ; 
   3: plain read sum  */
__attribute__((target("avx512f"))) static void run(int t, int nt){
  int64_t j0 = NCOL*t/nt/DJ*DJ, j1 = t==nt-1? NCOL : NCOL*(t+1)/nt/DJ*DJ;
  if (variant==3){ __m512 s=_mm512_setzero_ps(); for (int64_t q=j0*K;q<j1*K;q+=64){ s=_mm512_add_ps(s,_mm512_loadu_ps(w+q)); s=_mm512_add_ps(s,_mm512_loadu_ps(w+q+16)); s=_mm512_add_ps(s,_mm512_loadu_ps(w+q+32)); s=_mm512_add_ps(s,_mm512_loadu_ps(w+q+48));} c[t]=_mm512_reduce_add_ps(s); return; }
  int kind = variant>=10 ? variant-10 : 0;
  for (int64_t j=j0;j<j1;j+=DJ){
    const float *b = w + j*K;
    const float *pb = w + (j + pfd*DJ)*K; int ok = j + pfd*DJ + DJ <= j1;
    block(x, b, c + j, NCOL, pb, (variant && ok) ? 3 : 0, kind, K);
    block(x+4*K, b, c + 4*NCOL + j, NCOL, pb+3*K, (variant && ok) ? 3 : 0, kind, K);
  }
}
static atomic_int gen, done; static int NT;
static void *worker(void *a){ int t=(int)(intptr_t)a, g=0; for(;;){ while(atomic_load(&gen)==g) ; g=atomic_load(&gen); if(g<0) return 0; run(t,NT); atomic_fetch_add(&done,1);} }
int main(int argc,char**argv){
  NT=2; int64_t mb = argc>2 ? atoi(argv[2]) : 96; int doflush = argc>3 ? atoi(argv[3]) : 1; NCOL = mb*1024*1024/4/K/DJ*DJ;
  hp = argc>1 ? atoi(argv[1]) : 0;
  size_t bytes = NCOL*K*4; w = aligned_alloc(2<<20, (bytes + (2<<20)-1)/(2<<20)*(2<<20));
  if (hp) madvise(w, bytes, MADV_HUGEPAGE); else madvise(w, bytes, MADV_NOHUGEPAGE);
  for (size_t i=0;i<NCOL*K;i++) w[i]=(float)(i%7)*0.1f;
  x = aligned_alloc(64, M*K*4); for(int i=0;i<M*K;i++) x[i]=1.0f/(i+1);
  c = aligned_alloc(64, M*NCOL*4);
  float *flush = malloc(64<<20); 
  pthread_t th; pthread_create(&th,0,worker,(void*)1);
  int variants[] = {3, 0, 1, 11}; int pfds[] = {1,2,4,8};
  for (int rep=0; rep<1; rep++)
  for (unsigned vi=0; vi<sizeof variants/sizeof *variants; vi++) for (int pi=0; pi<(variants[vi]==0||variants[vi]==3?1:4); pi++){
    variant = variants[vi]; pfd = pfds[pi];
    double best=1e9, tot=0; int n=0;
    for (int r=0;r<15;r++){
      if (doflush) memset(flush, r, 64<<20); /* evict w partly: 96MB > L3 anyway */
      double t0=now(); atomic_store(&done,0); atomic_fetch_add(&gen,1); run(0,NT); while(atomic_load(&done)<1); double dt=now()-t0;
      if (dt<best) best=dt; tot+=dt; n++;
    }
    printf("hp=%d variant %2d pfd %d: best %7.1f us  %5.1f GB/s  mean %5.1f GB/s\n", hp, variant, pfd, best*1e6, bytes/best/1e9, bytes/(tot/n)/1e9);
  }
  return 0;
}
