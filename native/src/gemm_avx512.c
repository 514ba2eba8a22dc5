/* GEMM kernels for x86-64-v4 (AVX-512). 32 vector registers: the packed
 * kernel keeps 12 x 2 accumulators (12 x 32 floats, 12 x 16 doubles), which
 * with 2 B vectors and a broadcast runs at the FMA peak from L1/L2 (measured
 * on Zen 5: ~250 GFLOP/s per core in float32). The rows kernel keeps 4 rows
 * x 4 vectors: faster on Zen 5 than 6 x 4, 5 x 4 or 4 x 3. V_KEEP: GCC folds
 * the rows and dots kernels' B loads into every FMA (one 64-byte load per
 * row of A, while Zen 5 does two per cycle); loaded once instead, 2 and 3
 * rows run 15-20% faster (2 x 768 x 3072: 145 -> 122 us on one thread),
 * 1 and 4 rows unchanged. The dots kernel keeps 4 rows x 6 columns in
 * float32: A's rows, from L2 at k = 3072, are read once per 6 columns instead
 * of 4 (Zen 4, two threads, the BERT layer's three x @ w.T shapes at 16 rows
 * in turn: 919 -> 871 us). x86-64 only. */
#if defined(__x86_64__)
#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#include "gemm_kernels.h"

#define CV_TARGET __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma")))
#define V_ALIGN 64
#define ISA avx512
#define MR 12
#define NV 2
#define RMAX 4
#define RV 4
#define DJ 6 /* float32; float64 keeps 4 (unmeasured) */
#define MC 192

/* Lane q of the result: the sum of the 16 lanes of v[q] (pairs of vectors fold
 * into one at each step: 45 instructions against ~130 for 16 separate lane sums;
 * 16 x 768 x 64 from L1: 85% -> 95% of the FMA peak). */
CV_TARGET static inline __attribute__((always_inline)) __m512 sums16_f32(const __m512 *v) {
    __m512 t[8], u[4];
    for (int q = 0; q < 8; q++) /* per 128-bit lane: lanes 0+2, 1+3 of two vectors */
        t[q] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * q], v[2 * q + 1]),
                             _mm512_unpackhi_ps(v[2 * q], v[2 * q + 1]));
    for (int q = 0; q < 4; q++) { /* per 128-bit lane: the 4 lane sums of 4 vectors */
        __m512d x = _mm512_castps_pd(t[2 * q]), y = _mm512_castps_pd(t[2 * q + 1]);
        u[q] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)),
                             _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
    /* across the 128-bit lanes */
    __m512 x01 = _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], 0x88),
                               _mm512_shuffle_f32x4(u[0], u[1], 0xDD));
    __m512 x23 = _mm512_add_ps(_mm512_shuffle_f32x4(u[2], u[3], 0x88),
                               _mm512_shuffle_f32x4(u[2], u[3], 0xDD));
    return _mm512_add_ps(_mm512_shuffle_f32x4(x01, x23, 0x88),
                         _mm512_shuffle_f32x4(x01, x23, 0xDD));
}

/* The same for 8 vectors (lanes 8-15 repeat lanes 0-7). */
CV_TARGET static inline __attribute__((always_inline)) __m512 sums8_f32(const __m512 *v) {
    __m512 t[4], u[2];
    for (int q = 0; q < 4; q++)
        t[q] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * q], v[2 * q + 1]),
                             _mm512_unpackhi_ps(v[2 * q], v[2 * q + 1]));
    for (int q = 0; q < 2; q++) {
        __m512d x = _mm512_castps_pd(t[2 * q]), y = _mm512_castps_pd(t[2 * q + 1]);
        u[q] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)),
                             _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
    __m512 x01 = _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], 0x88),
                               _mm512_shuffle_f32x4(u[0], u[1], 0xDD));
    return _mm512_add_ps(_mm512_shuffle_f32x4(x01, x01, 0x88),
                         _mm512_shuffle_f32x4(x01, x01, 0xDD));
}

/* The 4 x 6 dot products of a dots block, each a vector of partial sums
 * (unused rows zero), summed across lanes: columns 0-3 as one vector (lane
 * 4 i + j: row i, column j), columns 4-5 as another (lane 2 i + j - 4). */
CV_TARGET static inline __attribute__((always_inline)) void
dots_sums_f32(int r, int jn, __m512 acc[4][6], float *c, int64_t ldc, int accumulate) {
    __m512 v[16];
    for (int q = 0; q < 16; q++)
        v[q] = acc[q / 4][q % 4];
    __m512 y = sums16_f32(v);
    __mmask8 mk = (__mmask8)((1u << (jn < 4 ? jn : 4)) - 1);
    __m128 row[4] = {_mm512_castps512_ps128(y), _mm512_extractf32x4_ps(y, 1),
                     _mm512_extractf32x4_ps(y, 2), _mm512_extractf32x4_ps(y, 3)};
    for (int i = 0; i < r; i++) {
        __m128 s = row[i];
        if (accumulate)
            s = _mm_add_ps(s, _mm_maskz_loadu_ps(mk, c + i * ldc));
        _mm_mask_storeu_ps(c + i * ldc, mk, s);
    }
    if (jn <= 4)
        return;
    for (int q = 0; q < 8; q++)
        v[q] = acc[q / 2][4 + q % 2];
    __m512 z = sums8_f32(v);
    __m128 lo = _mm512_castps512_ps128(z), hi = _mm512_extractf32x4_ps(z, 1);
    __m128 two[4] = {lo, _mm_movehl_ps(lo, lo), hi, _mm_movehl_ps(hi, hi)};
    mk = (__mmask8)((1u << (jn - 4)) - 1);
    for (int i = 0; i < r; i++) {
        __m128 s = two[i];
        if (accumulate)
            s = _mm_add_ps(s, _mm_maskz_loadu_ps(mk, c + i * ldc + 4));
        _mm_mask_storeu_ps(c + i * ldc + 4, mk, s);
    }
}

/* ---- float32 ---- */
#define T float
#define TSFX f32
#define V __m512
#define VL 16
#define V_LOAD(p) _mm512_load_ps(p)
#define V_LOADU(p) _mm512_loadu_ps(p)
#define V_LOADU_PART(p, n) _mm512_maskz_loadu_ps((__mmask16)((1u << (n)) - 1), p)
#define V_STOREU_PART(p, v, n) _mm512_mask_storeu_ps(p, (__mmask16)((1u << (n)) - 1), v)
#define V_STOREU(p, v) _mm512_storeu_ps(p, v)
#define V_STORE(p, v) _mm512_store_ps(p, v)
#define V_SET1(x) _mm512_set1_ps(x)
#define V_ZERO() _mm512_setzero_ps()
#define V_ADD(a, b) _mm512_add_ps(a, b)
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_HSUM(v) _mm512_reduce_add_ps(v)
#define V_KEEP(v) __asm__("" : "+v"(v))
#define V_DOTS_SUMS dots_sums_f32
#define NC 256
#define KC 512
#include "gemm_kern_body.h"
#undef NC
#undef KC

/* ---- float64 ---- */
#undef DJ
#define DJ 4
#define T double
#define TSFX f64
#define V __m512d
#define VL 8
#define V_LOAD(p) _mm512_load_pd(p)
#define V_LOADU(p) _mm512_loadu_pd(p)
#define V_LOADU_PART(p, n) _mm512_maskz_loadu_pd((__mmask8)((1u << (n)) - 1), p)
#define V_STOREU_PART(p, v, n) _mm512_mask_storeu_pd(p, (__mmask8)((1u << (n)) - 1), v)
#define V_STOREU(p, v) _mm512_storeu_pd(p, v)
#define V_STORE(p, v) _mm512_store_pd(p, v)
#define V_SET1(x) _mm512_set1_pd(x)
#define V_ZERO() _mm512_setzero_pd()
#define V_ADD(a, b) _mm512_add_pd(a, b)
#define V_FMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define V_HSUM(v) _mm512_reduce_add_pd(v)
#define V_KEEP(v) __asm__("" : "+v"(v))
#define NC 128
#define KC 256
#include "gemm_kern_body.h"
#endif
