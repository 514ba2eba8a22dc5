/* The split-K sums (cuda_gemm_tiled.h's cv_gemm_ksum) and the wgmma loop's work items
 * (cuda_wg_work.h) on the host, for tests/test_split_sums_host.py: a grid's blocks and
 * their threads one after another, with stand-ins for the CUDA names the headers use
 * (nothing in the sums waits on another thread). */
#include <cmath>
#include <cstdint>
#include <cstring>
using std::fabs;
#define __device__
#define __host__
#define __forceinline__ inline
#define __global__
#define __shared__ static
struct cv_dim3 { unsigned x, y, z; };
static cv_dim3 blockIdx, threadIdx, blockDim, gridDim;
template <class T> T __ldg(const T *p) { return *p; }
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline void __syncthreads() {}
static inline void __syncwarp(unsigned = 0xffffffffu) {}
template <class T> T __shfl_xor_sync(unsigned, T v, int, int = 32) { return v; }
template <class T> T __shfl_down_sync(unsigned, T v, int, int = 32) { return v; }
template <class T> T __shfl_sync(unsigned, T v, int, int = 32) { return v; }
#include "cuvil_aot/cuda_gemm_tiled.h"
#include "cuvil_aot/cuda_wg_work.h"

struct store_epi { /* out[b][i][j] = acc + bias[j], m x n a batch */
    float *out;
    const float *bias;
    int64_t m, n;
    void operator()(int64_t b, int64_t i, int64_t j, float acc) const {
        out[(b * m + i) * n + j] = acc + bias[j];
    }
};

/* cv_gemm_ksum of rows [row0, m) of each batch over `blocks` x `threads`. */
extern "C" void ksum(const float *part, int split, int64_t m, int64_t n, int64_t nb,
                     int64_t row0, const float *bias, float *out, unsigned blocks,
                     unsigned threads) {
    const store_epi epi{out, bias, m, n};
    blockDim.x = threads, gridDim.x = blocks;
    for (blockIdx.x = 0; blockIdx.x < blocks; blockIdx.x++)
        for (threadIdx.x = 0; threadIdx.x < threads; threadIdx.x++)
            cv_gemm_ksum<float>(part, split, m, n, nb, epi, row0);
}

/* out = a @ b.T + bias (a: m x k, b: n x k, one batch) as the wgmma loop splits it: every
 * work item (cv_wg_items, cv_wg_item) sums its tile (128 x bn) over its chunk's k-blocks
 * (cv_wg_chunk, 32 deep) and hands the sums to cv_split_epi, as the loop's consumers do
 * (whole tiles to the epilogue, split ones to part, rows from row0 on); then the sums
 * (ksum above). Returns the items. */
extern "C" int64_t wg_gemm(const float *a, const float *b, int64_t m, int64_t n, int64_t k,
                           int bn, int split, int64_t row0, const float *bias, float *out,
                           float *part, unsigned blocks, unsigned threads) {
    const store_epi epi{out, bias, m, n};
    const int64_t tiles_n = (n + bn - 1) / bn, tiles = (m + 127) / 128 * tiles_n;
    int64_t whole;
    const int64_t work = cv_wg_items(tiles, tiles_n, 1, split, row0, whole);
    for (int64_t w = 0; w < work; w++) {
        const cv_wg_it it = cv_wg_item(w, tiles, 1, whole, split);
        int64_t k0;
        int kblocks;
        cv_wg_chunk<32>(k, it.s, it.split, k0, kblocks);
        const int64_t k1 = k0 + kblocks * 32 < k ? k0 + kblocks * 32 : k;
        const cv_split_epi<float, store_epi> o{epi, it.split > 1 ? part : nullptr, m - row0, n,
                                               1, it.s, row0};
        const int64_t r0 = it.tile / tiles_n * 128, c0 = it.tile % tiles_n * bn;
        for (int64_t i = r0; i < m && i < r0 + 128; i++)
            for (int64_t j = c0; j < n && j < c0 + bn; j++) {
                float acc = 0;
                for (int64_t p = k0; p < k1; p++) acc += a[i * k + p] * b[j * k + p];
                o(it.bat, i, j, acc);
            }
    }
    if (split > 1) ksum(part, split, m, n, 1, row0, bias, out, blocks, threads);
    return work;
}
