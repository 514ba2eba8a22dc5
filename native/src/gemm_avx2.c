/* GEMM kernels for x86-64-v3 (AVX2 + FMA). 16 vector registers: the packed
 * kernel is the classic 6 x 2-vector tile (BLIS haswell: 6 x 16 floats,
 * 6 x 8 doubles); the rows kernel keeps 4 rows x 3 vectors (faster than
 * 6 x 2, 5 x 2 or 4 x 2). x86-64 only. */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#include "gemm_kernels.h"

#define CV_TARGET __attribute__((target("avx2,fma")))
#define ISA avx2
#define MR 6
#define NV 2
#define RMAX 4
#define RV 3
#define DJ 2
#define MC 192
#define KC 256

/* Lanes [0, n) of a 32-bit / 64-bit lane mask. */
CV_TARGET static inline __m256i mask32(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
CV_TARGET static inline __m256i mask64(int n) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
}

/* Sum of the lanes. */
CV_TARGET static inline float hsum_ps(__m256 v) {
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_add_ss(x, _mm_movehdup_ps(x)));
}
CV_TARGET static inline double hsum_pd(__m256d v) {
    __m128d x = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(x, _mm_unpackhi_pd(x, x)));
}

/* ---- float32 ---- */
#define T float
#define TSFX f32
#define V __m256
#define VL 8
#define V_LOAD(p) _mm256_load_ps(p)
#define V_LOADU(p) _mm256_loadu_ps(p)
#define V_LOADU_PART(p, n) _mm256_maskload_ps(p, mask32(n))
#define V_STOREU_PART(p, v, n) _mm256_maskstore_ps(p, mask32(n), v)
#define V_STOREU(p, v) _mm256_storeu_ps(p, v)
#define V_STORE(p, v) _mm256_store_ps(p, v)
#define V_SET1(x) _mm256_set1_ps(x)
#define V_ZERO() _mm256_setzero_ps()
#define V_ADD(a, b) _mm256_add_ps(a, b)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_HSUM(v) hsum_ps(v)
#define NC 256
#include "gemm_kern_body.h"
#undef NC

/* ---- float64 ---- */
#define T double
#define TSFX f64
#define V __m256d
#define VL 4
#define V_LOAD(p) _mm256_load_pd(p)
#define V_LOADU(p) _mm256_loadu_pd(p)
#define V_LOADU_PART(p, n) _mm256_maskload_pd(p, mask64(n))
#define V_STOREU_PART(p, v, n) _mm256_maskstore_pd(p, mask64(n), v)
#define V_STOREU(p, v) _mm256_storeu_pd(p, v)
#define V_STORE(p, v) _mm256_store_pd(p, v)
#define V_SET1(x) _mm256_set1_pd(x)
#define V_ZERO() _mm256_setzero_pd()
#define V_ADD(a, b) _mm256_add_pd(a, b)
#define V_FMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#define V_HSUM(v) hsum_pd(v)
#define NC 128
#include "gemm_kern_body.h"
#endif
