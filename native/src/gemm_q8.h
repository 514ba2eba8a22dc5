/* The int8-weight GEMM's dot kernel contract, shared by its driver (gemm_q8.c) and the
 * AVX-512 kernel (gemm_q8_avx512.c).
 *
 * dots: for v < nv (at most CV_Q8_NV), out[v] = sum over groups g of
 * s[g * s_gs] * sum over p in [g * group, min((g + 1) * group, k)) of q[p] * x[v][p]:
 * one row of int8 weights (contiguous along k) against nv float32 vectors (contiguous),
 * each weight read once for all nv vectors, converted to float32 in registers, the
 * group's sum in float32 scaled by its scale. */
#ifndef CUVIL_AOT_GEMM_Q8_H
#define CUVIL_AOT_GEMM_Q8_H

#include <stdint.h>

#define CV_Q8_NV 4 /* vectors per dots call */

typedef void (*cv_q8_dots)(int64_t k, int64_t group, const int8_t *q, const float *s,
                           int64_t s_gs, const float *const *x, int nv, float *out);

void cv_q8_dots_avx512(int64_t k, int64_t group, const int8_t *q, const float *s,
                       int64_t s_gs, const float *const *x, int nv, float *out);

#endif
