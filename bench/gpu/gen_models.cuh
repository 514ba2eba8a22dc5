#include <cooperative_groups.h>
#include "cuvil_aot/cuda_gemm.h"
typedef struct {
    int64_t n[2];
    char *p[2];
    int64_t s[2][2];
    cv_gpu_term t[1];
    int64_t cols;  /* columns per block of the GEMV main loop */
    int64_t vec;  /* 1: the GEMV reads B as float4 */
    int64_t split;  /* > 1: k in chunks, partial sums in part (_ksum adds) */
    char *part;
} f0_s0_g0_args;
typedef struct {
    int64_t n[2];
    char *p[2];
    int64_t s[2][2];
    cv_gpu_term t[2];
    int64_t cols;  /* columns per block of the GEMV main loop */
    int64_t vec;  /* 1: the GEMV reads B as float4 */
    int64_t split;  /* > 1: k in chunks, partial sums in part (_ksum adds) */
    char *part;
} f1_s0_g0_args;
typedef struct {
    int64_t n[2];
    char *p[7];
    int64_t s[7][2];
} f1_s0_g1_args;
typedef struct {
    int64_t n[2];
    char *p[2];
    int64_t s[2][2];
} f2_s0_g0_args;
typedef struct {
    int64_t n[2];
    char *p[4];
    int64_t s[4][2];
    int64_t sym_D;
} f3_s0_g0_args;
typedef struct {
    int64_t n[3];
    char *p[2];
    int64_t s[2][3];
} f4_s0_g0_args;
typedef struct {
    int64_t n[2];
    char *p[2];
    int64_t s[2][2];
    cv_gpu_term t[1];
    int64_t cols;  /* columns per block of the GEMV main loop */
    int64_t vec;  /* 1: the GEMV reads B as float4 */
    int64_t split;  /* > 1: k in chunks, partial sums in part (_ksum adds) */
    char *part;
} f4_s0_g1_args;
typedef struct {
    int64_t n[2];
    char *p[2];
    int64_t s[2][2];
} f4_s0_g2_args;
typedef struct {
    int64_t n[2];
    char *p[4];
    int64_t s[4][2];
} f5_s0_g0_args;
typedef struct {
    int64_t n[2];
    char *p[2];
    int64_t s[2][2];
    cv_gpu_term t[1];
    int64_t cols;  /* columns per block of the GEMV main loop */
    int64_t vec;  /* 1: the GEMV reads B as float4 */
    int64_t split;  /* > 1: k in chunks, partial sums in part (_ksum adds) */
    char *part;
} f5_s0_g1_args;
typedef struct {
    int64_t n[2];
    char *p[3];
    int64_t s[3][2];
    cv_gpu_term t[1];
    int64_t cols;  /* columns per block of the GEMV main loop */
    int64_t vec;  /* 1: the GEMV reads B as float4 */
    int64_t split;  /* > 1: k in chunks, partial sums in part (_ksum adds) */
    char *part;
} f5_s0_g2_args;
typedef struct {
    int64_t n[1];
    char *p[3];
    int64_t s[3][1];
} f6_s0_g0_args;
struct f0_s0_g0_epi {
    const f0_s0_g0_args *a;
    __device__ __forceinline__ void operator()(int64_t, int64_t i0, int64_t i1, float acc) const {
        const float *__restrict__ p0 = (const float *)a->p[0];
        const int64_t s0_1 = (int64_t)a->s[0][1];
        float *__restrict__ p1 = (float *)a->p[1];
        const int64_t s1_0 = (int64_t)a->s[1][0];
        const int64_t s1_1 = (int64_t)a->s[1][1];
        const float v0 = p0[i1 * s0_1];
        const float v1 = (acc + v0);
        const float v2 = cv_maximumf(((float)0.0), v1);
        p1[i0 * s1_0 + i1 * s1_1] = (float)(v2);
    }
};
extern "C" __global__ void __launch_bounds__(256) f0_s0_g0_tiled(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    cv_gemm_tiled<float, 128>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f0_s0_g0_epi{a});
}
extern "C" __global__ void __launch_bounds__(256) f0_s0_g0_tiled64(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    cv_gemm_tiled<float, 64>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f0_s0_g0_epi{a});
}
extern "C" __global__ void __launch_bounds__(1024) f0_s0_g0_gemv1(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    cv_gemv<float, 1>(a->t, 1, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f0_s0_g0_epi{a});
}
extern "C" __global__ void __launch_bounds__(1024) f0_s0_g0_gemv4(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    cv_gemv<float, 4>(a->t, 1, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f0_s0_g0_epi{a});
}
extern "C" __global__ void __launch_bounds__(256) f0_s0_g0_ksum(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    cv_gemm_ksum<float>(reinterpret_cast<const float *>(a->part), (int)a->split, a->n[0], a->n[1], 1, f0_s0_g0_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f0_s0_g0_tc(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    cv_gemm_tc<false, 128>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f0_s0_g0_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f0_s0_g0_tct(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    cv_gemm_tc<true, 128>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f0_s0_g0_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f0_s0_g0_tc64(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    cv_gemm_tc<false, 64>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f0_s0_g0_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f0_s0_g0_tct64(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    cv_gemm_tc<true, 64>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f0_s0_g0_epi{a});
}
struct f1_s0_g0_epi {
    const f1_s0_g0_args *a;
    __device__ __forceinline__ void operator()(int64_t, int64_t i0, int64_t i1, float acc) const {
        const float *__restrict__ p0 = (const float *)a->p[0];
        const int64_t s0_1 = (int64_t)a->s[0][1];
        float *__restrict__ p1 = (float *)a->p[1];
        const int64_t s1_0 = (int64_t)a->s[1][0];
        const int64_t s1_1 = (int64_t)a->s[1][1];
        const float v0 = p0[i1 * s0_1];
        const float v1 = (acc + v0);
        p1[i0 * s1_0 + i1 * s1_1] = (float)(v1);
    }
};
extern "C" __global__ void __launch_bounds__(256) f1_s0_g0_tiled(const __grid_constant__ f1_s0_g0_args a_) {
    const f1_s0_g0_args *a = &a_;
    cv_gemm_tiled<float, 128>(a->t, 2, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f1_s0_g0_epi{a});
}
extern "C" __global__ void __launch_bounds__(256) f1_s0_g0_tiled64(const __grid_constant__ f1_s0_g0_args a_) {
    const f1_s0_g0_args *a = &a_;
    cv_gemm_tiled<float, 64>(a->t, 2, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f1_s0_g0_epi{a});
}
extern "C" __global__ void __launch_bounds__(1024) f1_s0_g0_gemv1(const __grid_constant__ f1_s0_g0_args a_) {
    const f1_s0_g0_args *a = &a_;
    cv_gemv<float, 1>(a->t, 2, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f1_s0_g0_epi{a});
}
extern "C" __global__ void __launch_bounds__(1024) f1_s0_g0_gemv4(const __grid_constant__ f1_s0_g0_args a_) {
    const f1_s0_g0_args *a = &a_;
    cv_gemv<float, 4>(a->t, 2, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f1_s0_g0_epi{a});
}
extern "C" __global__ void __launch_bounds__(256) f1_s0_g0_ksum(const __grid_constant__ f1_s0_g0_args a_) {
    const f1_s0_g0_args *a = &a_;
    cv_gemm_ksum<float>(reinterpret_cast<const float *>(a->part), (int)a->split, a->n[0], a->n[1], 1, f1_s0_g0_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f1_s0_g0_tc(const __grid_constant__ f1_s0_g0_args a_) {
    const f1_s0_g0_args *a = &a_;
    cv_gemm_tc<false, 128>(a->t, 2, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f1_s0_g0_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f1_s0_g0_tct(const __grid_constant__ f1_s0_g0_args a_) {
    const f1_s0_g0_args *a = &a_;
    cv_gemm_tc<true, 128>(a->t, 2, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f1_s0_g0_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f1_s0_g0_tc64(const __grid_constant__ f1_s0_g0_args a_) {
    const f1_s0_g0_args *a = &a_;
    cv_gemm_tc<false, 64>(a->t, 2, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f1_s0_g0_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f1_s0_g0_tct64(const __grid_constant__ f1_s0_g0_args a_) {
    const f1_s0_g0_args *a = &a_;
    cv_gemm_tc<true, 64>(a->t, 2, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f1_s0_g0_epi{a});
}
template <class I> static __device__ __forceinline__ void f1_s0_g1_span(const f1_s0_g1_args *a, I first, I end, I step) {
    const float *__restrict__ p0 = (const float *)a->p[0];
    const I s0_0 = (I)a->s[0][0];
    const I s0_1 = (I)a->s[0][1];
    const float *__restrict__ p1 = (const float *)a->p[1];
    const I s1_0 = (I)a->s[1][0];
    const I s1_1 = (I)a->s[1][1];
    const float *__restrict__ p2 = (const float *)a->p[2];
    const I s2_0 = (I)a->s[2][0];
    const I s2_1 = (I)a->s[2][1];
    const float *__restrict__ p3 = (const float *)a->p[3];
    const I s3_0 = (I)a->s[3][0];
    const I s3_1 = (I)a->s[3][1];
    float *__restrict__ p4 = (float *)a->p[4];
    const I s4_0 = (I)a->s[4][0];
    const I s4_1 = (I)a->s[4][1];
    const float *__restrict__ p5 = (const float *)a->p[5];
    const I s5_0 = (I)a->s[5][0];
    const I s5_1 = (I)a->s[5][1];
    float *__restrict__ p6 = (float *)a->p[6];
    const I s6_0 = (I)a->s[6][0];
    const I s6_1 = (I)a->s[6][1];
    const I n0 = (I)a->n[0]; (void)n0;
    const I n1 = (I)a->n[1]; (void)n1;
    for (I t = first; t < end; t += step) {
        I rem = t;
        const I i1 = rem % n1; rem /= n1;
        const I i0 = rem;
        (void)i0; (void)i1;
        const float v0 = p0[i0 * s0_0 + i1 * s0_1];
        const float v1 = (-v0);
        const float v2 = expf(v1);
        const float v3 = (((float)1.0) + v2);
        const float v4 = (((float)1.0) / v3);
        const float v5 = p1[i0 * s1_0 + i1 * s1_1];
        const float v6 = (v4 * v5);
        const float v7 = p2[i0 * s2_0 + i1 * s2_1];
        const float v8 = (-v7);
        const float v9 = expf(v8);
        const float v10 = (((float)1.0) + v9);
        const float v11 = (((float)1.0) / v10);
        const float v12 = p3[i0 * s3_0 + i1 * s3_1];
        const float v13 = tanhf(v12);
        const float v14 = (v11 * v13);
        const float v15 = (v6 + v14);
        p4[i0 * s4_0 + i1 * s4_1] = (float)(v15);
        const float v16 = p5[i0 * s5_0 + i1 * s5_1];
        const float v17 = (-v16);
        const float v18 = expf(v17);
        const float v19 = (((float)1.0) + v18);
        const float v20 = (((float)1.0) / v19);
        const float v21 = tanhf(v15);
        const float v22 = (v20 * v21);
        p6[i0 * s6_0 + i1 * s6_1] = (float)(v22);
    }
}
template <class I> static __device__ __forceinline__ void f1_s0_g1_strided(const f1_s0_g1_args *a) {
    f1_s0_g1_span<I>(a, (I)(blockIdx.x * blockDim.x + threadIdx.x), (I)a->n[0] * (I)a->n[1], (I)(gridDim.x * blockDim.x));
}
extern "C" __global__ void __launch_bounds__(256) f1_s0_g1_s32(const __grid_constant__ f1_s0_g1_args a_) {
    const f1_s0_g1_args *a = &a_;
    f1_s0_g1_strided<int32_t>(a);
}
extern "C" __global__ void __launch_bounds__(256) f1_s0_g1_s64(const __grid_constant__ f1_s0_g1_args a_) {
    const f1_s0_g1_args *a = &a_;
    f1_s0_g1_strided<int64_t>(a);
}
extern "C" __global__ void __launch_bounds__(256) f1_s0_g1_flat(const __grid_constant__ f1_s0_g1_args a_) {
    const f1_s0_g1_args *a = &a_;
    const float *__restrict__ p0 = (const float *)a->p[0];
    const float *__restrict__ p1 = (const float *)a->p[1];
    const float *__restrict__ p2 = (const float *)a->p[2];
    const float *__restrict__ p3 = (const float *)a->p[3];
    float *__restrict__ p4 = (float *)a->p[4];
    const float *__restrict__ p5 = (const float *)a->p[5];
    float *__restrict__ p6 = (float *)a->p[6];
    const int64_t n0 = (int64_t)a->n[0]; (void)n0;
    const int64_t n1 = (int64_t)a->n[1]; (void)n1;
    const int64_t total = n0 * n1;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int64_t q = first; q < total / 4; q += step) {
        const int64_t t = q * 4;
        const cv_vec<float, 4> L0 = *reinterpret_cast<const cv_vec<float, 4> *>(p0 + t);
        const cv_vec<float, 4> L1 = *reinterpret_cast<const cv_vec<float, 4> *>(p1 + t);
        const cv_vec<float, 4> L2 = *reinterpret_cast<const cv_vec<float, 4> *>(p2 + t);
        const cv_vec<float, 4> L3 = *reinterpret_cast<const cv_vec<float, 4> *>(p3 + t);
        cv_vec<float, 4> S4;
        const cv_vec<float, 4> L5 = *reinterpret_cast<const cv_vec<float, 4> *>(p5 + t);
        cv_vec<float, 4> S6;
         {
            const float v0 = L0.v[0];
            const float v1 = (-v0);
            const float v2 = expf(v1);
            const float v3 = (((float)1.0) + v2);
            const float v4 = (((float)1.0) / v3);
            const float v5 = L1.v[0];
            const float v6 = (v4 * v5);
            const float v7 = L2.v[0];
            const float v8 = (-v7);
            const float v9 = expf(v8);
            const float v10 = (((float)1.0) + v9);
            const float v11 = (((float)1.0) / v10);
            const float v12 = L3.v[0];
            const float v13 = tanhf(v12);
            const float v14 = (v11 * v13);
            const float v15 = (v6 + v14);
            S4.v[0] = (float)(v15);
            const float v16 = L5.v[0];
            const float v17 = (-v16);
            const float v18 = expf(v17);
            const float v19 = (((float)1.0) + v18);
            const float v20 = (((float)1.0) / v19);
            const float v21 = tanhf(v15);
            const float v22 = (v20 * v21);
            S6.v[0] = (float)(v22);
        }
         {
            const float v0 = L0.v[1];
            const float v1 = (-v0);
            const float v2 = expf(v1);
            const float v3 = (((float)1.0) + v2);
            const float v4 = (((float)1.0) / v3);
            const float v5 = L1.v[1];
            const float v6 = (v4 * v5);
            const float v7 = L2.v[1];
            const float v8 = (-v7);
            const float v9 = expf(v8);
            const float v10 = (((float)1.0) + v9);
            const float v11 = (((float)1.0) / v10);
            const float v12 = L3.v[1];
            const float v13 = tanhf(v12);
            const float v14 = (v11 * v13);
            const float v15 = (v6 + v14);
            S4.v[1] = (float)(v15);
            const float v16 = L5.v[1];
            const float v17 = (-v16);
            const float v18 = expf(v17);
            const float v19 = (((float)1.0) + v18);
            const float v20 = (((float)1.0) / v19);
            const float v21 = tanhf(v15);
            const float v22 = (v20 * v21);
            S6.v[1] = (float)(v22);
        }
         {
            const float v0 = L0.v[2];
            const float v1 = (-v0);
            const float v2 = expf(v1);
            const float v3 = (((float)1.0) + v2);
            const float v4 = (((float)1.0) / v3);
            const float v5 = L1.v[2];
            const float v6 = (v4 * v5);
            const float v7 = L2.v[2];
            const float v8 = (-v7);
            const float v9 = expf(v8);
            const float v10 = (((float)1.0) + v9);
            const float v11 = (((float)1.0) / v10);
            const float v12 = L3.v[2];
            const float v13 = tanhf(v12);
            const float v14 = (v11 * v13);
            const float v15 = (v6 + v14);
            S4.v[2] = (float)(v15);
            const float v16 = L5.v[2];
            const float v17 = (-v16);
            const float v18 = expf(v17);
            const float v19 = (((float)1.0) + v18);
            const float v20 = (((float)1.0) / v19);
            const float v21 = tanhf(v15);
            const float v22 = (v20 * v21);
            S6.v[2] = (float)(v22);
        }
         {
            const float v0 = L0.v[3];
            const float v1 = (-v0);
            const float v2 = expf(v1);
            const float v3 = (((float)1.0) + v2);
            const float v4 = (((float)1.0) / v3);
            const float v5 = L1.v[3];
            const float v6 = (v4 * v5);
            const float v7 = L2.v[3];
            const float v8 = (-v7);
            const float v9 = expf(v8);
            const float v10 = (((float)1.0) + v9);
            const float v11 = (((float)1.0) / v10);
            const float v12 = L3.v[3];
            const float v13 = tanhf(v12);
            const float v14 = (v11 * v13);
            const float v15 = (v6 + v14);
            S4.v[3] = (float)(v15);
            const float v16 = L5.v[3];
            const float v17 = (-v16);
            const float v18 = expf(v17);
            const float v19 = (((float)1.0) + v18);
            const float v20 = (((float)1.0) / v19);
            const float v21 = tanhf(v15);
            const float v22 = (v20 * v21);
            S6.v[3] = (float)(v22);
        }
        *reinterpret_cast<cv_vec<float, 4> *>(p4 + t) = S4;
        *reinterpret_cast<cv_vec<float, 4> *>(p6 + t) = S6;
    }
    for (int64_t t = total / 4 * 4 + first; t < total; t += step) {
        const float v0 = p0[t];
        const float v1 = (-v0);
        const float v2 = expf(v1);
        const float v3 = (((float)1.0) + v2);
        const float v4 = (((float)1.0) / v3);
        const float v5 = p1[t];
        const float v6 = (v4 * v5);
        const float v7 = p2[t];
        const float v8 = (-v7);
        const float v9 = expf(v8);
        const float v10 = (((float)1.0) + v9);
        const float v11 = (((float)1.0) / v10);
        const float v12 = p3[t];
        const float v13 = tanhf(v12);
        const float v14 = (v11 * v13);
        const float v15 = (v6 + v14);
        p4[t] = (float)(v15);
        const float v16 = p5[t];
        const float v17 = (-v16);
        const float v18 = expf(v17);
        const float v19 = (((float)1.0) + v18);
        const float v20 = (((float)1.0) / v19);
        const float v21 = tanhf(v15);
        const float v22 = (v20 * v21);
        p6[t] = (float)(v22);
    }
}
template <class I, int TEAM> static __device__ __forceinline__ void f2_s0_g0_rows(const f2_s0_g0_args *a) {
    const float *__restrict__ p0 = (const float *)a->p[0];
    const I s0_0 = (I)a->s[0][0];
    const I s0_1 = (I)a->s[0][1];
    float *__restrict__ p1 = (float *)a->p[1];
    const I s1_0 = (I)a->s[1][0];
    const I s1_1 = (I)a->s[1][1];
    const I n0 = (I)a->n[0]; (void)n0;
    const I n1 = (I)a->n[1]; (void)n1;
    const I rows = n0, len = n1; (void)len;
    constexpr int LANES = cv_team_in_warp<TEAM> ? TEAM : 0;  /* a team in a warp */
    const I team = TEAM ? (I)TEAM : (I)blockDim.x;
    const I tid = (I)(LANES ? threadIdx.x % LANES : threadIdx.x);
    const I teams = (I)(LANES ? blockDim.x / LANES : 1); (void)team;
    const I first = (I)blockIdx.x * teams + (I)(LANES ? threadIdx.x / LANES : 0);
    for (I row = first; row < rows; row += (I)gridDim.x * teams) {
        I rem = row;
        const I i0 = rem;
        (void)i0;
        float acc0 = -INFINITY;
        for (I j = tid; j < len; j += team) {
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = p0[i0 * s0_0 + i1 * s0_1];
            acc0 = cv_op_max()(acc0, (float)(v0));
        }
        acc0 = cv_team_reduce<TEAM>(acc0, cv_op_max());
        float acc1 = 0;
        for (I j = tid; j < len; j += team) {
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = p0[i0 * s0_0 + i1 * s0_1];
            const float v1 = (v0 - acc0);
            const float v2 = expf(v1);
            acc1 = cv_op_sum()(acc1, (float)(v2));
        }
        acc1 = cv_team_reduce<TEAM>(acc1, cv_op_sum());
        for (I j = tid; j < len; j += team) {
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = p0[i0 * s0_0 + i1 * s0_1];
            const float v1 = (v0 - acc0);
            const float v2 = expf(v1);
            const float v3 = (v2 / acc1);
            p1[i0 * s1_0 + i1 * s1_1] = (float)(v3);
        }
    }
}
template <class I, int TEAM, int R, bool UNIT> static __device__ __forceinline__ void f2_s0_g0_rows_c(const f2_s0_g0_args *a) {
    const float *__restrict__ p0 = (const float *)a->p[0];
    const I s0_0 = (I)a->s[0][0];
    const I s0_1 = UNIT ? (I)1 : (I)a->s[0][1];
    float *__restrict__ p1 = (float *)a->p[1];
    const I s1_0 = (I)a->s[1][0];
    const I s1_1 = UNIT ? (I)1 : (I)a->s[1][1];
    const I n0 = (I)a->n[0]; (void)n0;
    const I n1 = (I)a->n[1]; (void)n1;
    const I rows = n0, len = n1; (void)len;
    constexpr int LANES = cv_team_in_warp<TEAM> ? TEAM : 0;  /* a team in a warp */
    const I team = TEAM ? (I)TEAM : (I)blockDim.x;
    const I tid = (I)(LANES ? threadIdx.x % LANES : threadIdx.x);
    const I teams = (I)(LANES ? blockDim.x / LANES : 1); (void)team;
    const I first = (I)blockIdx.x * teams + (I)(LANES ? threadIdx.x / LANES : 0);
    for (I row = first; row < rows; row += (I)gridDim.x * teams) {
        I rem = row;
        const I i0 = rem;
        (void)i0;
        float cv0[R];
        float cv1[R];
        float cv2[R];
        float cv3[R];
        float cv4[R];
        float acc0 = -INFINITY;
        #pragma unroll
        for (int r = 0; r < R; r++) {
            const I j = tid + (I)r * team;
            const bool in = j < len; (void)in;
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = in ? (float)p0[i0 * s0_0 + i1 * s0_1] : (float)0;
            cv0[r] = v0;
            acc0 = cv_op_max()(acc0, (float)(in ? (float)(v0) : (float)(-INFINITY)));
        }
        acc0 = cv_team_reduce<TEAM>(acc0, cv_op_max());
        float acc1 = 0;
        #pragma unroll
        for (int r = 0; r < R; r++) {
            const I j = tid + (I)r * team;
            const bool in = j < len; (void)in;
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = (cv0[r] - acc0);
            cv1[r] = v0;
            const float v1 = expf(v0);
            cv2[r] = v1;
            acc1 = cv_op_sum()(acc1, (float)(in ? (float)(v1) : (float)(0)));
        }
        acc1 = cv_team_reduce<TEAM>(acc1, cv_op_sum());
        const float rcp0 = (float)1 / acc1;
        const int rok0 = fabsf(acc1) >= 0x1p-126f && fabsf(acc1) <= 0x1p126f;
        if (rok0) {
            #pragma unroll
            for (int r = 0; r < R; r++) {
                const I j = tid + (I)r * team;
                const bool in = j < len; (void)in;
                I rem = j;
                const I i1 = rem;
                (void)i1;
                const float v0 = cv2[r] * rcp0;
                cv3[r] = v0;
                if (in)
                    p1[i0 * s1_0 + i1 * s1_1] = (float)(v0);
            }
        }
        else {
            #pragma unroll
            for (int r = 0; r < R; r++) {
                const I j = tid + (I)r * team;
                const bool in = j < len; (void)in;
                I rem = j;
                const I i1 = rem;
                (void)i1;
                const float v0 = (cv2[r] / acc1);
                cv4[r] = v0;
                if (in)
                    p1[i0 * s1_0 + i1 * s1_1] = (float)(v0);
            }
        }
    }
}
extern "C" __global__ void __launch_bounds__(256) f2_s0_g0_w32(const __grid_constant__ f2_s0_g0_args a_) {
    const f2_s0_g0_args *a = &a_;
    f2_s0_g0_rows<int32_t, 32>(a);
}
extern "C" __global__ void __launch_bounds__(256) f2_s0_g0_w64(const __grid_constant__ f2_s0_g0_args a_) {
    const f2_s0_g0_args *a = &a_;
    f2_s0_g0_rows<int64_t, 32>(a);
}
extern "C" __global__ void __launch_bounds__(256) f2_s0_g0_b32(const __grid_constant__ f2_s0_g0_args a_) {
    const f2_s0_g0_args *a = &a_;
    f2_s0_g0_rows<int32_t, 0>(a);
}
extern "C" __global__ void __launch_bounds__(256) f2_s0_g0_b64(const __grid_constant__ f2_s0_g0_args a_) {
    const f2_s0_g0_args *a = &a_;
    f2_s0_g0_rows<int64_t, 0>(a);
}
extern "C" __global__ void __launch_bounds__(256) f2_s0_g0_q32(const __grid_constant__ f2_s0_g0_args a_) {
    const f2_s0_g0_args *a = &a_;
    f2_s0_g0_rows<int32_t, 8>(a);
}
extern "C" __global__ void __launch_bounds__(256) f2_s0_g0_bc32(const __grid_constant__ f2_s0_g0_args a_) {
    const f2_s0_g0_args *a = &a_;
    f2_s0_g0_rows_c<int32_t, 0, 16, false>(a);
}
extern "C" __global__ void __launch_bounds__(256) f2_s0_g0_bcu32(const __grid_constant__ f2_s0_g0_args a_) {
    const f2_s0_g0_args *a = &a_;
    f2_s0_g0_rows_c<int32_t, 256, 16, true>(a);
}
template <class I, int TEAM> static __device__ __forceinline__ void f3_s0_g0_rows(const f3_s0_g0_args *a) {
    const float *__restrict__ p0 = (const float *)a->p[0];
    const I s0_0 = (I)a->s[0][0];
    const I s0_1 = (I)a->s[0][1];
    const float *__restrict__ p1 = (const float *)a->p[1];
    const I s1_1 = (I)a->s[1][1];
    const float *__restrict__ p2 = (const float *)a->p[2];
    const I s2_1 = (I)a->s[2][1];
    float *__restrict__ p3 = (float *)a->p[3];
    const I s3_0 = (I)a->s[3][0];
    const I s3_1 = (I)a->s[3][1];
    const I n0 = (I)a->n[0]; (void)n0;
    const I n1 = (I)a->n[1]; (void)n1;
    const I rows = n0, len = n1; (void)len;
    constexpr int LANES = cv_team_in_warp<TEAM> ? TEAM : 0;  /* a team in a warp */
    const I team = TEAM ? (I)TEAM : (I)blockDim.x;
    const I tid = (I)(LANES ? threadIdx.x % LANES : threadIdx.x);
    const I teams = (I)(LANES ? blockDim.x / LANES : 1); (void)team;
    const I first = (I)blockIdx.x * teams + (I)(LANES ? threadIdx.x / LANES : 0);
    for (I row = first; row < rows; row += (I)gridDim.x * teams) {
        I rem = row;
        const I i0 = rem;
        (void)i0;
        float acc0 = 0;
        for (I j = tid; j < len; j += team) {
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = p0[i0 * s0_0 + i1 * s0_1];
            acc0 = cv_op_sum()(acc0, (float)(v0));
        }
        acc0 = cv_team_reduce<TEAM>(acc0, cv_op_sum());
        float acc1 = 0;
        for (I j = tid; j < len; j += team) {
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = p0[i0 * s0_0 + i1 * s0_1];
            const float v1 = (acc0 / (float)((a->sym_D)));
            const float v2 = (v0 - v1);
            const float v3 = (v2 * v2);
            acc1 = cv_op_sum()(acc1, (float)(v3));
        }
        acc1 = cv_team_reduce<TEAM>(acc1, cv_op_sum());
        for (I j = tid; j < len; j += team) {
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = p0[i0 * s0_0 + i1 * s0_1];
            const float v1 = (acc0 / (float)((a->sym_D)));
            const float v2 = (v0 - v1);
            const float v3 = (acc1 / (float)((a->sym_D)));
            const float v4 = (v3 + ((float)9.999999747378752e-06));
            const float v5 = sqrtf(v4);
            const float v6 = (v2 / v5);
            const float v7 = p1[i1 * s1_1];
            const float v8 = (v6 * v7);
            const float v9 = p2[i1 * s2_1];
            const float v10 = (v8 + v9);
            p3[i0 * s3_0 + i1 * s3_1] = (float)(v10);
        }
    }
}
template <class I, int TEAM, int R, bool UNIT> static __device__ __forceinline__ void f3_s0_g0_rows_c(const f3_s0_g0_args *a) {
    const float *__restrict__ p0 = (const float *)a->p[0];
    const I s0_0 = (I)a->s[0][0];
    const I s0_1 = UNIT ? (I)1 : (I)a->s[0][1];
    const float *__restrict__ p1 = (const float *)a->p[1];
    const I s1_1 = UNIT ? (I)1 : (I)a->s[1][1];
    const float *__restrict__ p2 = (const float *)a->p[2];
    const I s2_1 = UNIT ? (I)1 : (I)a->s[2][1];
    float *__restrict__ p3 = (float *)a->p[3];
    const I s3_0 = (I)a->s[3][0];
    const I s3_1 = UNIT ? (I)1 : (I)a->s[3][1];
    const I n0 = (I)a->n[0]; (void)n0;
    const I n1 = (I)a->n[1]; (void)n1;
    const I rows = n0, len = n1; (void)len;
    constexpr int LANES = cv_team_in_warp<TEAM> ? TEAM : 0;  /* a team in a warp */
    const I team = TEAM ? (I)TEAM : (I)blockDim.x;
    const I tid = (I)(LANES ? threadIdx.x % LANES : threadIdx.x);
    const I teams = (I)(LANES ? blockDim.x / LANES : 1); (void)team;
    const I first = (I)blockIdx.x * teams + (I)(LANES ? threadIdx.x / LANES : 0);
    for (I row = first; row < rows; row += (I)gridDim.x * teams) {
        I rem = row;
        const I i0 = rem;
        (void)i0;
        float cv0[R];
        float cv1[R];
        float cv2[R];
        float cv3[R];
        float cv4[R];
        float cv5[R];
        float cv6[R];
        float cv7[R];
        float cv8[R];
        float cv9[R];
        float cv10[R];
        float cv11[R];
        float cv12[R];
        float cv13[R];
        float cv14[R];
        float cv15[R];
        float cv16[R];
        float cv17[R];
        float cv18[R];
        float cv19[R];
        float cv20[R];
        float cv21[R];
        float cv22[R];
        float acc0 = 0;
        #pragma unroll
        for (int r = 0; r < R; r++) {
            const I j = tid + (I)r * team;
            const bool in = j < len; (void)in;
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = in ? (float)p0[i0 * s0_0 + i1 * s0_1] : (float)0;
            cv0[r] = v0;
            acc0 = cv_op_sum()(acc0, (float)(in ? (float)(v0) : (float)(0)));
        }
        acc0 = cv_team_reduce<TEAM>(acc0, cv_op_sum());
        float acc1 = 0;
        #pragma unroll
        for (int r = 0; r < R; r++) {
            const I j = tid + (I)r * team;
            const bool in = j < len; (void)in;
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = (acc0 / (float)((a->sym_D)));
            cv1[r] = v0;
            cv2[r] = v0;
            const float v1 = (cv0[r] - v0);
            cv3[r] = v1;
            const float v2 = (v1 * v1);
            cv4[r] = v2;
            acc1 = cv_op_sum()(acc1, (float)(in ? (float)(v2) : (float)(0)));
        }
        acc1 = cv_team_reduce<TEAM>(acc1, cv_op_sum());
        const float r0 = (acc1 / (float)((a->sym_D)));
        const float r1 = (r0 + ((float)9.999999747378752e-06));
        const float r2 = sqrtf(r1);
        const float rcp0 = (float)1 / r2;
        const int rok0 = fabsf(r2) >= 0x1p-126f && fabsf(r2) <= 0x1p126f;
        if (rok0) {
            #pragma unroll
            for (int r = 0; r < R; r++) {
                const I j = tid + (I)r * team;
                const bool in = j < len; (void)in;
                I rem = j;
                const I i1 = rem;
                (void)i1;
                const float v0 = cv3[r] * rcp0;
                cv5[r] = v0;
                const float v1 = in ? (float)p1[i1 * s1_1] : (float)0;
                cv6[r] = v1;
                cv7[r] = v1;
                const float v2 = (v0 * v1);
                cv8[r] = v2;
                const float v3 = in ? (float)p2[i1 * s2_1] : (float)0;
                cv9[r] = v3;
                cv10[r] = v3;
                const float v4 = (v2 + v3);
                cv11[r] = v4;
                if (in)
                    p3[i0 * s3_0 + i1 * s3_1] = (float)(v4);
            }
        }
        else {
            #pragma unroll
            for (int r = 0; r < R; r++) {
                const I j = tid + (I)r * team;
                const bool in = j < len; (void)in;
                I rem = j;
                const I i1 = rem;
                (void)i1;
                const float v0 = (acc1 / (float)((a->sym_D)));
                cv12[r] = v0;
                const float v1 = (v0 + ((float)9.999999747378752e-06));
                cv13[r] = v1;
                const float v2 = sqrtf(v1);
                cv14[r] = v2;
                cv15[r] = v2;
                const float v3 = (cv3[r] / v2);
                cv16[r] = v3;
                const float v4 = in ? (float)p1[i1 * s1_1] : (float)0;
                cv17[r] = v4;
                cv18[r] = v4;
                const float v5 = (v3 * v4);
                cv19[r] = v5;
                const float v6 = in ? (float)p2[i1 * s2_1] : (float)0;
                cv20[r] = v6;
                cv21[r] = v6;
                const float v7 = (v5 + v6);
                cv22[r] = v7;
                if (in)
                    p3[i0 * s3_0 + i1 * s3_1] = (float)(v7);
            }
        }
    }
}
extern "C" __global__ void __launch_bounds__(256) f3_s0_g0_w32(const __grid_constant__ f3_s0_g0_args a_) {
    const f3_s0_g0_args *a = &a_;
    f3_s0_g0_rows<int32_t, 32>(a);
}
extern "C" __global__ void __launch_bounds__(256) f3_s0_g0_w64(const __grid_constant__ f3_s0_g0_args a_) {
    const f3_s0_g0_args *a = &a_;
    f3_s0_g0_rows<int64_t, 32>(a);
}
extern "C" __global__ void __launch_bounds__(256) f3_s0_g0_b32(const __grid_constant__ f3_s0_g0_args a_) {
    const f3_s0_g0_args *a = &a_;
    f3_s0_g0_rows<int32_t, 0>(a);
}
extern "C" __global__ void __launch_bounds__(256) f3_s0_g0_b64(const __grid_constant__ f3_s0_g0_args a_) {
    const f3_s0_g0_args *a = &a_;
    f3_s0_g0_rows<int64_t, 0>(a);
}
extern "C" __global__ void __launch_bounds__(256) f3_s0_g0_q32(const __grid_constant__ f3_s0_g0_args a_) {
    const f3_s0_g0_args *a = &a_;
    f3_s0_g0_rows<int32_t, 8>(a);
}
extern "C" __global__ void __launch_bounds__(256) f3_s0_g0_bc32(const __grid_constant__ f3_s0_g0_args a_) {
    const f3_s0_g0_args *a = &a_;
    f3_s0_g0_rows_c<int32_t, 0, 16, false>(a);
}
extern "C" __global__ void __launch_bounds__(256) f3_s0_g0_bcu32(const __grid_constant__ f3_s0_g0_args a_) {
    const f3_s0_g0_args *a = &a_;
    f3_s0_g0_rows_c<int32_t, 256, 16, true>(a);
}
template <class I, int TEAM> static __device__ __forceinline__ void f4_s0_g0_rows(const f4_s0_g0_args *a) {
    const float *__restrict__ p0 = (const float *)a->p[0];
    const I s0_0 = (I)a->s[0][0];
    const I s0_1 = (I)a->s[0][1];
    const I s0_2 = (I)a->s[0][2];
    float *__restrict__ p1 = (float *)a->p[1];
    const I s1_0 = (I)a->s[1][0];
    const I s1_1 = (I)a->s[1][1];
    const I n0 = (I)a->n[0]; (void)n0;
    const I n1 = (I)a->n[1]; (void)n1;
    const I n2 = (I)a->n[2]; (void)n2;
    const I rows = n0 * n1, len = n2; (void)len;
    constexpr int LANES = cv_team_in_warp<TEAM> ? TEAM : 0;  /* a team in a warp */
    const I team = TEAM ? (I)TEAM : (I)blockDim.x;
    const I tid = (I)(LANES ? threadIdx.x % LANES : threadIdx.x);
    const I teams = (I)(LANES ? blockDim.x / LANES : 1); (void)team;
    const I first = (I)blockIdx.x * teams + (I)(LANES ? threadIdx.x / LANES : 0);
    for (I row = first; row < rows; row += (I)gridDim.x * teams) {
        I rem = row;
        const I i1 = rem % n1; rem /= n1;
        const I i0 = rem;
        (void)i0; (void)i1;
        float acc0 = 0;
        for (I j = tid; j < len; j += team) {
            I rem = j;
            const I i2 = rem;
            (void)i2;
            const float v0 = p0[i0 * s0_0 + i1 * s0_1 + i2 * s0_2];
            acc0 = cv_op_sum()(acc0, (float)(v0));
        }
        acc0 = cv_team_reduce<TEAM>(acc0, cv_op_sum());
        if (tid == 0) {
            const float v0 = (acc0 / ((float)49.0));
            p1[i0 * s1_0 + i1 * s1_1] = (float)(v0);
        }
    }
}
template <class I, int TEAM, int R, bool UNIT> static __device__ __forceinline__ void f4_s0_g0_rows_c(const f4_s0_g0_args *a) {
    const float *__restrict__ p0 = (const float *)a->p[0];
    const I s0_0 = (I)a->s[0][0];
    const I s0_1 = (I)a->s[0][1];
    const I s0_2 = UNIT ? (I)1 : (I)a->s[0][2];
    float *__restrict__ p1 = (float *)a->p[1];
    const I s1_0 = (I)a->s[1][0];
    const I s1_1 = (I)a->s[1][1];
    const I n0 = (I)a->n[0]; (void)n0;
    const I n1 = (I)a->n[1]; (void)n1;
    const I n2 = (I)a->n[2]; (void)n2;
    const I rows = n0 * n1, len = n2; (void)len;
    constexpr int LANES = cv_team_in_warp<TEAM> ? TEAM : 0;  /* a team in a warp */
    const I team = TEAM ? (I)TEAM : (I)blockDim.x;
    const I tid = (I)(LANES ? threadIdx.x % LANES : threadIdx.x);
    const I teams = (I)(LANES ? blockDim.x / LANES : 1); (void)team;
    const I first = (I)blockIdx.x * teams + (I)(LANES ? threadIdx.x / LANES : 0);
    for (I row = first; row < rows; row += (I)gridDim.x * teams) {
        I rem = row;
        const I i1 = rem % n1; rem /= n1;
        const I i0 = rem;
        (void)i0; (void)i1;
        float cv0[R];
        float acc0 = 0;
        #pragma unroll
        for (int r = 0; r < R; r++) {
            const I j = tid + (I)r * team;
            const bool in = j < len; (void)in;
            I rem = j;
            const I i2 = rem;
            (void)i2;
            const float v0 = in ? (float)p0[i0 * s0_0 + i1 * s0_1 + i2 * s0_2] : (float)0;
            cv0[r] = v0;
            acc0 = cv_op_sum()(acc0, (float)(in ? (float)(v0) : (float)(0)));
        }
        acc0 = cv_team_reduce<TEAM>(acc0, cv_op_sum());
        if (tid == 0) {
            const float v0 = (acc0 / ((float)49.0));
            p1[i0 * s1_0 + i1 * s1_1] = (float)(v0);
        }
    }
}
extern "C" __global__ void __launch_bounds__(256) f4_s0_g0_w32(const __grid_constant__ f4_s0_g0_args a_) {
    const f4_s0_g0_args *a = &a_;
    f4_s0_g0_rows<int32_t, 32>(a);
}
extern "C" __global__ void __launch_bounds__(256) f4_s0_g0_w64(const __grid_constant__ f4_s0_g0_args a_) {
    const f4_s0_g0_args *a = &a_;
    f4_s0_g0_rows<int64_t, 32>(a);
}
extern "C" __global__ void __launch_bounds__(256) f4_s0_g0_b32(const __grid_constant__ f4_s0_g0_args a_) {
    const f4_s0_g0_args *a = &a_;
    f4_s0_g0_rows<int32_t, 0>(a);
}
extern "C" __global__ void __launch_bounds__(256) f4_s0_g0_b64(const __grid_constant__ f4_s0_g0_args a_) {
    const f4_s0_g0_args *a = &a_;
    f4_s0_g0_rows<int64_t, 0>(a);
}
extern "C" __global__ void __launch_bounds__(256) f4_s0_g0_q32(const __grid_constant__ f4_s0_g0_args a_) {
    const f4_s0_g0_args *a = &a_;
    f4_s0_g0_rows<int32_t, 8>(a);
}
extern "C" __global__ void __launch_bounds__(256) f4_s0_g0_bc32(const __grid_constant__ f4_s0_g0_args a_) {
    const f4_s0_g0_args *a = &a_;
    f4_s0_g0_rows_c<int32_t, 0, 16, false>(a);
}
extern "C" __global__ void __launch_bounds__(256) f4_s0_g0_bcu32(const __grid_constant__ f4_s0_g0_args a_) {
    const f4_s0_g0_args *a = &a_;
    f4_s0_g0_rows_c<int32_t, 256, 16, true>(a);
}
struct f4_s0_g1_epi {
    const f4_s0_g1_args *a;
    __device__ __forceinline__ void operator()(int64_t, int64_t i0, int64_t i1, float acc) const {
        const float *__restrict__ p0 = (const float *)a->p[0];
        const int64_t s0_1 = (int64_t)a->s[0][1];
        float *__restrict__ p1 = (float *)a->p[1];
        const int64_t s1_0 = (int64_t)a->s[1][0];
        const int64_t s1_1 = (int64_t)a->s[1][1];
        const float v0 = p0[i1 * s0_1];
        const float v1 = (acc + v0);
        p1[i0 * s1_0 + i1 * s1_1] = (float)(v1);
    }
};
extern "C" __global__ void __launch_bounds__(256) f4_s0_g1_tiled(const __grid_constant__ f4_s0_g1_args a_) {
    const f4_s0_g1_args *a = &a_;
    cv_gemm_tiled<float, 128>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f4_s0_g1_epi{a});
}
extern "C" __global__ void __launch_bounds__(256) f4_s0_g1_tiled64(const __grid_constant__ f4_s0_g1_args a_) {
    const f4_s0_g1_args *a = &a_;
    cv_gemm_tiled<float, 64>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f4_s0_g1_epi{a});
}
extern "C" __global__ void __launch_bounds__(1024) f4_s0_g1_gemv1(const __grid_constant__ f4_s0_g1_args a_) {
    const f4_s0_g1_args *a = &a_;
    cv_gemv<float, 1>(a->t, 1, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f4_s0_g1_epi{a});
}
extern "C" __global__ void __launch_bounds__(1024) f4_s0_g1_gemv4(const __grid_constant__ f4_s0_g1_args a_) {
    const f4_s0_g1_args *a = &a_;
    cv_gemv<float, 4>(a->t, 1, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f4_s0_g1_epi{a});
}
extern "C" __global__ void __launch_bounds__(256) f4_s0_g1_ksum(const __grid_constant__ f4_s0_g1_args a_) {
    const f4_s0_g1_args *a = &a_;
    cv_gemm_ksum<float>(reinterpret_cast<const float *>(a->part), (int)a->split, a->n[0], a->n[1], 1, f4_s0_g1_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f4_s0_g1_tc(const __grid_constant__ f4_s0_g1_args a_) {
    const f4_s0_g1_args *a = &a_;
    cv_gemm_tc<false, 128>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f4_s0_g1_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f4_s0_g1_tct(const __grid_constant__ f4_s0_g1_args a_) {
    const f4_s0_g1_args *a = &a_;
    cv_gemm_tc<true, 128>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f4_s0_g1_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f4_s0_g1_tc64(const __grid_constant__ f4_s0_g1_args a_) {
    const f4_s0_g1_args *a = &a_;
    cv_gemm_tc<false, 64>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f4_s0_g1_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f4_s0_g1_tct64(const __grid_constant__ f4_s0_g1_args a_) {
    const f4_s0_g1_args *a = &a_;
    cv_gemm_tc<true, 64>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f4_s0_g1_epi{a});
}
template <class I, int TEAM> static __device__ __forceinline__ void f4_s0_g2_rows(const f4_s0_g2_args *a) {
    const float *__restrict__ p0 = (const float *)a->p[0];
    const I s0_0 = (I)a->s[0][0];
    const I s0_1 = (I)a->s[0][1];
    float *__restrict__ p1 = (float *)a->p[1];
    const I s1_0 = (I)a->s[1][0];
    const I s1_1 = (I)a->s[1][1];
    const I n0 = (I)a->n[0]; (void)n0;
    const I n1 = (I)a->n[1]; (void)n1;
    const I rows = n0, len = n1; (void)len;
    constexpr int LANES = cv_team_in_warp<TEAM> ? TEAM : 0;  /* a team in a warp */
    const I team = TEAM ? (I)TEAM : (I)blockDim.x;
    const I tid = (I)(LANES ? threadIdx.x % LANES : threadIdx.x);
    const I teams = (I)(LANES ? blockDim.x / LANES : 1); (void)team;
    const I first = (I)blockIdx.x * teams + (I)(LANES ? threadIdx.x / LANES : 0);
    for (I row = first; row < rows; row += (I)gridDim.x * teams) {
        I rem = row;
        const I i0 = rem;
        (void)i0;
        float acc0 = -INFINITY;
        for (I j = tid; j < len; j += team) {
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = p0[i0 * s0_0 + i1 * s0_1];
            acc0 = cv_op_max()(acc0, (float)(v0));
        }
        acc0 = cv_team_reduce<TEAM>(acc0, cv_op_max());
        float acc1 = 0;
        for (I j = tid; j < len; j += team) {
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = p0[i0 * s0_0 + i1 * s0_1];
            const float v1 = (v0 - acc0);
            const float v2 = expf(v1);
            acc1 = cv_op_sum()(acc1, (float)(v2));
        }
        acc1 = cv_team_reduce<TEAM>(acc1, cv_op_sum());
        for (I j = tid; j < len; j += team) {
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = p0[i0 * s0_0 + i1 * s0_1];
            const float v1 = (v0 - acc0);
            const float v2 = expf(v1);
            const float v3 = (v2 / acc1);
            p1[i0 * s1_0 + i1 * s1_1] = (float)(v3);
        }
    }
}
template <class I, int TEAM, int R, bool UNIT> static __device__ __forceinline__ void f4_s0_g2_rows_c(const f4_s0_g2_args *a) {
    const float *__restrict__ p0 = (const float *)a->p[0];
    const I s0_0 = (I)a->s[0][0];
    const I s0_1 = UNIT ? (I)1 : (I)a->s[0][1];
    float *__restrict__ p1 = (float *)a->p[1];
    const I s1_0 = (I)a->s[1][0];
    const I s1_1 = UNIT ? (I)1 : (I)a->s[1][1];
    const I n0 = (I)a->n[0]; (void)n0;
    const I n1 = (I)a->n[1]; (void)n1;
    const I rows = n0, len = n1; (void)len;
    constexpr int LANES = cv_team_in_warp<TEAM> ? TEAM : 0;  /* a team in a warp */
    const I team = TEAM ? (I)TEAM : (I)blockDim.x;
    const I tid = (I)(LANES ? threadIdx.x % LANES : threadIdx.x);
    const I teams = (I)(LANES ? blockDim.x / LANES : 1); (void)team;
    const I first = (I)blockIdx.x * teams + (I)(LANES ? threadIdx.x / LANES : 0);
    for (I row = first; row < rows; row += (I)gridDim.x * teams) {
        I rem = row;
        const I i0 = rem;
        (void)i0;
        float cv0[R];
        float cv1[R];
        float cv2[R];
        float cv3[R];
        float cv4[R];
        float acc0 = -INFINITY;
        #pragma unroll
        for (int r = 0; r < R; r++) {
            const I j = tid + (I)r * team;
            const bool in = j < len; (void)in;
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = in ? (float)p0[i0 * s0_0 + i1 * s0_1] : (float)0;
            cv0[r] = v0;
            acc0 = cv_op_max()(acc0, (float)(in ? (float)(v0) : (float)(-INFINITY)));
        }
        acc0 = cv_team_reduce<TEAM>(acc0, cv_op_max());
        float acc1 = 0;
        #pragma unroll
        for (int r = 0; r < R; r++) {
            const I j = tid + (I)r * team;
            const bool in = j < len; (void)in;
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = (cv0[r] - acc0);
            cv1[r] = v0;
            const float v1 = expf(v0);
            cv2[r] = v1;
            acc1 = cv_op_sum()(acc1, (float)(in ? (float)(v1) : (float)(0)));
        }
        acc1 = cv_team_reduce<TEAM>(acc1, cv_op_sum());
        const float rcp0 = (float)1 / acc1;
        const int rok0 = fabsf(acc1) >= 0x1p-126f && fabsf(acc1) <= 0x1p126f;
        if (rok0) {
            #pragma unroll
            for (int r = 0; r < R; r++) {
                const I j = tid + (I)r * team;
                const bool in = j < len; (void)in;
                I rem = j;
                const I i1 = rem;
                (void)i1;
                const float v0 = cv2[r] * rcp0;
                cv3[r] = v0;
                if (in)
                    p1[i0 * s1_0 + i1 * s1_1] = (float)(v0);
            }
        }
        else {
            #pragma unroll
            for (int r = 0; r < R; r++) {
                const I j = tid + (I)r * team;
                const bool in = j < len; (void)in;
                I rem = j;
                const I i1 = rem;
                (void)i1;
                const float v0 = (cv2[r] / acc1);
                cv4[r] = v0;
                if (in)
                    p1[i0 * s1_0 + i1 * s1_1] = (float)(v0);
            }
        }
    }
}
extern "C" __global__ void __launch_bounds__(256) f4_s0_g2_w32(const __grid_constant__ f4_s0_g2_args a_) {
    const f4_s0_g2_args *a = &a_;
    f4_s0_g2_rows<int32_t, 32>(a);
}
extern "C" __global__ void __launch_bounds__(256) f4_s0_g2_w64(const __grid_constant__ f4_s0_g2_args a_) {
    const f4_s0_g2_args *a = &a_;
    f4_s0_g2_rows<int64_t, 32>(a);
}
extern "C" __global__ void __launch_bounds__(256) f4_s0_g2_b32(const __grid_constant__ f4_s0_g2_args a_) {
    const f4_s0_g2_args *a = &a_;
    f4_s0_g2_rows<int32_t, 0>(a);
}
extern "C" __global__ void __launch_bounds__(256) f4_s0_g2_b64(const __grid_constant__ f4_s0_g2_args a_) {
    const f4_s0_g2_args *a = &a_;
    f4_s0_g2_rows<int64_t, 0>(a);
}
extern "C" __global__ void __launch_bounds__(256) f4_s0_g2_q32(const __grid_constant__ f4_s0_g2_args a_) {
    const f4_s0_g2_args *a = &a_;
    f4_s0_g2_rows<int32_t, 8>(a);
}
extern "C" __global__ void __launch_bounds__(256) f4_s0_g2_bc32(const __grid_constant__ f4_s0_g2_args a_) {
    const f4_s0_g2_args *a = &a_;
    f4_s0_g2_rows_c<int32_t, 0, 16, false>(a);
}
extern "C" __global__ void __launch_bounds__(256) f4_s0_g2_bcu32(const __grid_constant__ f4_s0_g2_args a_) {
    const f4_s0_g2_args *a = &a_;
    f4_s0_g2_rows_c<int32_t, 256, 16, true>(a);
}
template <class I, int TEAM> static __device__ __forceinline__ void f5_s0_g0_rows(const f5_s0_g0_args *a) {
    const float *__restrict__ p0 = (const float *)a->p[0];
    const I s0_0 = (I)a->s[0][0];
    const I s0_1 = (I)a->s[0][1];
    const float *__restrict__ p1 = (const float *)a->p[1];
    const I s1_1 = (I)a->s[1][1];
    const float *__restrict__ p2 = (const float *)a->p[2];
    const I s2_1 = (I)a->s[2][1];
    float *__restrict__ p3 = (float *)a->p[3];
    const I s3_0 = (I)a->s[3][0];
    const I s3_1 = (I)a->s[3][1];
    const I n0 = (I)a->n[0]; (void)n0;
    const I n1 = (I)a->n[1]; (void)n1;
    const I rows = n0, len = n1; (void)len;
    constexpr int LANES = cv_team_in_warp<TEAM> ? TEAM : 0;  /* a team in a warp */
    const I team = TEAM ? (I)TEAM : (I)blockDim.x;
    const I tid = (I)(LANES ? threadIdx.x % LANES : threadIdx.x);
    const I teams = (I)(LANES ? blockDim.x / LANES : 1); (void)team;
    const I first = (I)blockIdx.x * teams + (I)(LANES ? threadIdx.x / LANES : 0);
    for (I row = first; row < rows; row += (I)gridDim.x * teams) {
        I rem = row;
        const I i0 = rem;
        (void)i0;
        float acc0 = 0;
        for (I j = tid; j < len; j += team) {
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = p0[i0 * s0_0 + i1 * s0_1];
            acc0 = cv_op_sum()(acc0, (float)(v0));
        }
        acc0 = cv_team_reduce<TEAM>(acc0, cv_op_sum());
        float acc1 = 0;
        for (I j = tid; j < len; j += team) {
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = p0[i0 * s0_0 + i1 * s0_1];
            const float v1 = (acc0 / ((float)768.0));
            const float v2 = (v0 - v1);
            const float v3 = (v2 * v2);
            acc1 = cv_op_sum()(acc1, (float)(v3));
        }
        acc1 = cv_team_reduce<TEAM>(acc1, cv_op_sum());
        for (I j = tid; j < len; j += team) {
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = p0[i0 * s0_0 + i1 * s0_1];
            const float v1 = (acc0 / ((float)768.0));
            const float v2 = (v0 - v1);
            const float v3 = (acc1 / ((float)768.0));
            const float v4 = (v3 + ((float)9.999999747378752e-06));
            const float v5 = sqrtf(v4);
            const float v6 = (v2 / v5);
            const float v7 = p1[i1 * s1_1];
            const float v8 = (v6 * v7);
            const float v9 = p2[i1 * s2_1];
            const float v10 = (v8 + v9);
            p3[i0 * s3_0 + i1 * s3_1] = (float)(v10);
        }
    }
}
template <class I, int TEAM, int R, bool UNIT> static __device__ __forceinline__ void f5_s0_g0_rows_c(const f5_s0_g0_args *a) {
    const float *__restrict__ p0 = (const float *)a->p[0];
    const I s0_0 = (I)a->s[0][0];
    const I s0_1 = UNIT ? (I)1 : (I)a->s[0][1];
    const float *__restrict__ p1 = (const float *)a->p[1];
    const I s1_1 = UNIT ? (I)1 : (I)a->s[1][1];
    const float *__restrict__ p2 = (const float *)a->p[2];
    const I s2_1 = UNIT ? (I)1 : (I)a->s[2][1];
    float *__restrict__ p3 = (float *)a->p[3];
    const I s3_0 = (I)a->s[3][0];
    const I s3_1 = UNIT ? (I)1 : (I)a->s[3][1];
    const I n0 = (I)a->n[0]; (void)n0;
    const I n1 = (I)a->n[1]; (void)n1;
    const I rows = n0, len = n1; (void)len;
    constexpr int LANES = cv_team_in_warp<TEAM> ? TEAM : 0;  /* a team in a warp */
    const I team = TEAM ? (I)TEAM : (I)blockDim.x;
    const I tid = (I)(LANES ? threadIdx.x % LANES : threadIdx.x);
    const I teams = (I)(LANES ? blockDim.x / LANES : 1); (void)team;
    const I first = (I)blockIdx.x * teams + (I)(LANES ? threadIdx.x / LANES : 0);
    for (I row = first; row < rows; row += (I)gridDim.x * teams) {
        I rem = row;
        const I i0 = rem;
        (void)i0;
        float cv0[R];
        float cv1[R];
        float cv2[R];
        float cv3[R];
        float cv4[R];
        float cv5[R];
        float cv6[R];
        float cv7[R];
        float cv8[R];
        float cv9[R];
        float cv10[R];
        float cv11[R];
        float cv12[R];
        float cv13[R];
        float cv14[R];
        float cv15[R];
        float cv16[R];
        float cv17[R];
        float cv18[R];
        float cv19[R];
        float cv20[R];
        float cv21[R];
        float cv22[R];
        float acc0 = 0;
        #pragma unroll
        for (int r = 0; r < R; r++) {
            const I j = tid + (I)r * team;
            const bool in = j < len; (void)in;
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = in ? (float)p0[i0 * s0_0 + i1 * s0_1] : (float)0;
            cv0[r] = v0;
            acc0 = cv_op_sum()(acc0, (float)(in ? (float)(v0) : (float)(0)));
        }
        acc0 = cv_team_reduce<TEAM>(acc0, cv_op_sum());
        float acc1 = 0;
        #pragma unroll
        for (int r = 0; r < R; r++) {
            const I j = tid + (I)r * team;
            const bool in = j < len; (void)in;
            I rem = j;
            const I i1 = rem;
            (void)i1;
            const float v0 = (acc0 / ((float)768.0));
            cv1[r] = v0;
            cv2[r] = v0;
            const float v1 = (cv0[r] - v0);
            cv3[r] = v1;
            const float v2 = (v1 * v1);
            cv4[r] = v2;
            acc1 = cv_op_sum()(acc1, (float)(in ? (float)(v2) : (float)(0)));
        }
        acc1 = cv_team_reduce<TEAM>(acc1, cv_op_sum());
        const float r0 = (acc1 / ((float)768.0));
        const float r1 = (r0 + ((float)9.999999747378752e-06));
        const float r2 = sqrtf(r1);
        const float rcp0 = (float)1 / r2;
        const int rok0 = fabsf(r2) >= 0x1p-126f && fabsf(r2) <= 0x1p126f;
        if (rok0) {
            #pragma unroll
            for (int r = 0; r < R; r++) {
                const I j = tid + (I)r * team;
                const bool in = j < len; (void)in;
                I rem = j;
                const I i1 = rem;
                (void)i1;
                const float v0 = cv3[r] * rcp0;
                cv5[r] = v0;
                const float v1 = in ? (float)p1[i1 * s1_1] : (float)0;
                cv6[r] = v1;
                cv7[r] = v1;
                const float v2 = (v0 * v1);
                cv8[r] = v2;
                const float v3 = in ? (float)p2[i1 * s2_1] : (float)0;
                cv9[r] = v3;
                cv10[r] = v3;
                const float v4 = (v2 + v3);
                cv11[r] = v4;
                if (in)
                    p3[i0 * s3_0 + i1 * s3_1] = (float)(v4);
            }
        }
        else {
            #pragma unroll
            for (int r = 0; r < R; r++) {
                const I j = tid + (I)r * team;
                const bool in = j < len; (void)in;
                I rem = j;
                const I i1 = rem;
                (void)i1;
                const float v0 = (acc1 / ((float)768.0));
                cv12[r] = v0;
                const float v1 = (v0 + ((float)9.999999747378752e-06));
                cv13[r] = v1;
                const float v2 = sqrtf(v1);
                cv14[r] = v2;
                cv15[r] = v2;
                const float v3 = (cv3[r] / v2);
                cv16[r] = v3;
                const float v4 = in ? (float)p1[i1 * s1_1] : (float)0;
                cv17[r] = v4;
                cv18[r] = v4;
                const float v5 = (v3 * v4);
                cv19[r] = v5;
                const float v6 = in ? (float)p2[i1 * s2_1] : (float)0;
                cv20[r] = v6;
                cv21[r] = v6;
                const float v7 = (v5 + v6);
                cv22[r] = v7;
                if (in)
                    p3[i0 * s3_0 + i1 * s3_1] = (float)(v7);
            }
        }
    }
}
extern "C" __global__ void __launch_bounds__(256) f5_s0_g0_w32(const __grid_constant__ f5_s0_g0_args a_) {
    const f5_s0_g0_args *a = &a_;
    f5_s0_g0_rows<int32_t, 32>(a);
}
extern "C" __global__ void __launch_bounds__(256) f5_s0_g0_w64(const __grid_constant__ f5_s0_g0_args a_) {
    const f5_s0_g0_args *a = &a_;
    f5_s0_g0_rows<int64_t, 32>(a);
}
extern "C" __global__ void __launch_bounds__(256) f5_s0_g0_b32(const __grid_constant__ f5_s0_g0_args a_) {
    const f5_s0_g0_args *a = &a_;
    f5_s0_g0_rows<int32_t, 0>(a);
}
extern "C" __global__ void __launch_bounds__(256) f5_s0_g0_b64(const __grid_constant__ f5_s0_g0_args a_) {
    const f5_s0_g0_args *a = &a_;
    f5_s0_g0_rows<int64_t, 0>(a);
}
extern "C" __global__ void __launch_bounds__(256) f5_s0_g0_q32(const __grid_constant__ f5_s0_g0_args a_) {
    const f5_s0_g0_args *a = &a_;
    f5_s0_g0_rows<int32_t, 8>(a);
}
extern "C" __global__ void __launch_bounds__(256) f5_s0_g0_bc32(const __grid_constant__ f5_s0_g0_args a_) {
    const f5_s0_g0_args *a = &a_;
    f5_s0_g0_rows_c<int32_t, 0, 16, false>(a);
}
extern "C" __global__ void __launch_bounds__(256) f5_s0_g0_bcu32(const __grid_constant__ f5_s0_g0_args a_) {
    const f5_s0_g0_args *a = &a_;
    f5_s0_g0_rows_c<int32_t, 256, 16, true>(a);
}
struct f5_s0_g1_epi {
    const f5_s0_g1_args *a;
    __device__ __forceinline__ void operator()(int64_t, int64_t i0, int64_t i1, float acc) const {
        const float *__restrict__ p0 = (const float *)a->p[0];
        const int64_t s0_1 = (int64_t)a->s[0][1];
        float *__restrict__ p1 = (float *)a->p[1];
        const int64_t s1_0 = (int64_t)a->s[1][0];
        const int64_t s1_1 = (int64_t)a->s[1][1];
        const float v0 = p0[i1 * s0_1];
        const float v1 = (acc + v0);
        const float v2 = (((float)0.5) * v1);
        const float v3 = (((float)0.044714998453855515) * v1);
        const float v4 = (v3 * v1);
        const float v5 = (v4 * v1);
        const float v6 = (v1 + v5);
        const float v7 = (((float)0.7978845834732056) * v6);
        const float v8 = tanhf(v7);
        const float v9 = (((float)1.0) + v8);
        const float v10 = (v2 * v9);
        p1[i0 * s1_0 + i1 * s1_1] = (float)(v10);
    }
};
extern "C" __global__ void __launch_bounds__(256) f5_s0_g1_tiled(const __grid_constant__ f5_s0_g1_args a_) {
    const f5_s0_g1_args *a = &a_;
    cv_gemm_tiled<float, 128>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f5_s0_g1_epi{a});
}
extern "C" __global__ void __launch_bounds__(256) f5_s0_g1_tiled64(const __grid_constant__ f5_s0_g1_args a_) {
    const f5_s0_g1_args *a = &a_;
    cv_gemm_tiled<float, 64>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f5_s0_g1_epi{a});
}
extern "C" __global__ void __launch_bounds__(1024) f5_s0_g1_gemv1(const __grid_constant__ f5_s0_g1_args a_) {
    const f5_s0_g1_args *a = &a_;
    cv_gemv<float, 1>(a->t, 1, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f5_s0_g1_epi{a});
}
extern "C" __global__ void __launch_bounds__(1024) f5_s0_g1_gemv4(const __grid_constant__ f5_s0_g1_args a_) {
    const f5_s0_g1_args *a = &a_;
    cv_gemv<float, 4>(a->t, 1, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f5_s0_g1_epi{a});
}
extern "C" __global__ void __launch_bounds__(256) f5_s0_g1_ksum(const __grid_constant__ f5_s0_g1_args a_) {
    const f5_s0_g1_args *a = &a_;
    cv_gemm_ksum<float>(reinterpret_cast<const float *>(a->part), (int)a->split, a->n[0], a->n[1], 1, f5_s0_g1_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f5_s0_g1_tc(const __grid_constant__ f5_s0_g1_args a_) {
    const f5_s0_g1_args *a = &a_;
    cv_gemm_tc<false, 128>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f5_s0_g1_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f5_s0_g1_tct(const __grid_constant__ f5_s0_g1_args a_) {
    const f5_s0_g1_args *a = &a_;
    cv_gemm_tc<true, 128>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f5_s0_g1_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f5_s0_g1_tc64(const __grid_constant__ f5_s0_g1_args a_) {
    const f5_s0_g1_args *a = &a_;
    cv_gemm_tc<false, 64>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f5_s0_g1_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f5_s0_g1_tct64(const __grid_constant__ f5_s0_g1_args a_) {
    const f5_s0_g1_args *a = &a_;
    cv_gemm_tc<true, 64>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f5_s0_g1_epi{a});
}
struct f5_s0_g2_epi {
    const f5_s0_g2_args *a;
    __device__ __forceinline__ void operator()(int64_t, int64_t i0, int64_t i1, float acc) const {
        const float *__restrict__ p0 = (const float *)a->p[0];
        const int64_t s0_0 = (int64_t)a->s[0][0];
        const int64_t s0_1 = (int64_t)a->s[0][1];
        const float *__restrict__ p1 = (const float *)a->p[1];
        const int64_t s1_1 = (int64_t)a->s[1][1];
        float *__restrict__ p2 = (float *)a->p[2];
        const int64_t s2_0 = (int64_t)a->s[2][0];
        const int64_t s2_1 = (int64_t)a->s[2][1];
        const float v0 = p0[i0 * s0_0 + i1 * s0_1];
        const float v1 = (v0 + acc);
        const float v2 = p1[i1 * s1_1];
        const float v3 = (v1 + v2);
        p2[i0 * s2_0 + i1 * s2_1] = (float)(v3);
    }
};
extern "C" __global__ void __launch_bounds__(256) f5_s0_g2_tiled(const __grid_constant__ f5_s0_g2_args a_) {
    const f5_s0_g2_args *a = &a_;
    cv_gemm_tiled<float, 128>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f5_s0_g2_epi{a});
}
extern "C" __global__ void __launch_bounds__(256) f5_s0_g2_tiled64(const __grid_constant__ f5_s0_g2_args a_) {
    const f5_s0_g2_args *a = &a_;
    cv_gemm_tiled<float, 64>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f5_s0_g2_epi{a});
}
extern "C" __global__ void __launch_bounds__(1024) f5_s0_g2_gemv1(const __grid_constant__ f5_s0_g2_args a_) {
    const f5_s0_g2_args *a = &a_;
    cv_gemv<float, 1>(a->t, 1, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f5_s0_g2_epi{a});
}
extern "C" __global__ void __launch_bounds__(1024) f5_s0_g2_gemv4(const __grid_constant__ f5_s0_g2_args a_) {
    const f5_s0_g2_args *a = &a_;
    cv_gemv<float, 4>(a->t, 1, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f5_s0_g2_epi{a});
}
extern "C" __global__ void __launch_bounds__(256) f5_s0_g2_ksum(const __grid_constant__ f5_s0_g2_args a_) {
    const f5_s0_g2_args *a = &a_;
    cv_gemm_ksum<float>(reinterpret_cast<const float *>(a->part), (int)a->split, a->n[0], a->n[1], 1, f5_s0_g2_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f5_s0_g2_tc(const __grid_constant__ f5_s0_g2_args a_) {
    const f5_s0_g2_args *a = &a_;
    cv_gemm_tc<false, 128>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f5_s0_g2_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f5_s0_g2_tct(const __grid_constant__ f5_s0_g2_args a_) {
    const f5_s0_g2_args *a = &a_;
    cv_gemm_tc<true, 128>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f5_s0_g2_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f5_s0_g2_tc64(const __grid_constant__ f5_s0_g2_args a_) {
    const f5_s0_g2_args *a = &a_;
    cv_gemm_tc<false, 64>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f5_s0_g2_epi{a});
}
extern "C" __global__ void __launch_bounds__(256, 2) f5_s0_g2_tct64(const __grid_constant__ f5_s0_g2_args a_) {
    const f5_s0_g2_args *a = &a_;
    cv_gemm_tc<true, 64>(a->t, 1, a->n[0], a->n[1], 1, (int)a->split, reinterpret_cast<float *>(a->part), f5_s0_g2_epi{a});
}
template <class I> static __device__ __forceinline__ void f6_s0_g0_span(const f6_s0_g0_args *a, I first, I end, I step) {
    const float *__restrict__ p0 = (const float *)a->p[0];
    const I s0_0 = (I)a->s[0][0];
    const float *__restrict__ p1 = (const float *)a->p[1];
    const I s1_0 = (I)a->s[1][0];
    float *__restrict__ p2 = (float *)a->p[2];
    const I s2_0 = (I)a->s[2][0];
    const I n0 = (I)a->n[0]; (void)n0;
    for (I t = first; t < end; t += step) {
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
template <class I> static __device__ __forceinline__ void f6_s0_g0_strided(const f6_s0_g0_args *a) {
    f6_s0_g0_span<I>(a, (I)(blockIdx.x * blockDim.x + threadIdx.x), (I)a->n[0], (I)(gridDim.x * blockDim.x));
}
extern "C" __global__ void __launch_bounds__(256) f6_s0_g0_s32(const __grid_constant__ f6_s0_g0_args a_) {
    const f6_s0_g0_args *a = &a_;
    f6_s0_g0_strided<int32_t>(a);
}
extern "C" __global__ void __launch_bounds__(256) f6_s0_g0_s64(const __grid_constant__ f6_s0_g0_args a_) {
    const f6_s0_g0_args *a = &a_;
    f6_s0_g0_strided<int64_t>(a);
}
extern "C" __global__ void __launch_bounds__(256) f6_s0_g0_flat(const __grid_constant__ f6_s0_g0_args a_) {
    const f6_s0_g0_args *a = &a_;
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
typedef struct {
    f1_s0_g0_args a0;
    f1_s0_g1_args a1;
    int v[2];
    int runs[2];  /* 0: kernel g + 1 waits for a grid barrier */
} f1_s0_one_args;
struct f1_s0_g1_after {
    const f1_s0_g1_args *a;
    int fits;  /* 32-bit offsets: one.v */
    int on;  /* 0: the consumer runs after a grid barrier instead */
    __device__ __forceinline__ void operator()(int64_t row0, int rows, int64_t col0, int64_t run) const {
        if (!on) return;
        const int64_t n0 = a->n[0], n1 = a->n[1], col1 = col0 + run < n1 ? col0 + run : n1;
        for (int64_t r = row0; r < row0 + rows && r < n0; r++) {
            if (fits) f1_s0_g1_span<int32_t>(a, (int32_t)(r * n1 + col0 + threadIdx.x), (int32_t)(r * n1 + col1), (int32_t)blockDim.x);
            else f1_s0_g1_span<int64_t>(a, r * n1 + col0 + threadIdx.x, r * n1 + col1, (int64_t)blockDim.x);
        }
    }
};
extern "C" __global__ void __launch_bounds__(1024, 1) f1_s0_one(const __grid_constant__ f1_s0_one_args o) {
     {
        const f1_s0_g0_args *a = &o.a0;
        if (o.v[0] == 1) cv_gemv<float, 1>(a->t, 2, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f1_s0_g0_epi{a}, o.runs[0] ? o.runs[0] : 1, f1_s0_g1_after{&o.a1, o.v[1], o.runs[0] != 0}); else cv_gemv<float, 4>(a->t, 2, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f1_s0_g0_epi{a}, o.runs[0] ? o.runs[0] : 1, f1_s0_g1_after{&o.a1, o.v[1], o.runs[0] != 0});
        if (!o.runs[0]) {
            cooperative_groups::this_grid().sync();
            const f1_s0_g1_args *a = &o.a1;
            if (o.v[1]) f1_s0_g1_strided<int32_t>(a); else f1_s0_g1_strided<int64_t>(a);
        }
    }
}
typedef struct {
    f4_s0_g0_args a0;
    f4_s0_g1_args a1;
    f4_s0_g2_args a2;
    int v[3];
    int runs[3];  /* 0: kernel g + 1 waits for a grid barrier */
} f4_s0_one_args;
extern "C" __global__ void __launch_bounds__(1024, 1) f4_s0_one(const __grid_constant__ f4_s0_one_args o) {
     {
        const f4_s0_g0_args *a = &o.a0;
        if (o.v[0] == 0) f4_s0_g0_rows<int32_t, 32>(a); else if (o.v[0] == 1) f4_s0_g0_rows<int32_t, 0>(a); else if (o.v[0] == 2) f4_s0_g0_rows<int64_t, 32>(a); else if (o.v[0] == 3) f4_s0_g0_rows<int64_t, 0>(a); else if (o.v[0] == 4) f4_s0_g0_rows_c<int32_t, 0, 2, false>(a);
    }
    cooperative_groups::this_grid().sync();
     {
        const f4_s0_g1_args *a = &o.a1;
        if (o.v[1] == 1) cv_gemv<float, 1>(a->t, 1, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f4_s0_g1_epi{a}); else cv_gemv<float, 4>(a->t, 1, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f4_s0_g1_epi{a});
    }
    cooperative_groups::this_grid().sync();
     {
        const f4_s0_g2_args *a = &o.a2;
        if (o.v[2] == 0) f4_s0_g2_rows<int32_t, 32>(a); else if (o.v[2] == 1) f4_s0_g2_rows<int32_t, 0>(a); else if (o.v[2] == 2) f4_s0_g2_rows<int64_t, 32>(a); else if (o.v[2] == 3) f4_s0_g2_rows<int64_t, 0>(a); else if (o.v[2] == 4) f4_s0_g2_rows_c<int32_t, 0, 2, false>(a);
    }
}
typedef struct {
    f5_s0_g0_args a0;
    f5_s0_g1_args a1;
    f5_s0_g2_args a2;
    int v[3];
    int runs[3];  /* 0: kernel g + 1 waits for a grid barrier */
} f5_s0_one_args;
extern "C" __global__ void __launch_bounds__(1024, 1) f5_s0_one(const __grid_constant__ f5_s0_one_args o) {
     {
        const f5_s0_g0_args *a = &o.a0;
        if (o.v[0] == 0) f5_s0_g0_rows<int32_t, 32>(a); else if (o.v[0] == 1) f5_s0_g0_rows<int32_t, 0>(a); else if (o.v[0] == 2) f5_s0_g0_rows<int64_t, 32>(a); else if (o.v[0] == 3) f5_s0_g0_rows<int64_t, 0>(a); else if (o.v[0] == 4) f5_s0_g0_rows_c<int32_t, 0, 2, false>(a);
    }
    cooperative_groups::this_grid().sync();
     {
        const f5_s0_g1_args *a = &o.a1;
        if (o.v[1] == 1) cv_gemv<float, 1>(a->t, 1, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f5_s0_g1_epi{a}); else cv_gemv<float, 4>(a->t, 1, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f5_s0_g1_epi{a});
    }
    cooperative_groups::this_grid().sync();
     {
        const f5_s0_g2_args *a = &o.a2;
        if (o.v[2] == 1) cv_gemv<float, 1>(a->t, 1, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f5_s0_g2_epi{a}); else cv_gemv<float, 4>(a->t, 1, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f5_s0_g2_epi{a});
    }
}
