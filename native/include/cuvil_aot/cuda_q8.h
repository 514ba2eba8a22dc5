/* Int8 weights on the GPU, a first step: the weight is dequantized into scratch memory of
 * the call (w[o * k + p] = q[o, p] * s[o, p / group], as gemm_q8 on the CPU reads it),
 * then multiplied by the float32 GEMM. Included by a unit whose GEMMs read int8 weights
 * (codegen/gpu_plan.py) and, for the argument struct, by the wrappers (gpu_wrap.h). */
#ifndef CUVIL_AOT_CUDA_Q8_H
#define CUVIL_AOT_CUDA_Q8_H

#include <stdint.h>

/* The same text in C and C++: pointers and int64_t, one layout. */
typedef struct {
    const int8_t *q;
    const float *s;
    float *w;
    int64_t out, k, group, q_os, q_ps, s_os, s_gs;
} cv_dequant_q8_args;

#define CV_DEQUANT_Q8_BLOCK 256

#ifdef __CUDACC__
extern "C" __global__ void __launch_bounds__(CV_DEQUANT_Q8_BLOCK)
    cv_dequant_q8(const __grid_constant__ cv_dequant_q8_args a) {
    const int64_t total = a.out * a.k;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t o = i / a.k, p = i - o * a.k;
        a.w[i] = (float)a.q[o * a.q_os + p * a.q_ps] * a.s[o * a.s_os + p / a.group * a.s_gs];
    }
}
#endif

#endif
