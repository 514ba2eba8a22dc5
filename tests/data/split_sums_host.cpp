/* The split-K sums (cuda_gemm_tiled.h's cv_gemm_ksum) on the host, for
 * tests/test_split_sums_host.py: a grid's blocks and their threads one after another, with
 * stand-ins for the CUDA names the headers use (nothing in the sums waits on another
 * thread). */
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

struct store_epi { /* out[b][i][j] = acc + bias[j], m x n a batch */
    float *out;
    const float *bias;
    int64_t m, n;
    void operator()(int64_t b, int64_t i, int64_t j, float acc) const {
        out[(b * m + i) * n + j] = acc + bias[j];
    }
};

extern "C" void ksum(const float *part, int split, int64_t m, int64_t n, int64_t nb,
                     const float *bias, float *out, unsigned blocks, unsigned threads) {
    const store_epi epi{out, bias, m, n};
    blockDim.x = threads, gridDim.x = blocks;
    for (blockIdx.x = 0; blockIdx.x < blocks; blockIdx.x++)
        for (threadIdx.x = 0; threadIdx.x < threads; threadIdx.x++)
            cv_gemm_ksum<float>(part, split, m, n, nb, epi);
}
