/* The bfloat16 GEMM's micro-kernel on AVX-512 BF16 (gemm_bf16.h): vdpbf16ps multiplies
 * a pair of bfloat16 per float32 lane and adds both products to the lane, 32
 * multiply-adds per instruction where vfmadd231ps does 16. It treats denormal inputs and
 * results as zero (DAZ/FTZ) and rounds to nearest even, as Intel's and AMD's manuals say:
 * only magnitudes below 2^-126 are affected. */
#include <stddef.h>
#include <stdint.h>

#include "gemm_bf16.h"

#define MR 12 /* rows of a register tile: 12 x 2 accumulators, as gemm_avx512.c */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define CV_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

static int usable(void) {
    static int ok = -1; /* checked once: the CPU does not change under us */
    if (ok < 0) {
        __builtin_cpu_init();
        ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
    }
    return ok;
}

/* The A panel q-major (ku = 1): a(q, i) at q * MR + i, broadcast to every lane. */
CV_TARGET static void kern(int64_t kq, const uint32_t *a, const uint32_t *b, float *c,
                           int64_t ldc, int accumulate) {
    __m512 lo[MR], hi[MR];
    for (int i = 0; i < MR; i++)
        lo[i] = hi[i] = _mm512_setzero_ps();
    for (int64_t q = 0; q < kq; q++) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + q * CV_BF16_NR);
        const __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + q * CV_BF16_NR + 16);
        const uint32_t *ap = a + q * MR;
        for (int i = 0; i < MR; i++) {
            const __m512bh ai = (__m512bh)_mm512_set1_epi32((int)ap[i]);
            lo[i] = _mm512_dpbf16_ps(lo[i], ai, b0);
            hi[i] = _mm512_dpbf16_ps(hi[i], ai, b1);
        }
    }
    for (int i = 0; i < MR; i++) {
        float *row = c + i * ldc;
        if (accumulate) {
            lo[i] = _mm512_add_ps(lo[i], _mm512_loadu_ps(row));
            hi[i] = _mm512_add_ps(hi[i], _mm512_loadu_ps(row + 16));
        }
        _mm512_storeu_ps(row, lo[i]);
        _mm512_storeu_ps(row + 16, hi[i]);
    }
}

const cv_bf16_kernel cv_bf16_avx512 = {"avx512", kern, MR, 1, usable, NULL, NULL};
#else
static int usable(void) { return 0; }

const cv_bf16_kernel cv_bf16_avx512 = {"avx512", NULL, MR, 1, usable, NULL, NULL};
#endif
