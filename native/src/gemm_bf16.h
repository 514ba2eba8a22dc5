/* The bfloat16 GEMM's micro-kernel contract, shared by its driver (gemm_bf16.c) and the
 * AVX-512 BF16 kernel (gemm_bf16_avx512.c).
 *
 * Panels hold k in pairs, each pair one 32-bit word (the even k in the low half), as
 * vdpbf16ps reads them: word (q, i) of an A panel sits at q * CV_BF16_MR + i, word
 * (q, j) of a B panel at q * CV_BF16_NR + j. Rows, columns and the last pair's odd half
 * past the matrix are zero.
 *
 * kern: c[i * ldc + j] (+)= sum over q < kq, s < 2 of a(q, i)[s] * b(q, j)[s] for
 * i < CV_BF16_MR, j < CV_BF16_NR, in float32 (products of bfloat16 are exact there);
 * accumulate = 0 stores the sums, 1 adds them to c. */
#ifndef CUVIL_AOT_GEMM_BF16_H
#define CUVIL_AOT_GEMM_BF16_H

#include <stdint.h>

#define CV_BF16_MR 12 /* rows of a register tile: 12 x 2 accumulators, as gemm_avx512.c */
#define CV_BF16_NR 32 /* columns: two 16-float vectors */

typedef void (*cv_bf16_kern)(int64_t kq, const uint32_t *a, const uint32_t *b, float *c,
                             int64_t ldc, int accumulate);

/* The AVX-512 BF16 kernel; cv_bf16_avx512_usable: the CPU has avx512bf16 and the OS
 * saves ZMM state (checked once). */
void cv_bf16_kern_avx512(int64_t kq, const uint32_t *a, const uint32_t *b, float *c,
                         int64_t ldc, int accumulate);
int cv_bf16_avx512_usable(void);

#endif
