/* The int8-weight dot kernel on AVX-512 (gemm_q8.h): 16 weights at a time sign-extended
 * to 32 bits (vpmovsxbd) and converted to float32 (vcvtdq2ps), multiplied into one
 * accumulator per vector and 16 lanes (vfmadd231ps); four such blocks per step (64 bytes
 * of weights) keep four independent chains per vector. A group's tail is read with masked
 * loads, so no byte past the row is touched. */
#include <stdint.h>

#include "gemm_q8.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define CV_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))

static inline CV_TARGET __m512 widen(__m128i bytes) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes));
}

static inline __attribute__((always_inline)) CV_TARGET void
dots_nv(int64_t k, int64_t group, const int8_t *q, const float *s, int64_t s_gs,
        const float *const *x, const int nv, float *out) {
    __m512 tot[CV_Q8_NV];
    for (int v = 0; v < nv; v++)
        tot[v] = _mm512_setzero_ps();
    for (int64_t p0 = 0, g = 0; p0 < k; p0 += group, g++) {
        int64_t len = k - p0 < group ? k - p0 : group, p = 0;
        __m512 acc[CV_Q8_NV][4];
        for (int v = 0; v < nv; v++)
            acc[v][0] = acc[v][1] = acc[v][2] = acc[v][3] = _mm512_setzero_ps();
        const int8_t *qg = q + p0;
        for (; p + 64 <= len; p += 64) {
            __m512 w[4];
            for (int u = 0; u < 4; u++)
                w[u] = widen(_mm_loadu_si128((const __m128i *)(qg + p + 16 * u)));
            for (int v = 0; v < nv; v++)
                for (int u = 0; u < 4; u++)
                    acc[v][u] = _mm512_fmadd_ps(w[u], _mm512_loadu_ps(x[v] + p0 + p + 16 * u),
                                                acc[v][u]);
        }
        for (int u = 0; p < len; p += 16, u++) {
            __mmask16 mask = len - p >= 16 ? (__mmask16)0xffff
                                           : (__mmask16)((1u << (len - p)) - 1);
            __m512 w = widen(_mm_maskz_loadu_epi8(mask, qg + p));
            for (int v = 0; v < nv; v++)
                acc[v][u] = _mm512_fmadd_ps(w, _mm512_maskz_loadu_ps(mask, x[v] + p0 + p),
                                            acc[v][u]);
        }
        __m512 scale = _mm512_set1_ps(s[g * s_gs]);
        for (int v = 0; v < nv; v++) {
            __m512 sum = _mm512_add_ps(_mm512_add_ps(acc[v][0], acc[v][1]),
                                       _mm512_add_ps(acc[v][2], acc[v][3]));
            tot[v] = _mm512_fmadd_ps(sum, scale, tot[v]);
        }
    }
    for (int v = 0; v < nv; v++)
        out[v] = _mm512_reduce_add_ps(tot[v]);
}

CV_TARGET void cv_q8_dots_avx512(int64_t k, int64_t group, const int8_t *q, const float *s,
                                 int64_t s_gs, const float *const *x, int nv, float *out) {
    switch (nv) { /* a constant count each: the accumulators stay in registers */
    case 1: dots_nv(k, group, q, s, s_gs, x, 1, out); break;
    case 2: dots_nv(k, group, q, s, s_gs, x, 2, out); break;
    case 3: dots_nv(k, group, q, s, s_gs, x, 3, out); break;
    default: dots_nv(k, group, q, s, s_gs, x, 4, out); break;
    }
}

#else
void cv_q8_dots_avx512(int64_t k, int64_t group, const int8_t *q, const float *s,
                       int64_t s_gs, const float *const *x, int nv, float *out) {
    (void)k, (void)group, (void)q, (void)s, (void)s_gs, (void)x, (void)nv, (void)out;
}
#endif
