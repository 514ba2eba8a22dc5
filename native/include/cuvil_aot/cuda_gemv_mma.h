/* CUDA C++, for nvcc only. The dot GEMV on tensor cores (sm_80+): x @ w.T for up to 16
 * rows of x, float32, 3xTF32 (see cuda_gemm_tc.h). cv_gemv_dot takes it where A's and
 * B's rows run along k, contiguous and 16-byte aligned, k % 4 == 0 (its `vec`). */
#ifndef CUVIL_AOT_CUDA_GEMV_MMA_H
#define CUVIL_AOT_CUDA_GEMV_MMA_H

#include "cuvil_aot/cuda_gemm_tc.h"

/* The FMA dot GEMV read x's rows once per tile of 4 columns: at 16 rows it moved 8 times
 * the weights' bytes and spent 16 FMAs on each weight (12 us for a 768 x 2304 weight on
 * the H200, against 1.5 us of its bytes at the copy rate). Here the 16 rows are one mma
 * m16n8k8 A operand: a weight is read once, split into its two TF32 parts and used in
 * three mma, and x is read once per 8 * NT columns.
 *
 * A block owns tiles of 8 * NT columns (grid-strided over grid.x, batches over grid.y);
 * its warps split k in chunks of 16 (warp w: chunks w, w + warps, ...). In a chunk lane
 * (g, t) loads x[g][k0 + 4t .. +3], x[g + 8][...] and w[col0 + 8j + g][k0 + 4t .. +3]
 * as float4s: fragment k-columns (t, t + 4) are k0 + 4t + (0, 1) in the first mma slab
 * and k0 + 4t + (2, 3) in the second, the same permutation of k in A and B. U chunks'
 * loads go out before their mma. Rows past m read row m - 1 (not stored); a column past
 * n reads column n - 1 (not stored). Each slab's three products are added to the
 * accumulators with a rounded FADD (cuda_gemm_tc.h says why). The warps' sums meet in
 * shared memory, then go to the epilogue. */
template <int NT>
CV_DEV void cv_gemv_mma_slab(float x0, float x1, float x2, float x3, const float (&w)[NT][2],
                             float (&acc)[NT][4]) {
    uint32_t ab[4], as[4];
    cv_split_tf32(x0, ab[0], as[0]);
    cv_split_tf32(x1, ab[1], as[1]);
    cv_split_tf32(x2, ab[2], as[2]);
    cv_split_tf32(x3, ab[3], as[3]);
#pragma unroll
    for (int j = 0; j < NT; j++) {
        uint32_t bb[2], bs[2];
        cv_split_tf32(w[j][0], bb[0], bs[0]);
        cv_split_tf32(w[j][1], bb[1], bs[1]);
        float part[4] = {0, 0, 0, 0};
        cv_mma_tf32(part, as, bb); /* the small terms first */
        cv_mma_tf32(part, ab, bs);
        cv_mma_tf32(part, ab, bb);
#pragma unroll
        for (int e = 0; e < 4; e++) acc[j][e] += part[e];
    }
}

template <int NT, int U>
CV_DEV void cv_gemv_mma_term(const cv_gpu_term &tm, int64_t bat, int64_t m, int64_t n,
                             int64_t col0, float (&acc)[NT][4]) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    const float *a = reinterpret_cast<const float *>(tm.a) + bat * tm.a_bs;
    const float *b = reinterpret_cast<const float *>(tm.b) + bat * tm.b_bs;
    const float *row0 = a + (g < m ? g : m - 1) * tm.a_rs + 4 * t;
    const float *row1 = a + (g + 8 < m ? g + 8 : m - 1) * tm.a_rs + 4 * t;
    const float *col[NT];
#pragma unroll
    for (int j = 0; j < NT; j++) {
        const int64_t c = col0 + 8 * j + g;
        col[j] = b + (c < n ? c : n - 1) * tm.b_cs + 4 * t;
    }
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int64_t k0 = (int64_t)warp * 16; k0 < tm.k; k0 += (int64_t)warps * 16 * U) {
        float4 x[U][2], w4[U][NT];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t k = k0 + (int64_t)u * warps * 16;
            const bool in = k + 4 * t < tm.k; /* k % 4 == 0: a float4 is in or out whole */
            x[u][0] = in ? __ldg(reinterpret_cast<const float4 *>(row0 + k)) : zero;
            x[u][1] = in ? __ldg(reinterpret_cast<const float4 *>(row1 + k)) : zero;
#pragma unroll
            for (int j = 0; j < NT; j++)
                w4[u][j] = in ? __ldg(reinterpret_cast<const float4 *>(col[j] + k)) : zero;
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            float lo[NT][2], hi[NT][2];
#pragma unroll
            for (int j = 0; j < NT; j++) {
                lo[j][0] = w4[u][j].x, lo[j][1] = w4[u][j].y;
                hi[j][0] = w4[u][j].z, hi[j][1] = w4[u][j].w;
            }
            cv_gemv_mma_slab<NT>(x[u][0].x, x[u][1].x, x[u][0].y, x[u][1].y, lo, acc);
            cv_gemv_mma_slab<NT>(x[u][0].z, x[u][1].z, x[u][0].w, x[u][1].w, hi, acc);
        }
    }
}

/* `buffer`: shared memory for blockDim.x / 32 x 16 x 8 * NT floats. */
template <int NT, int U, class Epi>
CV_DEV void cv_gemv_dot_mma(const cv_gpu_term *terms, int nterms, int64_t m, int64_t n,
                            int64_t nbatch, unsigned char *buffer, const Epi &epi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    constexpr int COLS = 8 * NT;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    float (*part)[16][COLS] = reinterpret_cast<float (*)[16][COLS]>(buffer);
    const int64_t tiles = (n + COLS - 1) / COLS;
    for (int64_t bat = blockIdx.y; bat < nbatch; bat += gridDim.y)
        for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            const int64_t col0 = tile * COLS;
            float acc[NT][4];
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[j][e] = 0;
            for (int q = 0; q < nterms; q++)
                cv_gemv_mma_term<NT, U>(terms[q], bat, m, n, col0, acc);
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) /* rows g, g, g + 8, g + 8; cols 2t, 2t + 1 */
                    part[warp][g + (e >> 1) * 8][8 * j + 2 * t + (e & 1)] = acc[j][e];
            __syncthreads();
            for (int i = threadIdx.x; i < 16 * COLS; i += blockDim.x) {
                const int r = i / COLS, c = i % COLS;
                float sum = 0;
                for (int v = 0; v < warps; v++) sum += part[v][r][c];
                if (r < m && col0 + c < n) epi(bat, r, col0 + c, sum);
            }
            __syncthreads(); /* part[] is the next tile's */
        }
#endif
}

#endif
