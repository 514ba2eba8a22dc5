#include <cooperative_groups.h>
#include "cuvil_aot/cuda_gemm.h"
typedef struct {
    int64_t n[1];
    char *p[3];
    int64_t s[3][1];
} f0_s0_g0_args;
template <class I> static __device__ __forceinline__ void f0_s0_g0_strided(const f0_s0_g0_args *a) {
    const float *__restrict__ p0 = (const float *)a->p[0];
    const I s0_0 = (I)a->s[0][0];
    const float *__restrict__ p1 = (const float *)a->p[1];
    const I s1_0 = (I)a->s[1][0];
    float *__restrict__ p2 = (float *)a->p[2];
    const I s2_0 = (I)a->s[2][0];
    const I n0 = (I)a->n[0]; (void)n0;
    const I total = n0;
    const I step = (I)(gridDim.x * blockDim.x);
    for (I t = (I)(blockIdx.x * blockDim.x + threadIdx.x); t < total; t += step) {
        I rem = t;
        const I i0 = rem;
        (void)i0;
        const float v0 = p0[i0 * s0_0];
        const float v1 = (v0 * ((float)0.5));
        const float v2 = p1[i0 * s1_0];
        const float v3 = (v1 + v2);
        const float v4 = tanhf(v3);
        const float v5 = (-v2);
        const float v6 = expf(v5);
        const float v7 = (((float)1.0) + v6);
        const float v8 = (((float)1.0) / v7);
        const float v9 = (v4 * v8);
        const float v10 = fabsf(v0);
        const float v11 = (v10 * ((float)0.25));
        const float v12 = (v9 - v11);
        p2[i0 * s2_0] = (float)(v12);
    }
}
extern "C" __global__ void __launch_bounds__(256) f0_s0_g0_s32(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    f0_s0_g0_strided<int32_t>(a);
}
extern "C" __global__ void __launch_bounds__(256) f0_s0_g0_s64(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    f0_s0_g0_strided<int64_t>(a);
}
extern "C" __global__ void __launch_bounds__(256) f0_s0_g0_flat(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    const float *__restrict__ p0 = (const float *)a->p[0];
    const float *__restrict__ p1 = (const float *)a->p[1];
    float *__restrict__ p2 = (float *)a->p[2];
    const int64_t n0 = (int64_t)a->n[0]; (void)n0;
    const int64_t total = n0;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int64_t q = first; q < total / 4; q += step) {
        const int64_t t = q * 4;
        const cv_vec<float, 4> L0 = *reinterpret_cast<const cv_vec<float, 4> *>(p0 + t);
        const cv_vec<float, 4> L1 = *reinterpret_cast<const cv_vec<float, 4> *>(p1 + t);
        cv_vec<float, 4> S2;
         {
            const float v0 = L0.v[0];
            const float v1 = (v0 * ((float)0.5));
            const float v2 = L1.v[0];
            const float v3 = (v1 + v2);
            const float v4 = tanhf(v3);
            const float v5 = (-v2);
            const float v6 = expf(v5);
            const float v7 = (((float)1.0) + v6);
            const float v8 = (((float)1.0) / v7);
            const float v9 = (v4 * v8);
            const float v10 = fabsf(v0);
            const float v11 = (v10 * ((float)0.25));
            const float v12 = (v9 - v11);
            S2.v[0] = (float)(v12);
        }
         {
            const float v0 = L0.v[1];
            const float v1 = (v0 * ((float)0.5));
            const float v2 = L1.v[1];
            const float v3 = (v1 + v2);
            const float v4 = tanhf(v3);
            const float v5 = (-v2);
            const float v6 = expf(v5);
            const float v7 = (((float)1.0) + v6);
            const float v8 = (((float)1.0) / v7);
            const float v9 = (v4 * v8);
            const float v10 = fabsf(v0);
            const float v11 = (v10 * ((float)0.25));
            const float v12 = (v9 - v11);
            S2.v[1] = (float)(v12);
        }
         {
            const float v0 = L0.v[2];
            const float v1 = (v0 * ((float)0.5));
            const float v2 = L1.v[2];
            const float v3 = (v1 + v2);
            const float v4 = tanhf(v3);
            const float v5 = (-v2);
            const float v6 = expf(v5);
            const float v7 = (((float)1.0) + v6);
            const float v8 = (((float)1.0) / v7);
            const float v9 = (v4 * v8);
            const float v10 = fabsf(v0);
            const float v11 = (v10 * ((float)0.25));
            const float v12 = (v9 - v11);
            S2.v[2] = (float)(v12);
        }
         {
            const float v0 = L0.v[3];
            const float v1 = (v0 * ((float)0.5));
            const float v2 = L1.v[3];
            const float v3 = (v1 + v2);
            const float v4 = tanhf(v3);
            const float v5 = (-v2);
            const float v6 = expf(v5);
            const float v7 = (((float)1.0) + v6);
            const float v8 = (((float)1.0) / v7);
            const float v9 = (v4 * v8);
            const float v10 = fabsf(v0);
            const float v11 = (v10 * ((float)0.25));
            const float v12 = (v9 - v11);
            S2.v[3] = (float)(v12);
        }
        *reinterpret_cast<cv_vec<float, 4> *>(p2 + t) = S2;
    }
    for (int64_t t = total / 4 * 4 + first; t < total; t += step) {
        const float v0 = p0[t];
        const float v1 = (v0 * ((float)0.5));
        const float v2 = p1[t];
        const float v3 = (v1 + v2);
        const float v4 = tanhf(v3);
        const float v5 = (-v2);
        const float v6 = expf(v5);
        const float v7 = (((float)1.0) + v6);
        const float v8 = (((float)1.0) / v7);
        const float v9 = (v4 * v8);
        const float v10 = fabsf(v0);
        const float v11 = (v10 * ((float)0.25));
        const float v12 = (v9 - v11);
        p2[t] = (float)(v12);
    }
}
