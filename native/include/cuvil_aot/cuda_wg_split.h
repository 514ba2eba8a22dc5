/* CUDA C++, for nvcc (and the host emulation in tests/test_wgmma_copies.py). The 3xTF32
 * split of the Hopper GEMM's landed float32 tiles in shared memory (cuda_gemm_wgmma.h):
 * big = tf32(x) in place, small = tf32(x - big) at the same position of the small tile,
 * and the same for a B tile that landed N-major, transposed into the K-major layout on the
 * way. A K-major tile: row r (128 bytes: 32 floats of k) at r * 128, its 16-byte chunk c
 * (k 4c .. 4c + 3) at chunk c ^ (r % 8) (the 128-byte swizzle; tiles 1024-aligned). */
#ifndef CUVIL_AOT_CUDA_WG_SPLIT_H
#define CUVIL_AOT_CUDA_WG_SPLIT_H

#include "cuvil_aot/cuda_gemm_tc.h"   /* cv_split_tf32 */
#include "cuvil_aot/cuda_wgmma_ops.h" /* cv_bar_sync, CV_WGMMA_OK */

#if defined(CV_WGMMA_OK)

/* 3xTF32: this thread's `count` 16-byte chunks of a landed fp32 tile at `raw`
 * (chunks first, first + 128, ...) become big in place and small at `small`. */
CV_DEV void cv_wg_split(unsigned char *raw, unsigned char *small, int first, int count) {
#pragma unroll 4
    for (int i = 0; i < count; i++) {
        const int off = (first + i * 128) * 16;
        float4 v = *reinterpret_cast<const float4 *>(raw + off), s;
        uint32_t b0, b1, b2, b3, s0, s1, s2, s3;
        cv_split_tf32(v.x, b0, s0);
        cv_split_tf32(v.y, b1, s1);
        cv_split_tf32(v.z, b2, s2);
        cv_split_tf32(v.w, b3, s3);
        v = make_float4(__uint_as_float(b0), __uint_as_float(b1), __uint_as_float(b2),
                        __uint_as_float(b3));
        s = make_float4(__uint_as_float(s0), __uint_as_float(s1), __uint_as_float(s2),
                        __uint_as_float(s3));
        *reinterpret_cast<float4 *>(raw + off) = v;
        *reinterpret_cast<float4 *>(small + off) = s;
    }
}

/* 3xTF32 over an N-major B (x @ w of an (in, out) weight: n contiguous): consumer c's
 * half of the landed B tile, BK = 32 rows of k x BN / 2 columns of n as TMA wrote it
 * (cv_wg_run's producer: a box of each half, no swizzle) at raw, becomes rows BN / 2 * c
 * .. of the K-major tile (big in place, small at `small`), as cv_wg_split leaves a
 * K-major one: row n's 16-byte chunk kc (k 4 kc .. 4 kc + 3) at n * 128 + (kc ^ (n % 8)) *
 * 16. The half's bytes are the same in both layouts, so the consumer's threads read it
 * all, meet at a named barrier (2 + c, the consumer's 128 threads), then write. A warp
 * reads 32 consecutive n of one k (no bank conflict) and writes 8 rows' distinct chunks
 * a quarter (none either). */
template <int BN>
CV_DEV void cv_wg_split_nmajor(unsigned char *raw, unsigned char *small, int c) {
    constexpr int HALF = BN / 2, PER = BN / 32; /* chunks of a thread: HALF * 8 / 128 */
    const int tid = threadIdx.x & 127, nn = tid % HALF, kc0 = tid / HALF;
    const float *in = reinterpret_cast<const float *>(raw);
    float v[PER][4];
#pragma unroll
    for (int i = 0; i < PER; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) v[i][j] = in[(4 * (kc0 + i * (128 / HALF)) + j) * HALF + nn];
    cv_bar_sync(2 + c, 128); /* the half read before any of it is overwritten */
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int kc = kc0 + i * (128 / HALF), off = nn * 128 + ((kc ^ (nn & 7)) << 4);
        uint32_t b[4], s[4];
#pragma unroll
        for (int j = 0; j < 4; j++) cv_split_tf32(v[i][j], b[j], s[j]);
        *reinterpret_cast<uint4 *>(raw + off) = make_uint4(b[0], b[1], b[2], b[3]);
        *reinterpret_cast<uint4 *>(small + off) = make_uint4(s[0], s[1], s[2], s[3]);
    }
}

#endif /* CV_WGMMA_OK */

#endif
