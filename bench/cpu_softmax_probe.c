/* Row softmax 4096 x 4096 float32 on 2 threads, in plain C: the plan the generated kernel
 * runs (max pass, exp(x - max) to the output row, sum, multiply by 1 / sum; the rows split
 * in halves) against variants of it. Best of 10 samples per variant, variants interleaved,
 * 4 rounds. What README's "Benchmarks" section says about the softmax comes from here.
 *
 *   gcc -O3 -march=x86-64-v4 -mclzero -fno-math-errno -fno-trapping-math -fopenmp-simd \
 *       -Inative/include bench/cpu_softmax_probe.c -o /tmp/smx -lm -lpthread && /tmp/smx
 */
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cuvil_aot/vmath.h"

enum { PLAN, PREFETCH, AVX512_EXP, BOTH, ROW_BUFFER_NT, CLZERO, INTERLEAVED, DYNAMIC, NVARIANTS };
static const char *const names[] = {
    "the generated plan (halves)", "+ prefetch the next row in the exp pass",
    "+ AVX-512 exp (scalef), no prefetch", "+ prefetch and AVX-512 exp", "exp to a row buffer, non-temporal stores out",
    "+ CLZERO of the output row", "rows interleaved between the threads",
    "32 chunks handed out dynamically (the pool)"};
enum { R = 4096, C = 4096 };
static const float *X;
static float *Y;
static int variant;
static atomic_long next_chunk;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* exp on |x| <= ln2/2 reduction, the polynomial of cv_expf, 2^n by scalef (0.99 ulp). */
static inline __m512 exp16(__m512 x) {
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), _mm512_min_ps(_mm512_set1_ps(89.0f), x));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(0x1.715476p+0f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f), r);
    __m512 p = _mm512_set1_ps(0x1.6ac74ep-10f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.123de0p-7f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.555858p-5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.55548cp-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.fffffcp-2f));
    p = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

static void row(const float *x, float *y) {
    static _Thread_local float buf[C] __attribute__((aligned(64)));
    float m = -INFINITY, s = 0;
#pragma omp simd reduction(max : m)
    for (int i = 0; i < C; i++) m = x[i] > m ? x[i] : m;
    float *e = variant == ROW_BUFFER_NT ? buf : y;
    if (variant == CLZERO)
        for (int i = 0; i < C; i += 16) __builtin_ia32_clzero(y + i);
    if (variant == PREFETCH) {
        for (int b = 0; b < C; b += 16) {
            __builtin_prefetch(x + C + b, 0, 3);
#pragma omp simd
            for (int i = b; i < b + 16; i++) e[i] = cv_expf(x[i] - m);
        }
    } else if (variant == AVX512_EXP || variant == BOTH) {
        for (int i = 0; i < C; i += 16) {
            if (variant == BOTH) __builtin_prefetch(x + C + i, 0, 3);
            _mm512_store_ps(e + i, exp16(_mm512_sub_ps(_mm512_load_ps(x + i), _mm512_set1_ps(m))));
        }
    } else {
#pragma omp simd
        for (int i = 0; i < C; i++) e[i] = cv_expf(x[i] - m);
    }
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < C; i++) s += e[i];
    const float inv = 1.0f / s;
    if (variant == ROW_BUFFER_NT) {
        for (int i = 0; i < C; i += 16)
            _mm512_stream_ps(y + i, _mm512_mul_ps(_mm512_load_ps(buf + i), _mm512_set1_ps(inv)));
        return;
    }
#pragma omp simd
    for (int i = 0; i < C; i++) y[i] *= inv;
}

static void *work(void *arg) {
    const long t = (long)arg;
    if (variant == DYNAMIC) {
        for (long c; (c = atomic_fetch_add(&next_chunk, 1)) < 32;)
            for (long r = c * R / 32; r < (c + 1) * R / 32; r++) row(X + r * C, Y + r * C);
    } else if (variant == INTERLEAVED) {
        for (long r = t; r < R; r += 2) row(X + r * C, Y + r * C);
    } else {
        for (long r = t * R / 2; r < (t + 1) * R / 2; r++) row(X + r * C, Y + r * C);
    }
    return NULL;
}

int main(void) {
    float *x = aligned_alloc(64, (size_t)R * C * 4), *y = aligned_alloc(64, (size_t)R * C * 4);
    srand(1);
    for (long i = 0; i < (long)R * C; i++) x[i] = (rand() / (float)RAND_MAX - 0.5f) * 8, y[i] = 0;
    X = x, Y = y;
    for (int round = 0; round < 4; round++) {
        double best[NVARIANTS];
        for (int v = 0; v < NVARIANTS; v++) best[v] = 1e9;
        for (int k = 0; k < 10; k++)
            for (variant = 0; variant < NVARIANTS; variant++) {
                atomic_store(&next_chunk, 0);
                double t0 = now();
                pthread_t th;
                pthread_create(&th, NULL, work, (void *)1);
                work((void *)0);
                pthread_join(th, NULL);
                double t = now() - t0;
                if (t < best[variant]) best[variant] = t;
            }
        printf("round %d:", round + 1);
        for (int v = 0; v < NVARIANTS; v++) printf(" %.0f", best[v] * 1e6);
        printf(" us\n");
    }
    for (int v = 0; v < NVARIANTS; v++) printf("  column %d: %s\n", v + 1, names[v]);
    return 0;
}
