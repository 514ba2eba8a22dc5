#include <cooperative_groups.h>
#include "cuvil_aot/cuda_gemm.h"
typedef struct {
    int64_t n[2];
    char *p[2];
    int64_t s[2][2];
} f0_s0_g0_args;
template <class I, int TEAM> static __device__ __forceinline__ void f0_s0_g0_rows(const f0_s0_g0_args *a) {
    constexpr bool UNIT = false;
    const float *__restrict__ p0 = (const float *)a->p[0];
    const I s0_0 = (I)a->s[0][0];
    const I s0_1 = UNIT ? (I)1 : (I)a->s[0][1];
    float *__restrict__ p1 = (float *)a->p[1];
    const I s1_0 = (I)a->s[1][0];
    const I s1_1 = UNIT ? (I)1 : (I)a->s[1][1];
    const I n0 = (I)a->n[0]; (void)n0;
    const I n1 = (I)a->n[1]; (void)n1;
    const I rows = n0, len = n1; (void)len;
    const I team = TEAM ? (I)TEAM : (I)blockDim.x;
    const I tid = (I)(TEAM == 32 ? (threadIdx.x & 31) : threadIdx.x);
    const I teams = (I)(TEAM == 32 ? (blockDim.x >> 5) : 1); (void)team;
    const I first = (I)blockIdx.x * teams + (I)(TEAM == 32 ? (threadIdx.x >> 5) : 0);
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
template <class I, int TEAM, int R, bool UNIT> static __device__ __forceinline__ void f0_s0_g0_rows_c(const f0_s0_g0_args *a) {
    const float *__restrict__ p0 = (const float *)a->p[0];
    const I s0_0 = (I)a->s[0][0];
    const I s0_1 = UNIT ? (I)1 : (I)a->s[0][1];
    float *__restrict__ p1 = (float *)a->p[1];
    const I s1_0 = (I)a->s[1][0];
    const I s1_1 = UNIT ? (I)1 : (I)a->s[1][1];
    const I n0 = (I)a->n[0]; (void)n0;
    const I n1 = (I)a->n[1]; (void)n1;
    const I rows = n0, len = n1; (void)len;
    const I team = TEAM ? (I)TEAM : (I)blockDim.x;
    const I tid = (I)(TEAM == 32 ? (threadIdx.x & 31) : threadIdx.x);
    const I teams = (I)(TEAM == 32 ? (blockDim.x >> 5) : 1); (void)team;
    const I first = (I)blockIdx.x * teams + (I)(TEAM == 32 ? (threadIdx.x >> 5) : 0);
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
extern "C" __global__ void __launch_bounds__(256) f0_s0_g0_w32(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    f0_s0_g0_rows<int32_t, 32>(a);
}
extern "C" __global__ void __launch_bounds__(256) f0_s0_g0_w64(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    f0_s0_g0_rows<int64_t, 32>(a);
}
extern "C" __global__ void __launch_bounds__(256) f0_s0_g0_b32(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    f0_s0_g0_rows<int32_t, 0>(a);
}
extern "C" __global__ void __launch_bounds__(256) f0_s0_g0_b64(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    f0_s0_g0_rows<int64_t, 0>(a);
}
extern "C" __global__ void __launch_bounds__(256) f0_s0_g0_bc32(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    f0_s0_g0_rows_c<int32_t, 0, 16, false>(a);
}
extern "C" __global__ void __launch_bounds__(256) f0_s0_g0_bcu32(const __grid_constant__ f0_s0_g0_args a_) {
    const f0_s0_g0_args *a = &a_;
    f0_s0_g0_rows_c<int32_t, 256, 16, true>(a);
}
