/* The bfloat16 GEMM's micro-kernel on AVX-512 BF16 (gemm_bf16.h): vdpbf16ps multiplies
 * a pair of bfloat16 per float32 lane and adds both products to the lane, 32
 * multiply-adds per instruction where vfmadd231ps does 16. It treats denormal inputs and
 * results as zero (DAZ/FTZ) and rounds to nearest even, as Intel's and AMD's manuals say:
 * only magnitudes below 2^-126 are affected. */
#include <stdint.h>
#include <string.h>

#include "gemm_bf16.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define CV_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

int cv_bf16_avx512_usable(void) {
    static int usable = -1; /* checked once: the CPU does not change under us */
    if (usable < 0) {
        __builtin_cpu_init();
        usable = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
    }
    return usable;
}

CV_TARGET void cv_bf16_kern_avx512(int64_t kq, const uint32_t *a, const uint32_t *b, float *c,
                                   int64_t ldc, int accumulate) {
    __m512 lo[CV_BF16_MR], hi[CV_BF16_MR];
    for (int i = 0; i < CV_BF16_MR; i++)
        lo[i] = hi[i] = _mm512_setzero_ps();
    for (int64_t q = 0; q < kq; q++) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + q * CV_BF16_NR);
        const __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + q * CV_BF16_NR + 16);
        const uint32_t *ap = a + q * CV_BF16_MR;
        for (int i = 0; i < CV_BF16_MR; i++) {
            const __m512bh ai = (__m512bh)_mm512_set1_epi32((int)ap[i]);
            lo[i] = _mm512_dpbf16_ps(lo[i], ai, b0);
            hi[i] = _mm512_dpbf16_ps(hi[i], ai, b1);
        }
    }
    for (int i = 0; i < CV_BF16_MR; i++) {
        float *row = c + i * ldc;
        if (accumulate) {
            lo[i] = _mm512_add_ps(lo[i], _mm512_loadu_ps(row));
            hi[i] = _mm512_add_ps(hi[i], _mm512_loadu_ps(row + 16));
        }
        _mm512_storeu_ps(row, lo[i]);
        _mm512_storeu_ps(row + 16, hi[i]);
    }
}
#else
int cv_bf16_avx512_usable(void) { return 0; }

void cv_bf16_kern_avx512(int64_t kq, const uint32_t *a, const uint32_t *b, float *c,
                         int64_t ldc, int accumulate) {
    (void)kq, (void)a, (void)b, (void)c, (void)ldc, (void)accumulate;
}
#endif
