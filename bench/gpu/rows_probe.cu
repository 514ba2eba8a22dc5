// Probe on the device machine (issue 6): which row-softmax shape reaches the bandwidth
// floor at 4096 x 4096 float32, and what one launch, one cooperative launch and a grid
// barrier cost on the host. Build and run: nvcc -O3 -arch=sm_90 rows_probe.cu -o p && ./p
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <vector>
#include <algorithm>
#include <cmath>
namespace cg = cooperative_groups;

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

template <class Op> __device__ float block_reduce(float v, Op op, float *sm) {
    for (int o = 16; o; o >>= 1) v = op(v, __shfl_xor_sync(~0u, v, o));
    int w = threadIdx.x >> 5, l = threadIdx.x & 31, nw = blockDim.x >> 5;
    __syncthreads();
    if (l == 0) sm[w] = v;
    __syncthreads();
    v = l < nw ? sm[l] : Op::identity(); /* not sm[0]: a sum would count it again */
    for (int o = 16; o; o >>= 1) v = op(v, __shfl_xor_sync(~0u, v, o));
    return v;
}
struct Max {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
    __device__ static float identity() { return -INFINITY; }
};
struct Sum {
    __device__ float operator()(float a, float b) const { return a + b; }
    __device__ static float identity() { return 0.f; }
};

// One block per row; each thread keeps V float4 of the row in registers.
template <int V, bool FAST, bool GRIDSTRIDE>
__global__ void softmax_regs(const float *x, float *y, int rows, int cols) {
    __shared__ float sm[32];
    for (int row = blockIdx.x; row < rows; row += GRIDSTRIDE ? gridDim.x : rows) {
        const float4 *xr = reinterpret_cast<const float4 *>(x + (size_t)row * cols);
        float4 *yr = reinterpret_cast<float4 *>(y + (size_t)row * cols);
        float4 v[V];
        float m = -INFINITY;
#pragma unroll
        for (int r = 0; r < V; r++) {
            int j = threadIdx.x + r * blockDim.x;
            v[r] = j < cols / 4 ? xr[j] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
            m = fmaxf(m, fmaxf(fmaxf(v[r].x, v[r].y), fmaxf(v[r].z, v[r].w)));
        }
        m = block_reduce(m, Max(), sm);
        float s = 0;
#pragma unroll
        for (int r = 0; r < V; r++) {
            if (FAST) { v[r].x = __expf(v[r].x - m); v[r].y = __expf(v[r].y - m);
                        v[r].z = __expf(v[r].z - m); v[r].w = __expf(v[r].w - m); }
            else { v[r].x = expf(v[r].x - m); v[r].y = expf(v[r].y - m);
                   v[r].z = expf(v[r].z - m); v[r].w = expf(v[r].w - m); }
            s += (v[r].x + v[r].y) + (v[r].z + v[r].w);
        }
        s = block_reduce(s, Sum(), sm);
        float inv = 1.0f / s;
#pragma unroll
        for (int r = 0; r < V; r++) {
            int j = threadIdx.x + r * blockDim.x;
            if (j < cols / 4) yr[j] = make_float4(v[r].x * inv, v[r].y * inv, v[r].z * inv, v[r].w * inv);
        }
        if (!GRIDSTRIDE) break;
    }
}

// The same with scalar loads (j = tid + r * T), as the generated kernel does.
template <int R>
__global__ void softmax_scalar_regs(const float *x, float *y, int rows, int cols) {
    __shared__ float sm[32];
    for (int row = blockIdx.x; row < rows; row += gridDim.x) {
        const float *xr = x + (size_t)row * cols;
        float *yr = y + (size_t)row * cols;
        float v[R];
        float m = -INFINITY;
#pragma unroll
        for (int r = 0; r < R; r++) {
            int j = threadIdx.x + r * blockDim.x;
            v[r] = j < cols ? xr[j] : -INFINITY;
            m = fmaxf(m, v[r]);
        }
        m = block_reduce(m, Max(), sm);
        float s = 0;
#pragma unroll
        for (int r = 0; r < R; r++) { v[r] = expf(v[r] - m); s += v[r]; }
        s = block_reduce(s, Sum(), sm);
        float inv = 1.0f / s;
#pragma unroll
        for (int r = 0; r < R; r++) {
            int j = threadIdx.x + r * blockDim.x;
            if (j < cols) yr[j] = v[r] * inv;
        }
    }
}

__global__ void empty_kernel() {}
__global__ void coop_kernel(int syncs, int *sink) {
    cg::grid_group g = cg::this_grid();
    for (int i = 0; i < syncs; i++) g.sync();
    if (threadIdx.x == 0 && blockIdx.x == 0) sink[0] = syncs;
}
__global__ void copy_kernel(const float4 *x, float4 *y, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) y[i] = x[i];
}

static double check(const std::vector<float> &hx, float *dy, int rows, int cols) {
    std::vector<float> hy((size_t)rows * cols);
    CK(cudaMemcpy(hy.data(), dy, hy.size() * 4, cudaMemcpyDeviceToHost));
    double worst = 0;
    for (int r = 0; r < rows; r += 97) {
        double m = -INFINITY, s = 0;
        for (int c = 0; c < cols; c++) m = fmax(m, hx[(size_t)r * cols + c]);
        for (int c = 0; c < cols; c++) s += exp(hx[(size_t)r * cols + c] - m);
        for (int c = 0; c < cols; c++) {
            double ref = exp(hx[(size_t)r * cols + c] - m) / s;
            double err = fabs(hy[(size_t)r * cols + c] - ref) / ref;
            if (!(err <= worst)) worst = err;
        }
    }
    return worst;
}

int main() {
    const int rows = 4096, cols = 4096, NB = 4;
    size_t n = (size_t)rows * cols;
    std::vector<float> hx(n);
    srand(1);
    for (auto &v : hx) v = (rand() / (float)RAND_MAX - 0.5f) * 20.f;
    float *x[NB], *y[NB];
    for (int b = 0; b < NB; b++) {
        CK(cudaMalloc(&x[b], n * 4)); CK(cudaMalloc(&y[b], n * 4));
        CK(cudaMemcpy(x[b], hx.data(), n * 4, cudaMemcpyHostToDevice));
    }
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    auto timeit = [&](const char *name, auto launch, bool verify) {
        for (int b = 0; b < NB; b++) { CK(cudaMemset(y[b], 0xff, n * 4)); }
        for (int i = 0; i < 3; i++) launch(x[i % NB], y[i % NB]);
        CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
        const int it = 40;
        std::vector<float> ts;
        for (int rep = 0; rep < 5; rep++) {
            CK(cudaEventRecord(e0));
            for (int i = 0; i < it; i++) launch(x[i % NB], y[i % NB]);
            CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
            float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); ts.push_back(ms * 1000 / it);
        }
        std::sort(ts.begin(), ts.end());
        double err = verify ? check(hx, y[0], rows, cols) : 0;
        printf("%-28s %7.1f us  (floor x%.2f)  max rel err %.2e\n", name, ts[2], ts[2] / (2.0 * n * 4 / 4.23e12 * 1e6), err);
    };
    timeit("copy (128 MB moved)", [&](float *a, float *b) { copy_kernel<<<sms * 8, 256>>>((float4 *)a, (float4 *)b, n / 4); }, false);
#define REG(V, T, F, G) timeit("regs V=" #V " T=" #T " fast=" #F " gs=" #G, [&](float *a, float *b) { \
        softmax_regs<V, F, G><<<G ? sms * (2048 / T) : rows, T>>>(a, b, rows, cols); }, true)
    REG(1, 1024, false, false); REG(2, 512, false, false); REG(4, 256, false, false);
    REG(8, 128, false, false); REG(4, 256, true, false); REG(2, 512, true, false);
    REG(4, 256, false, true); REG(2, 512, false, true); REG(8, 128, false, true);
    timeit("scalar regs R=16 T=256 gs", [&](float *a, float *b) { softmax_scalar_regs<16><<<sms * 8, 256>>>(a, b, rows, cols); }, true);
    timeit("scalar regs R=16 T=256 1/row", [&](float *a, float *b) { softmax_scalar_regs<16><<<rows, 256>>>(a, b, rows, cols); }, true);
    timeit("scalar regs R=8 T=512 1/row", [&](float *a, float *b) { softmax_scalar_regs<8><<<rows, 512>>>(a, b, rows, cols); }, true);

    // Host cost: launch + synchronize, median of 2000.
    auto host = [&](const char *name, auto fn) {
        for (int i = 0; i < 200; i++) fn();
        std::vector<double> ts;
        for (int i = 0; i < 2000; i++) {
            auto t0 = std::chrono::steady_clock::now(); fn();
            ts.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(ts.begin(), ts.end());
        printf("%-40s %6.2f us (p10 %.2f)\n", name, ts[1000], ts[200]);
    };
    int *sink; CK(cudaMalloc(&sink, 4));
    host("empty launch + sync", [&] { empty_kernel<<<1, 32>>>(); CK(cudaStreamSynchronize(0)); });
    host("2 empty launches + sync", [&] { empty_kernel<<<1, 32>>>(); empty_kernel<<<1, 32>>>(); CK(cudaStreamSynchronize(0)); });
    host("3 empty launches + sync", [&] { for (int i = 0; i < 3; i++) empty_kernel<<<1, 32>>>(); CK(cudaStreamSynchronize(0)); });
    for (int syncs : {0, 1, 2, 4}) {
        char name[64]; snprintf(name, 64, "coop launch %d blocks, %d grid syncs + sync", sms, syncs);
        host(name, [&] { void *args[] = {&syncs, &sink};
            CK(cudaLaunchCooperativeKernel((void *)coop_kernel, sms, 1024, args, 0, 0)); CK(cudaStreamSynchronize(0)); });
    }
    return 0;
}
