/* The int8-weight GEMM's dot kernel contract, shared by its driver (gemm_q8.c) and the
 * AVX-512 kernel (gemm_q8_avx512.c).
 *
 * dots: for r < rows and v < nv (rows * nv at most CV_Q8_NV, rows at most CV_Q8_ROWS, nv
 * at most CV_Q8_VECS),
 * out[r * ld + v] = sum over groups g of s[r * s_os + g * s_gs] * sum over p in
 * [g * group, min((g + 1) * group, k)) of q[r * q_os + p] * x[v][p]: rows of int8 weights
 * (contiguous along k) against float32 vectors (contiguous), each weight read once for
 * all vectors and each vector element once for all rows, the weights converted to
 * float32 in registers, each group's sum in float32 scaled by its scale. */
#ifndef CUVIL_AOT_GEMM_Q8_H
#define CUVIL_AOT_GEMM_Q8_H

#include <stdint.h>

#define CV_Q8_NV 8   /* rows x vectors per dots call */
#define CV_Q8_ROWS 4 /* rows per call */
#define CV_Q8_VECS 8 /* vectors per call */

typedef void (*cv_q8_dots)(int64_t k, int64_t group, const int8_t *q, int64_t q_os, int rows,
                           const float *s, int64_t s_os, int64_t s_gs, const float *const *x,
                           int nv, float *out, int64_t ld);

void cv_q8_dots_avx512(int64_t k, int64_t group, const int8_t *q, int64_t q_os, int rows,
                       const float *s, int64_t s_os, int64_t s_gs, const float *const *x,
                       int nv, float *out, int64_t ld);

#endif
