// Batch-1 GEMV y = x @ W (W row-major k x n, float32) on the device machine (issue 6): the
// runtime's cv_gemv (as generated code calls it) against a split-k kernel: float4 of W per
// lane (a warp reads 512 contiguous bytes of a row), each block a 128-column tile over a
// slice of k, partial sums to scratch and the last block of a tile adding them in order
// (deterministic). W hot in L2 (the same W every call) and cold (16 copies, 2x the L2).
//   nvcc -O3 -std=c++17 -arch=sm_90 -I../../native/include gemv_probe.cu -o g && ./g
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "cuvil_aot/cuda_gemm.h"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

struct Store {
    float *y;
    __device__ void operator()(int64_t, int64_t, int64_t j, float acc) const { y[j] = acc; }
};

__global__ void __launch_bounds__(1024) current(cv_gpu_term t, int64_t n, int cols, Store epi) {
    cv_gemv<float, 1>(&t, 1, 1, n, 1, cols, 0, epi);  // vec 0: the scalar loads
}

// grid (n / 128, S); block 256: warp w of slice s sums rows [k0 + w * R, k0 + (w + 1) * R).
template <int R>
__global__ void __launch_bounds__(256) splitk(const float *x, const float4 *w, float *y,
                                              float *part, unsigned *count, int k, int n) {
    __shared__ float4 red[8][32];
    __shared__ bool last;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n4 = n / 4;
    const int col4 = blockIdx.x * 32 + lane, k0 = (blockIdx.y * 8 + warp) * R;
    float4 acc = {0, 0, 0, 0};
    if (col4 < n4) {
        float4 v[R];
#pragma unroll
        for (int r = 0; r < R; r++) v[r] = k0 + r < k ? __ldg(w + (size_t)(k0 + r) * n4 + col4) : float4{0, 0, 0, 0};
#pragma unroll
        for (int r = 0; r < R; r++) {
            const float a = k0 + r < k ? __ldg(x + k0 + r) : 0.f;
            acc.x = fmaf(a, v[r].x, acc.x); acc.y = fmaf(a, v[r].y, acc.y);
            acc.z = fmaf(a, v[r].z, acc.z); acc.w = fmaf(a, v[r].w, acc.w);
        }
    }
    red[warp][lane] = acc;
    __syncthreads();
    if (warp == 0) {
        for (int i = 1; i < 8; i++) {
            acc.x += red[i][lane].x; acc.y += red[i][lane].y; acc.z += red[i][lane].z; acc.w += red[i][lane].w;
        }
        if (col4 < n4) reinterpret_cast<float4 *>(part + (size_t)blockIdx.y * n)[col4] = acc;
        __threadfence();
    }
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&count[blockIdx.x], 1u) == gridDim.y - 1;
    __syncthreads();
    if (last && warp == 0 && col4 < n4) {
        __threadfence();
        float4 s = {0, 0, 0, 0};
        for (unsigned i = 0; i < gridDim.y; i++) {
            const float4 p = __ldcg(reinterpret_cast<const float4 *>(part + (size_t)i * n) + col4);
            s.x += p.x; s.y += p.y; s.z += p.z; s.w += p.w;
        }
        reinterpret_cast<float4 *>(y)[col4] = s;
        if (lane == 0) count[blockIdx.x] = 0;  // ready for the next call
    }
}

// cv_gemv's plan with float4 loads of W: a block owns `cols` columns (a multiple of 4),
// cols / 4 lanes cover a k-row of the tile, the block's warps split k; LOADS float4 in
// flight per thread; partial sums meet in shared memory. n a multiple of 4.
template <int LOADS>
__global__ void __launch_bounds__(1024) vec(const float *x, const float4 *w, float *y, int k, int n, int cols) {
    __shared__ float4 part[32][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const int lpr = cols / 4, rpw = 32 / lpr, n4 = n / 4;
    const int col4 = blockIdx.x * lpr + lane % lpr;
    const int first = warp * rpw + lane / lpr, step = nwarps * rpw;
    float4 acc = {0, 0, 0, 0};
    if (col4 < n4)
        for (int k0 = first; k0 < k; k0 += LOADS * step) {
            float4 v[LOADS];
            float a[LOADS];
#pragma unroll
            for (int u = 0; u < LOADS; u++) {
                const int r = k0 + u * step;
                v[u] = r < k ? __ldg(w + (size_t)r * n4 + col4) : float4{0, 0, 0, 0};
                a[u] = r < k ? __ldg(x + r) : 0.f;
            }
#pragma unroll
            for (int u = 0; u < LOADS; u++) {
                acc.x = fmaf(a[u], v[u].x, acc.x); acc.y = fmaf(a[u], v[u].y, acc.y);
                acc.z = fmaf(a[u], v[u].z, acc.z); acc.w = fmaf(a[u], v[u].w, acc.w);
            }
        }
    for (int off = 16; off >= lpr; off >>= 1) {
        acc.x += __shfl_xor_sync(~0u, acc.x, off); acc.y += __shfl_xor_sync(~0u, acc.y, off);
        acc.z += __shfl_xor_sync(~0u, acc.z, off); acc.w += __shfl_xor_sync(~0u, acc.w, off);
    }
    if (lane < lpr) part[warp][lane] = acc;
    __syncthreads();
    if (threadIdx.x < lpr && col4 < n4) {
        float4 s = part[0][threadIdx.x];
        for (int i = 1; i < nwarps; i++) {
            const float4 p = part[i][threadIdx.x];
            s.x += p.x; s.y += p.y; s.z += p.z; s.w += p.w;
        }
        reinterpret_cast<float4 *>(y)[col4] = s;
    }
}

int main() {
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    const int shapes[][2] = {{1024, 2048}, {512, 1000}, {768, 3072}, {3072, 768}};
    const int NW = 16;
    for (auto &sh : shapes) {
        const int k = sh[0], n = sh[1];
        const size_t wbytes = (size_t)k * n * 4;
        std::vector<float> hx(k), hw((size_t)k * n);
        srand(k + n);
        for (auto &v : hx) v = rand() / (float)RAND_MAX - 0.5f;
        for (auto &v : hw) v = rand() / (float)RAND_MAX - 0.5f;
        std::vector<double> ref(n, 0.0);
        for (int i = 0; i < k; i++) for (int j = 0; j < n; j++) ref[j] += (double)hx[i] * hw[(size_t)i * n + j];
        float *x, *y, *part, *w[NW]; unsigned *count;
        CK(cudaMalloc(&x, k * 4)); CK(cudaMalloc(&y, n * 4)); CK(cudaMalloc(&part, 128 * (size_t)n * 4));
        CK(cudaMalloc(&count, 4096 * 4)); CK(cudaMemset(count, 0, 4096 * 4));
        CK(cudaMemcpy(x, hx.data(), k * 4, cudaMemcpyHostToDevice));
        for (int i = 0; i < NW; i++) { CK(cudaMalloc(&w[i], wbytes)); CK(cudaMemcpy(w[i], hw.data(), wbytes, cudaMemcpyHostToDevice)); }
        auto time = [&](auto launch, bool cold) {
            launch(0); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
            std::vector<float> ts;
            for (int rep = 0; rep < 5; rep++) {
                CK(cudaEventRecord(e0));
                for (int i = 0; i < 64; i++) launch(cold ? i % NW : 0);
                CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
                float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); ts.push_back(ms * 1000 / 64);
            }
            std::sort(ts.begin(), ts.end());
            std::vector<float> hy(n);
            CK(cudaMemcpy(hy.data(), y, n * 4, cudaMemcpyDeviceToHost));
            double err = 0;
            for (int j = 0; j < n; j++) err = std::max(err, fabs(hy[j] - ref[j]));
            return std::make_pair(ts[2], err);
        };
        const float copy = time([&](int i) { cudaMemcpyAsync(w[(i + 1) % NW], w[i], wbytes, cudaMemcpyDeviceToDevice); }, true).first;
        printf("k=%d n=%d (%.1f MB): copy of W %.1f us (%.2f TB/s read+write)\n", k, n, wbytes / 1e6, copy, 2 * wbytes / copy / 1e6);
        for (bool cold : {false, true}) {
            for (int cols : {8, 16, 32}) {
                CK(cudaMemset(y, 0xff, n * 4));
                auto r = time([&](int i) {
                    cv_gpu_term t = {(const char *)x, 0, 1, 0, (const char *)w[i], n, 1, 0, k};
                    current<<<(n + cols - 1) / cols, 1024>>>(t, n, cols, Store{y});
                }, cold);
                printf("  %s cv_gemv cols=%-2d        %6.2f us  %5.2f TB/s  max err %.1e\n", cold ? "cold" : "hot ", cols, r.first, wbytes / r.first / 1e6, r.second);
            }
            for (int cols : {8, 16, 32, 64}) {
                CK(cudaMemset(y, 0xff, n * 4));
                auto r = time([&](int i) { vec<4><<<(n + cols - 1) / cols, 1024>>>(x, (const float4 *)w[i], y, k, n, cols); }, cold);
                printf("  %s float4 cols=%-2d         %6.2f us  %5.2f TB/s  max err %.1e\n", cold ? "cold" : "hot ", cols, r.first, wbytes / r.first / 1e6, r.second);
            }
            auto run = [&](auto kern, int R, const char *name) {
                const int tiles = (n / 4 + 31) / 32, slices = (k + 8 * R - 1) / (8 * R);
                CK(cudaMemset(y, 0xff, n * 4));
                auto r = time([&](int i) { kern<<<dim3(tiles, slices), 256>>>(x, (const float4 *)w[i], y, part, count, k, n); }, cold);
                printf("  %s split-k %-6s %3d blocks %6.2f us  %5.2f TB/s  max err %.1e\n", cold ? "cold" : "hot ", name, tiles * slices, r.first, wbytes / r.first / 1e6, r.second);
            };
            run(splitk<4>, 4, "R=4");
            run(splitk<8>, 8, "R=8");
            run(splitk<16>, 16, "R=16");
        }
        for (int i = 0; i < NW; i++) CK(cudaFree(w[i]));
        CK(cudaFree(x)); CK(cudaFree(y)); CK(cudaFree(part)); CK(cudaFree(count));
    }
    return 0;
}
