/* The int8-weight dot kernel on AVX-512 (gemm_q8.h): 16 weights at a time sign-extended
 * to 32 bits (vpmovsxbd) and converted to float32 (vcvtdq2ps), multiplied into one or two
 * accumulators per (row, vector) (vfmadd231ps). Up to four rows share each load of a
 * vector (one or two vectors: a decode GEMV), up to eight vectors each converted row: the
 * two conversions a 16 weights are the kernel's overhead over a float32 one, so the more
 * vectors they serve the better. Two accumulators only where they and the group totals
 * fit the 32 registers with room (4 rows x 2 vectors, or 2 x 4, with two each spilled:
 * 4 x 768 @ W.T took 1.9x the time of 2 x 768 in cache). A group's tail is read with
 * masked loads: no byte past a row is touched. */
#include <stdint.h>

#include "gemm_q8.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define CV_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))
/* Prefetch distance in calls (blocks of rows): a decode step's weights come from memory,
 * which the hardware prefetchers alone streamed at 17 GB/s on Zen 5 (the float32 GEMV,
 * prefetching, at 45). A prefetch past the matrix is harmless. Into L2 (prefetcht1), not
 * non-temporal: on the Intel Xeon VM prefetchnta halved the decode step (7.6 ms against
 * 3.8, bench/precision_int8.txt), the lines it fetches going to L1 alone. */
#define CV_Q8_PF 2

static inline CV_TARGET __m512 widen(__m128i bytes) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes));
}

static inline __attribute__((always_inline)) CV_TARGET void
dots_rv(int64_t k, int64_t group, const int8_t *q, int64_t q_os, const int R, const float *s,
        int64_t s_os, int64_t s_gs, const float *const *x, const int NV, float *out,
        int64_t ld) {
    const int U = R * NV <= 4 ? 2 : 1; /* accumulators per (row, vector) */
    __m512 tot[CV_Q8_ROWS][CV_Q8_VECS];
    for (int r = 0; r < R; r++)
        for (int v = 0; v < NV; v++)
            tot[r][v] = _mm512_setzero_ps();
    for (int64_t p0 = 0, g = 0; p0 < k; p0 += group, g++) {
        int64_t len = k - p0 < group ? k - p0 : group, p = 0;
        __m512 acc[CV_Q8_ROWS][CV_Q8_VECS][2];
        for (int r = 0; r < R; r++)
            for (int v = 0; v < NV; v++)
                acc[r][v][0] = acc[r][v][U - 1] = _mm512_setzero_ps();
        for (; p + 16 * U <= len; p += 16 * U) {
            if (((p0 + p) & 63) == 0) /* the rows CV_Q8_PF calls ahead: from memory */
                for (int r = 0; r < R; r++)
                    __builtin_prefetch(q + (r + CV_Q8_PF * R) * q_os + p0 + p, 0, 2);
            for (int u = 0; u < U; u++) {
                __m512 xv[CV_Q8_VECS];
                for (int v = 0; v < NV; v++) {
                    xv[v] = _mm512_loadu_ps(x[v] + p0 + p + 16 * u);
                    /* in a register: else GCC folds the load into each row's FMA, and 2
                     * rows x 4 vectors made 10 loads a step for 8 FMAs (load-bound) */
                    if (R > 1) __asm__("" : "+v"(xv[v]));
                }
                for (int r = 0; r < R; r++) {
                    __m512 w = widen(
                        _mm_loadu_si128((const __m128i *)(q + r * q_os + p0 + p + 16 * u)));
                    for (int v = 0; v < NV; v++)
                        acc[r][v][u] = _mm512_fmadd_ps(w, xv[v], acc[r][v][u]);
                }
            }
        }
        for (int u = 0; p < len; p += 16, u = (u + 1) % U) {
            __mmask16 mask = len - p >= 16 ? (__mmask16)0xffff
                                           : (__mmask16)((1u << (len - p)) - 1);
            __m512 xv[CV_Q8_VECS];
            for (int v = 0; v < NV; v++)
                xv[v] = _mm512_maskz_loadu_ps(mask, x[v] + p0 + p);
            for (int r = 0; r < R; r++) {
                __m512 w = widen(_mm_maskz_loadu_epi8(mask, q + r * q_os + p0 + p));
                for (int v = 0; v < NV; v++)
                    acc[r][v][u] = _mm512_fmadd_ps(w, xv[v], acc[r][v][u]);
            }
        }
        for (int r = 0; r < R; r++) {
            __m512 scale = _mm512_set1_ps(s[r * s_os + g * s_gs]);
            for (int v = 0; v < NV; v++)
                tot[r][v] = _mm512_fmadd_ps(U == 2 ? _mm512_add_ps(acc[r][v][0], acc[r][v][1])
                                                   : acc[r][v][0],
                                            scale, tot[r][v]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int v = 0; v < NV; v++)
            out[r * ld + v] = _mm512_reduce_add_ps(tot[r][v]);
}

CV_TARGET void cv_q8_dots_avx512(int64_t k, int64_t group, const int8_t *q, int64_t q_os,
                                 int rows, const float *s, int64_t s_os, int64_t s_gs,
                                 const float *const *x, int nv, float *out, int64_t ld) {
#define CV_Q8_CASE(R, NV)                                                                   \
    dots_rv(k, group, q, q_os, R, s, s_os, s_gs, x, NV, out, ld);                           \
    return
    /* constant counts each: the accumulators stay in registers */
    switch (nv * 8 + rows) {
    case 8 + 4: CV_Q8_CASE(4, 1);
    case 8 + 3: CV_Q8_CASE(3, 1);
    case 8 + 2: CV_Q8_CASE(2, 1);
    case 16 + 4: CV_Q8_CASE(4, 2);
    case 16 + 3: CV_Q8_CASE(3, 2);
    case 16 + 2: CV_Q8_CASE(2, 2);
    case 16 + 1: CV_Q8_CASE(1, 2);
    case 24 + 2: CV_Q8_CASE(2, 3);
    case 24 + 1: CV_Q8_CASE(1, 3);
    case 32 + 2: CV_Q8_CASE(2, 4);
    case 32 + 1: CV_Q8_CASE(1, 4);
    case 40 + 1: CV_Q8_CASE(1, 5);
    case 48 + 1: CV_Q8_CASE(1, 6);
    case 56 + 1: CV_Q8_CASE(1, 7);
    case 64 + 1: CV_Q8_CASE(1, 8);
    default: CV_Q8_CASE(1, 1);
    }
#undef CV_Q8_CASE
}

#else
void cv_q8_dots_avx512(int64_t k, int64_t group, const int8_t *q, int64_t q_os, int rows,
                       const float *s, int64_t s_os, int64_t s_gs, const float *const *x,
                       int nv, float *out, int64_t ld) {
    (void)k, (void)group, (void)q, (void)q_os, (void)rows, (void)s, (void)s_os, (void)s_gs;
    (void)x, (void)nv, (void)out, (void)ld;
}
#endif
