/* CUDA C++, for nvcc only. The float4 GEMV of up to CV_GEMV_ROWS rows a tile
 * (cv_gemv_vec_rows): B, the weight of x @ w with w (k, n) and its columns contiguous (an
 * (in, out) weight, GPT-2's Conv1D), read once as float4s for every CV_GEMV_ROWS rows of A.
 * cv_gemv_vec takes one row a tile and cv_gemv's four-row tiles read B a float at a time:
 * a decode step of 8 sequences either read its weights once a row (GPT-2's four
 * projections 80.8 us on an H100 as 8 batches of one row, the weights 8 times from L2) or
 * folded into four-row tiles took 102.9 us.
 *
 * Lanes and warps as cv_gemv_vec: a tile is CV_GEMV_ROWS rows x `cols` columns (8, 16 or
 * 32), a lane 4 consecutive columns (cols / 4 lanes across a row of B), the rest of the
 * warp's lanes and the block's warps step through k; their sums meet in shared memory.
 * Each lane holds 4 x CV_GEMV_ROWS sums: blocks of CV_GEMV_ROWS_THREADS, whose registers
 * hold them (at CV_GEMV_THREADS, 64 registers a thread, they would spill). Rows past m
 * read row m - 1, not stored. The host checked: float32, n % 4 == 0, B's columns
 * contiguous, its rows and batches 16-byte aligned, offsets within a batch in 32 bits. */
#ifndef CUVIL_AOT_CUDA_GEMV_ROWS_H
#define CUVIL_AOT_CUDA_GEMV_ROWS_H

#include "cuvil_aot/cuda_gemv.h"

#define CV_GEMV_ROWS 8
#define CV_GEMV_ROWS_THREADS 256

/* One term's share: rows k = first, first + step, ... of B's 4 columns from `col`, LOADS
 * float4s in flight before the first FMA. */
template <int MR, int LOADS>
CV_DEV void cv_gemv_rows_term(const cv_gpu_term &t, int64_t bat, int m, int row0, int col,
                              int first, int step, float (&acc)[MR][4]) {
    const float *a = reinterpret_cast<const float *>(t.a) + bat * t.a_bs;
    const float *b = reinterpret_cast<const float *>(t.b) + bat * t.b_bs + col;
    const int k_end = (int)t.k, b_rs = (int)t.b_rs, a_cs = (int)t.a_cs;
    int arow[MR];
#pragma unroll
    for (int r = 0; r < MR; r++) arow[r] = (row0 + r < m ? row0 + r : m - 1) * (int)t.a_rs;
    for (int k = first; k < k_end; k += LOADS * step) {
        float4 w[LOADS];
#pragma unroll
        for (int u = 0; u < LOADS; u++)
            w[u] = k + u * step < k_end
                       ? __ldg(reinterpret_cast<const float4 *>(b + (k + u * step) * b_rs))
                       : float4{0, 0, 0, 0};
#pragma unroll
        for (int u = 0; u < LOADS; u++)
            if (k + u * step < k_end) {
                const int kk = (k + u * step) * a_cs;
#pragma unroll
                for (int r = 0; r < MR; r++) {
                    const float x = __ldg(a + arow[r] + kk);
                    acc[r][0] = fmaf(x, w[u].x, acc[r][0]), acc[r][1] = fmaf(x, w[u].y, acc[r][1]);
                    acc[r][2] = fmaf(x, w[u].z, acc[r][2]), acc[r][3] = fmaf(x, w[u].w, acc[r][3]);
                }
            }
    }
}

/* Tiles of CV_GEMV_ROWS rows x cols columns, block-strided over grid.x (column tiles
 * first, then row groups), batches over grid.y. */
template <int LOADS = 4, class Epi>
CV_DEV void cv_gemv_vec_rows(const cv_gpu_term *terms, int nterms, int m, int n,
                             int64_t nbatch, int cols, const Epi &epi) {
    constexpr int MR = CV_GEMV_ROWS;
    static_assert(CV_GEMV_ROWS_THREADS / 32 * MR * 32 * sizeof(float) <=
                      CV_GEMV_THREADS / 32 * CV_GEMV_MAX_MR * 32 * sizeof(double),
                  "the partial sums fit the GEMV's shared buffer");
    float (*part)[MR][32] = reinterpret_cast<float (*)[MR][32]>(cv_gemv_buffer());
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const int lanes_log = __ffs(cols) - 3, lanes = 1 << lanes_log; /* cols / 4 */
    const int mine = (lane & (lanes - 1)) * 4;
    const int first = (warp << (5 - lanes_log)) + (lane >> lanes_log);
    const int step = nwarps << (5 - lanes_log);
    const int tiles_n = (n + cols - 1) / cols, tiles = tiles_n * ((m + MR - 1) / MR);
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int row0 = tile / tiles_n * MR, col0 = tile % tiles_n * cols;
        for (int64_t bat = blockIdx.y; bat < nbatch; bat += gridDim.y) {
            float acc[MR][4];
#pragma unroll
            for (int r = 0; r < MR; r++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[r][e] = 0;
            if (col0 + mine < n)
                for (int t = 0; t < nterms; t++)
                    cv_gemv_rows_term<MR, LOADS>(terms[t], bat, m, row0, col0 + mine, first,
                                                 step, acc);
#pragma unroll
            for (int r = 0; r < MR; r++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
#pragma unroll
                    for (int off = 16; off >= 2; off >>= 1)
                        if (off >= lanes) acc[r][e] += cv_shfl_xor(acc[r][e], off);
                    if (lane < lanes) part[warp][r][mine + e] = acc[r][e];
                }
            __syncthreads();
            for (int i = threadIdx.x; i < MR * cols; i += blockDim.x) {
                const int r = i / cols, c = i % cols;
                float sum = 0;
                for (int v = 0; v < nwarps; v++) sum += part[v][r][c];
                if (row0 + r < m && col0 + c < n) epi(bat, row0 + r, col0 + c, sum);
            }
            __syncthreads(); /* part[] is the next batch's or tile's */
        }
    }
}

#endif
