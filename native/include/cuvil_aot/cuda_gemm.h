/* CUDA C++, for nvcc only. GEMM main loops of generated GEMM kernels, in
 * fp32/fp64 arithmetic.
 *
 * A kernel computes C[b] = sum over terms of A_t[b] @ B_t[b] and hands every
 * finished element to an epilogue functor, epi(b, i, j, acc), which computes
 * and stores the group's roots. Three main loops, picked by the host:
 *  - cv_gemm_tiled (cuda_gemm_tiled.h): 128x128 (or 64x64) block tiles, 8x8
 *    (4x4) per thread, double-buffered shared memory. Any strides (scalar
 *    global loads).
 *  - cv_gemv (cuda_gemv.h): small m (up to 32); with a transposed B, cv_gemv_dot (on
 *    tensor cores for up to 16 float32 rows: cuda_gemv_mma.h). Reads each weight once per 4
 *    rows: a block owns `cols` columns, its 32 warps split k, partial sums meet
 *    in shared memory. float4 loads of the weights where they are contiguous
 *    and aligned.
 *  - cv_gemm_tc (cuda_gemm_tc.h): float32 on tensor cores (sm_80+), 3xTF32 for
 *    float32 accuracy; A with k contiguous, B with n (or k) contiguous, 16-byte
 *    aligned rows. The host checks the layout; on older GPUs it is
 *    cv_gemm_tiled.
 * All take the epilogue the same way, and hand it a tile's finished elements
 * at one call site in a loop (staged through shared memory: cv_tile_out). Where
 * the tiles are too few for the SMs, the tiled loops split k in chunks (split-K,
 * cv_term_chunk) and cv_gemm_ksum adds the chunks' partial sums for the epilogue.
 */
#ifndef CUVIL_AOT_CUDA_GEMM_H
#define CUVIL_AOT_CUDA_GEMM_H

#include "cuvil_aot/cuda_gemm_tiled.h"
#include "cuvil_aot/cuda_gemm_tc.h"
#include "cuvil_aot/cuda_gemv.h"
#include "cuvil_aot/cuda_gemv_rows.h"

/* What the main loops need of one GEMM: a unit's GEMMs share its main loops, each
 * launch naming its GEMM by a tag, whose arguments the generated code reads into this
 * (cuda_gemm.py's shared_gemms). */
struct cv_gemm_job {
    const cv_gpu_term *t;
    int nterms;
    int64_t m, n, nb;
    int split;
    char *part;
    int cols, vec;
    int64_t row0; /* split only rows row0 and on (the wgmma loop's tail; 0: all) */
};

#endif
