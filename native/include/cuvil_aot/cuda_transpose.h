/* A GEMM operand copied K-major for the Hopper wgmma main loop (cuda_gemm_wgmma.h), which
 * reads K-major tiles only: TF32 wgmma takes both operands from shared memory K-major (the
 * transpose bit exists for 16-bit types only). GPT-2 style code writes `x @ w` with w of
 * shape (in, out), contiguous along out: its B is N-major. The host (gpu_wrap.h's
 * cv_gpu_wg_transposed, generated code: codegen/gpu_wg_transpose.py) copies such an operand
 * into scratch memory of the call, transposed, as one launch of the call's list before the
 * GEMM's (so a CUDA graph replay reads the current pointers), then maps the copy.
 *
 * out[z][r][c] = in[z * bs + r * rs + c * cs] for z < nb, r < rows, c < cols: rows `ld`
 * elements apart (ld >= cols, a multiple of 4: TMA's 16-byte rows), batches rows * ld apart.
 * For a B of k x n (element [p, j] at p * b_rs + j * b_cs): rows n, cols k, rs b_cs, cs b_rs.
 * For an A of m x k: rows m, cols k, rs a_rs, cs a_cs.
 *
 * The kernel: a block of 32 x 8 threads per 32 x 32 tile (grid-stride over tiles and
 * batches), the tile through shared memory (33 floats a row: no bank conflicts): read with
 * the lanes along r (the input's contiguous axis where it is transposed: 128 bytes a warp),
 * written with the lanes along c (the output's: 128 bytes a warp). Any strides are
 * correct; only unit rs reads coalesced. Included by gpu_wrap.h (the argument struct) and by
 * a unit with the wgmma entry (codegen/gpu_plan.py). */
#ifndef CUVIL_AOT_CUDA_TRANSPOSE_H
#define CUVIL_AOT_CUDA_TRANSPOSE_H

#include <stdint.h>

/* The same text in C and C++: pointers and int64_t, one layout. */
typedef struct {
    const float *in;
    float *out;
    int64_t rows, cols, nb, rs, cs, bs, ld;
} cv_transpose_args;

#define CV_TRANSPOSE_TILE 32
#define CV_TRANSPOSE_BLOCK 256 /* 32 x 8: 4 elements a thread a tile */

/* The tiles of a copy: its grid has a block per tile (at most 2^31 - 1, then they loop). */
static inline int64_t cv_transpose_tiles(const cv_transpose_args *a) {
    const int64_t t = CV_TRANSPOSE_TILE;
    return (a->rows + t - 1) / t * ((a->cols + t - 1) / t) * a->nb;
}

#ifdef __CUDACC__
extern "C" __global__ void __launch_bounds__(CV_TRANSPOSE_BLOCK)
    cv_transpose_f32(const __grid_constant__ cv_transpose_args a) {
    __shared__ float tile[CV_TRANSPOSE_TILE][CV_TRANSPOSE_TILE + 1];
    const int64_t tr = (a.rows + CV_TRANSPOSE_TILE - 1) / CV_TRANSPOSE_TILE;
    const int64_t per = tr * ((a.cols + CV_TRANSPOSE_TILE - 1) / CV_TRANSPOSE_TILE);
    const int lane = threadIdx.x & 31, wy = threadIdx.x >> 5;
    for (int64_t w = blockIdx.x; w < per * a.nb; w += gridDim.x) {
        const int64_t z = w / per, t = w - z * per;
        const int64_t r0 = t % tr * CV_TRANSPOSE_TILE, c0 = t / tr * CV_TRANSPOSE_TILE;
        const float *src = a.in + z * a.bs;
        float *dst = a.out + z * a.rows * a.ld;
        float v[CV_TRANSPOSE_TILE * 32 / CV_TRANSPOSE_BLOCK];
#pragma unroll /* every load issued before the first store: 4 in flight a thread */
        for (int j = 0; j < CV_TRANSPOSE_TILE * 32 / CV_TRANSPOSE_BLOCK; j++) {
            const int64_t r = r0 + lane, c = c0 + wy + j * (CV_TRANSPOSE_BLOCK / 32);
            v[j] = r < a.rows && c < a.cols ? src[r * a.rs + c * a.cs] : 0.f; /* lanes along r */
        }
#pragma unroll
        for (int j = 0; j < CV_TRANSPOSE_TILE * 32 / CV_TRANSPOSE_BLOCK; j++)
            tile[wy + j * (CV_TRANSPOSE_BLOCK / 32)][lane] = v[j];
        __syncthreads();
#pragma unroll
        for (int j = 0; j < CV_TRANSPOSE_TILE * 32 / CV_TRANSPOSE_BLOCK; j++) {
            const int i = wy + j * (CV_TRANSPOSE_BLOCK / 32);
            const int64_t r = r0 + i, c = c0 + lane; /* lanes along c: the output's */
            if (r < a.rows && c < a.cols) dst[r * a.ld + c] = tile[lane][i];
        }
        __syncthreads(); /* the next tile overwrites it */
    }
}
#endif

#endif
