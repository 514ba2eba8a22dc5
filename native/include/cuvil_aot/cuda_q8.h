/* Int8 weights on the GPU. Up to 16 rows of x (decode, batch 1): cv_gemv_q8 reads each
 * weight once as int8 (16-byte loads along k), converts it in registers and sums x . q in
 * float32, scaling once per output (per channel) or once per 16-byte chunk of a group;
 * the sum goes to the GEMM's epilogue. More rows, or a layout it does not take (the
 * host's test in codegen/gpu_launch.py): the weight is dequantized into scratch memory
 * of the call (w[o * k + p] = q[o, p] * s[o, p / group], as gemm_q8 on the CPU reads it),
 * then multiplied by the float32 GEMM. Included by a unit whose GEMMs read int8 weights
 * (codegen/gpu_plan.py) and, for the argument structs, by the wrappers (gpu_wrap.h). */
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

/* The int8 weight of a GEMM's argument struct, for cv_gemv_q8: out = x @ (q * s).T with
 * q (n, k) of unit stride along k, s[o * s_os + (p / group) * s_gs]; group 0: one scale
 * per output. vec: 16-byte loads (per channel: always, each row from its first aligned
 * byte; per group: rows aligned and group % 16 == 0), else byte loads. */
typedef struct {
    const int8_t *q;
    const float *s;
    int64_t q_os, group, s_os, s_gs, vec;
} cv_q8_weight;

#define CV_GEMV_Q8_BLOCK 256
/* Blocks per SM of the one-row entry (_q8x1: 80 registers, 24 warps an SM, so the 3072
 * rows of GPT-2's 768 -> 3072 fit one wave on the H200's 132 SMs; at 128 registers, 16
 * warps an SM, they took two). Two an SM with 8 loads in flight: the same time (see U). */
#define CV_GEMV_Q8_X1_BLOCKS 3

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

/* x[rows] . q[p0 .. p0 + 15] (one 16-byte chunk), the rows' partial sums into part; x4:
 * x's rows contiguous along k and x[row, p0] 16-byte aligned, read as float4. */
template <int MR, bool X4>
__device__ __forceinline__ void cv_q8_chunk(const float *x, const int64_t arow[MR], int64_t a_cs,
                                            int64_t p0, int4 raw, float part[MR]) {
    const int words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int e4 = 0; e4 < 4; e4++) {
        float qv[4];
#pragma unroll
        for (int e = 0; e < 4; e++) qv[e] = (float)(signed char)(words[e4] >> (8 * e));
#pragma unroll
        for (int r = 0; r < MR; r++) {
            if constexpr (X4) {
                const float4 xv =
                    __ldg(reinterpret_cast<const float4 *>(x + arow[r] + p0 + 4 * e4));
                part[r] = fmaf(xv.w, qv[3], fmaf(xv.z, qv[2], fmaf(xv.y, qv[1],
                               fmaf(xv.x, qv[0], part[r]))));
            } else {
#pragma unroll
                for (int e = 0; e < 4; e++)
                    part[r] = fmaf(__ldg(x + arow[r] + (p0 + 4 * e4 + e) * a_cs), qv[e], part[r]);
            }
        }
    }
}

/* A warp per output o (8 per block, block-stride over n; batches over grid.y): its lanes
 * take 16-byte chunks of q's row, 4 loads in flight, then the bytes before the row's first
 * aligned one and after its last whole chunk; shuffles add the lanes' sums. MR rows of x
 * at a time; more rows read the weight's row again (from L1) for the next MR: sixteen
 * accumulators took 255 registers and spilled, and the whole kernel's occupancy with them. */
template <int MR, class Epi>
__device__ void cv_gemv_q8_rows(const cv_gpu_term &t, const cv_q8_weight &w, int64_t m,
                                int64_t n, int64_t nbatch, const Epi &epi) {
    /* 16-byte loads in flight per lane. 8 did not help (H200, 4096 -> 11008, kernel time:
     * 34.7 us at 4, 34.8 at 8 with 2 blocks an SM, 42.2 at 8 with 3: spills), so the
     * loads in flight are not what holds this kernel at 31% of the copy rate. */
    constexpr int U = 4;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t k = t.k, g = w.group;
    for (int64_t bat = blockIdx.y; bat < nbatch; bat += gridDim.y) {
        const float *x = reinterpret_cast<const float *>(t.a) + bat * t.a_bs;
        for (int64_t o = (int64_t)blockIdx.x * (CV_GEMV_Q8_BLOCK / 32) + warp; o < n;
             o += (int64_t)gridDim.x * (CV_GEMV_Q8_BLOCK / 32)) {
            const int8_t *qrow = w.q + o * w.q_os;
            const float *srow = w.s + o * w.s_os;
            int64_t head = 0, chunks = 0;
            if (w.vec) {
                head = (16 - (int64_t)((uintptr_t)qrow & 15)) & 15;
                if (head > k) head = k;
                chunks = (k - head) >> 4;
            }
            for (int64_t row0 = 0; row0 < m; row0 += MR) {
            int64_t arow[MR];
#pragma unroll
            for (int r = 0; r < MR; r++) arow[r] = (row0 + r < m ? row0 + r : m - 1) * t.a_rs;
            float acc[MR];
#pragma unroll
            for (int r = 0; r < MR; r++) acc[r] = 0.f;
            const int4 *body = reinterpret_cast<const int4 *>(qrow + head);
            bool x4 = t.a_cs == 1; /* x[row, head + 16 c] aligned for every row */
#pragma unroll
            for (int r = 0; r < MR; r++) x4 = x4 && ((uintptr_t)(x + arow[r] + head) & 15) == 0;
            for (int64_t c = lane; c < chunks; c += 32 * U) {
                int4 raw[U];
#pragma unroll
                for (int u = 0; u < U; u++)
                    raw[u] = c + 32 * u < chunks ? __ldg(body + c + 32 * u) : make_int4(0, 0, 0, 0);
#pragma unroll
                for (int u = 0; u < U; u++)
                    if (c + 32 * u < chunks) {
                        const int64_t p0 = head + 16 * (c + 32 * u);
                        float part[MR];
#pragma unroll
                        for (int r = 0; r < MR; r++) part[r] = 0.f;
                        if (x4) cv_q8_chunk<MR, true>(x, arow, 1, p0, raw[u], part);
                        else cv_q8_chunk<MR, false>(x, arow, t.a_cs, p0, raw[u], part);
                        /* k < 2^32 (the host's 32-bit test): a 32-bit division */
                        const float sc =
                            g > 0 ? __ldg(srow + (uint32_t)p0 / (uint32_t)g * w.s_gs) : 1.f;
#pragma unroll
                        for (int r = 0; r < MR; r++) acc[r] = fmaf(sc, part[r], acc[r]);
                    }
            }
            /* the bytes outside the chunks: all of the row without vec */
            const int64_t end = head + 16 * chunks, rest = head + (k - end);
            for (int64_t i = lane; i < rest; i += 32) {
                const int64_t p = i < head ? i : end + (i - head);
                const float qv = (float)__ldg(qrow + p) *
                                 (g > 0 ? __ldg(srow + (uint32_t)p / (uint32_t)g * w.s_gs) : 1.f);
#pragma unroll
                for (int r = 0; r < MR; r++)
                    acc[r] = fmaf(__ldg(x + arow[r] + p * t.a_cs), qv, acc[r]);
            }
            const float so = g > 0 ? 1.f : __ldg(srow);
#pragma unroll
            for (int r = 0; r < MR; r++) {
                float v = acc[r];
#pragma unroll
                for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
                if (lane == r && row0 + r < m) epi(bat, row0 + r, o, v * so);
            }
            }
        }
    }
}

/* Up to 16 rows of x: MR = 1 (one row; an entry point of its own, so that its registers
 * are not the four rows' 128) or 4 (four rows at a time). */
template <int MR, class Epi>
__device__ void cv_gemv_q8(const cv_gpu_term &t, const cv_q8_weight &w, int64_t m, int64_t n,
                           int64_t nbatch, const Epi &epi) {
    cv_gemv_q8_rows<MR>(t, w, m, n, nbatch, epi);
}
#endif

#endif
