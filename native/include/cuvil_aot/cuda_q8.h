/* Int8 weights on the GPU. Up to 16 rows of x (decode, batch 1): cv_gemv_q8 reads each
 * weight once as int8 (16-byte loads along k, around L1), converts it in registers and
 * sums x . q in float32, scaling once per output (per channel) or once per 16-byte chunk
 * of a group; the sum goes to the GEMM's epilogue. More rows, or a layout it does not take (the
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

/* A block of CV_GEMV_Q8_BLOCK threads takes CV_GEMV_Q8_OUTS outputs at a time, its
 * threads splitting their rows along k: each 16-byte chunk of x is read once for the
 * outputs' four chunks of q, and a decode step's n / 4 blocks keep enough loads in flight.
 * H200, kernel time at 4096 -> 11008 / 4096 -> 4096 / 11008 -> 4096 (bench/gpu/q8_probe.cu,
 * bench/gpu/h200_2026-12-03e): a warp an output 35.2 / 19.1 / 44.4 us; four outputs a
 * warp 14.5 / 9.2 / 20.1; a block of 64 on four outputs 15.2 / 7.6 / 15.3, of 128 16.1 /
 * 8.1 / 15.6 (those are the probe's lean kernels: this one, general, 17.2 / 8.2 / 16.4). */
#define CV_GEMV_Q8_BLOCK 64
#define CV_GEMV_Q8_OUTS 4
#define CV_GEMV_Q8_PER_BLOCK CV_GEMV_Q8_OUTS /* outputs a block takes at a time */
/* Blocks per SM of the one-row entry (_q8x1): 64 registers, 32 warps an SM (at 80 and 24
 * warps the same time: 17.1 / 8.6 / 15.9 us, against 17.2 / 8.2 / 16.4). */
#define CV_GEMV_Q8_X1_BLOCKS 16

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

/* Four signed bytes of a word as floats: each byte, offset to q + 128, placed by a byte
 * permute under the exponent of 2^23 (0x4B0000XX = 2^23 + XX, exact), less 2^23 + 128 in
 * one FADD. I2F, the plain conversion, runs at 16 a clock an SM on sm_90: 4.2 TB/s of
 * weight at 1.98 GHz by itself; PRMT and FADD run at 64 and 128 (the probe: 4096 -> 11008
 * in 15.4 us against 20.1 with I2F, four outputs a warp). */
__device__ __forceinline__ void cv_q8_bytes(int word, float q[4]) {
    const unsigned u = (unsigned)word ^ 0x80808080u;
#pragma unroll
    for (int e = 0; e < 4; e++)
        q[e] = __int_as_float((int)__byte_perm(u, 0x4B000000u, 0x7540u | e)) - 8388736.f;
}

/* 16 bytes of q, around L1: each byte is read once, and x stays there. */
__device__ __forceinline__ int4 cv_q8_load(const int4 *p) {
#ifdef __CUDA_ARCH__
    int4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.s32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
#else /* tests/data/q8_emulate.cpp */
    return __ldg(p);
#endif
}

/* Where the chunks' sums read x and scales: x4, x's rows contiguous along k and 16-byte
 * aligned at the chunks, read as float4 (else element by element, a_cs apart); grouped,
 * a scale per chunk (else per output, after the sums). */
struct cv_q8_rows {
    const float *x[4]; /* row r of x at the first chunk's k */
    int64_t a_cs;
};

/* The O rows' chunks c = threadIdx.x, + BT, ... (< chunks; U of each row in flight) into
 * acc[o][r]: each x element read once for the O rows. body[o]: row o's first chunk;
 * s[o]: its scales at the first chunk's group, sg the chunk's group's stride (grouped). */
template <int MR, int O, bool X4, bool GROUPED>
__device__ __forceinline__ void cv_q8_body(const int4 *const body[O], const cv_q8_rows &xr,
                                           const float *const s[O], uint32_t head,
                                           uint32_t group, int64_t sg, int chunks,
                                           float acc[O][MR]) {
    constexpr int U = 2, BT = CV_GEMV_Q8_BLOCK;
    for (int c = threadIdx.x; c < chunks; c += BT * U) {
        int4 raw[U][O];
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int o = 0; o < O; o++)
                raw[u][o] = c + BT * u < chunks ? cv_q8_load(body[o] + c + BT * u)
                                                : make_int4(0, 0, 0, 0);
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (c + BT * u >= chunks) break;
            const int at = 16 * (c + BT * u); /* k past the first chunk */
            float part[O][MR];
#pragma unroll
            for (int o = 0; o < O; o++)
#pragma unroll
                for (int r = 0; r < MR; r++) part[o][r] = 0.f;
#pragma unroll
            for (int e4 = 0; e4 < 4; e4++) {
                float qv[O][4];
#pragma unroll
                for (int o = 0; o < O; o++)
                    cv_q8_bytes(e4 == 0 ? raw[u][o].x : e4 == 1 ? raw[u][o].y
                                : e4 == 2 ? raw[u][o].z : raw[u][o].w, qv[o]);
#pragma unroll
                for (int r = 0; r < MR; r++) {
                    float xv[4];
                    if constexpr (X4) {
                        const float4 v = __ldg(reinterpret_cast<const float4 *>(xr.x[r] + at) + e4);
                        xv[0] = v.x, xv[1] = v.y, xv[2] = v.z, xv[3] = v.w;
                    } else {
#pragma unroll
                        for (int e = 0; e < 4; e++) xv[e] = __ldg(xr.x[r] + (at + 4 * e4 + e) * xr.a_cs);
                    }
#pragma unroll
                    for (int o = 0; o < O; o++)
#pragma unroll
                        for (int e = 0; e < 4; e++) part[o][r] = fmaf(xv[e], qv[o][e], part[o][r]);
                }
            }
#pragma unroll
            for (int o = 0; o < O; o++) {
                /* k < 2^32 (the host's 32-bit test): a 32-bit division */
                const float sc = GROUPED ? __ldg(s[o] + (head + at) / group * sg) : 1.f;
#pragma unroll
                for (int r = 0; r < MR; r++) acc[o][r] = fmaf(sc, part[o][r], acc[o][r]);
            }
        }
    }
}

/* Outputs o0 .. o0 + O - 1 (those past n read row n - 1 and store nothing) for all m rows
 * of x, MR at a time, by the whole block: the chunks (cv_q8_body), then the bytes before
 * the rows' first aligned one and after their last whole chunk (all the bytes without
 * vec); shuffles, then shared memory, add the threads' sums. The O rows share their
 * alignment (O == 1, or q's row stride a multiple of 16). */
template <int MR, int O, class Epi>
__device__ __forceinline__ void cv_q8_outputs(const cv_gpu_term &t, const cv_q8_weight &w,
                                              const float *x, int64_t bat, int64_t m,
                                              int64_t o0, int64_t n, float *red, const Epi &epi) {
    constexpr int BT = CV_GEMV_Q8_BLOCK;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int64_t k = t.k, g = w.group;
    const int8_t *qrow[O];
    const float *srow[O];
#pragma unroll
    for (int o = 0; o < O; o++) {
        const int64_t at = o0 + o < n ? o0 + o : n - 1;
        qrow[o] = w.q + at * w.q_os;
        srow[o] = w.s + at * w.s_os;
    }
    int64_t head = 0, chunks = 0;
    if (w.vec) {
        head = (16 - (int64_t)((uintptr_t)qrow[0] & 15)) & 15;
        if (head > k) head = k;
        chunks = (k - head) >> 4;
    }
    const int4 *body[O];
#pragma unroll
    for (int o = 0; o < O; o++) body[o] = reinterpret_cast<const int4 *>(qrow[o] + head);
    for (int64_t row0 = 0; row0 < m; row0 += MR) {
        cv_q8_rows xr{{}, t.a_cs};
        bool x4 = t.a_cs == 1; /* x[row, head + 16 c] aligned for every row */
#pragma unroll
        for (int r = 0; r < MR; r++) {
            xr.x[r] = x + (row0 + r < m ? row0 + r : m - 1) * t.a_rs + head * t.a_cs;
            x4 = x4 && ((uintptr_t)xr.x[r] & 15) == 0;
        }
        float acc[O][MR];
#pragma unroll
        for (int o = 0; o < O; o++)
#pragma unroll
            for (int r = 0; r < MR; r++) acc[o][r] = 0.f;
        /* each case its own loop, without a test per chunk */
        const uint32_t h = (uint32_t)head, gr = (uint32_t)g;
        const int nc = (int)chunks;
        if (x4 && g == 0) cv_q8_body<MR, O, true, false>(body, xr, srow, h, 1, 0, nc, acc);
        else if (x4) cv_q8_body<MR, O, true, true>(body, xr, srow, h, gr, w.s_gs, nc, acc);
        else if (g == 0) cv_q8_body<MR, O, false, false>(body, xr, srow, h, 1, 0, nc, acc);
        else cv_q8_body<MR, O, false, true>(body, xr, srow, h, gr, w.s_gs, nc, acc);
        const int64_t end = head + 16 * chunks, rest = head + (k - end);
        for (int64_t i = tid; i < rest; i += BT) {
            const int64_t p = i < head ? i : end + (i - head);
#pragma unroll
            for (int o = 0; o < O; o++) {
                const float qv = (float)__ldg(qrow[o] + p) *
                                 (g > 0 ? __ldg(srow[o] + (uint32_t)p / (uint32_t)g * w.s_gs) : 1.f);
#pragma unroll
                for (int r = 0; r < MR; r++)
                    acc[o][r] = fmaf(__ldg(xr.x[r] + (p - head) * t.a_cs), qv, acc[o][r]);
            }
        }
#pragma unroll
        for (int o = 0; o < O; o++)
#pragma unroll
            for (int r = 0; r < MR; r++) {
                float v = acc[o][r];
#pragma unroll
                for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
                if (lane == 0) red[warp * O * MR + o * MR + r] = v;
            }
        __syncthreads();
        if (tid < O * MR) {
            const int o = tid / MR, r = tid % MR;
            float v = 0.f;
#pragma unroll
            for (int i = 0; i < BT / 32; i++) v += red[i * O * MR + tid];
            if (row0 + r < m && o0 + o < n)
                epi(bat, row0 + r, o0 + o, g > 0 ? v : v * __ldg(srow[o]));
        }
        __syncthreads(); /* red is reused */
    }
}

/* Up to 16 rows of x: MR = 1 (one row; an entry point of its own, so that its registers
 * are not the four rows') or 4 (four rows at a time). A block takes CV_GEMV_Q8_OUTS
 * outputs at a time (block-stride over n; batches over grid.y), one at a time where q's
 * rows differ in alignment. */
template <int MR, class Epi>
__device__ void cv_gemv_q8(const cv_gpu_term &t, const cv_q8_weight &w, int64_t m, int64_t n,
                           int64_t nbatch, const Epi &epi) {
    constexpr int O = CV_GEMV_Q8_OUTS;
    __shared__ float red[CV_GEMV_Q8_BLOCK / 32 * O * MR];
    const bool shared = !w.vec || (w.q_os & 15) == 0;
    for (int64_t bat = blockIdx.y; bat < nbatch; bat += gridDim.y) {
        const float *x = reinterpret_cast<const float *>(t.a) + bat * t.a_bs;
        for (int64_t o0 = (int64_t)blockIdx.x * O; o0 < n; o0 += (int64_t)gridDim.x * O) {
            if (shared) {
                cv_q8_outputs<MR, O>(t, w, x, bat, m, o0, n, red, epi);
            } else {
                for (int o = 0; o < O && o0 + o < n; o++)
                    cv_q8_outputs<MR, 1>(t, w, x, bat, m, o0 + o, n, red, epi);
            }
        }
    }
}
#endif

#endif
