// Softmax 4096 x 4096 float32 on the device machine (issue 6): can a row kernel reach the
// copy's speed (cudaMemcpyAsync of the same bytes: 1.10x the floor in the third session)?
// A block per row (float4 of the row in registers) against persistent blocks that load
// the next row while they reduce the current one: in registers, or in shared memory
// through cp.async. Build and run: nvcc -O3 -std=c++17 -arch=sm_90 softmax_pipe_probe.cu
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

struct Max { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } static constexpr float init = -INFINITY; };
struct Sum { __device__ float operator()(float a, float b) const { return a + b; } static constexpr float init = 0.f; };

template <class Op> __device__ float block_reduce(float v, float *sm) {
    Op op;
    for (int o = 16; o; o >>= 1) v = op(v, __shfl_xor_sync(~0u, v, o));
    const int w = threadIdx.x >> 5, l = threadIdx.x & 31, nw = blockDim.x >> 5;
    __syncthreads();  // sm is free (the previous reduction has read it)
    if (l == 0) sm[w] = v;
    __syncthreads();
    v = l < nw ? sm[l] : Op::init;
    for (int o = 16; o; o >>= 1) v = op(v, __shfl_xor_sync(~0u, v, o));
    return v;
}

template <int V, bool CS> __device__ void softmax_regs(const float4 (&v)[V], float4 *yr, float *sm) {
    float m = -INFINITY;
#pragma unroll
    for (int r = 0; r < V; r++) m = fmaxf(m, fmaxf(fmaxf(v[r].x, v[r].y), fmaxf(v[r].z, v[r].w)));
    m = block_reduce<Max>(m, sm);
    float4 e[V];
    float s = 0;
#pragma unroll
    for (int r = 0; r < V; r++) {
        e[r] = make_float4(expf(v[r].x - m), expf(v[r].y - m), expf(v[r].z - m), expf(v[r].w - m));
        s += (e[r].x + e[r].y) + (e[r].z + e[r].w);
    }
    s = block_reduce<Sum>(s, sm + 32);
    const float inv = 1.0f / s;
#pragma unroll
    for (int r = 0; r < V; r++) {
        const float4 o = make_float4(e[r].x * inv, e[r].y * inv, e[r].z * inv, e[r].w * inv);
        if (CS) __stcs(yr + threadIdx.x + r * blockDim.x, o); else yr[threadIdx.x + r * blockDim.x] = o;
    }
}

// A block per row, blockDim * V float4 = the row (4096).
template <int V, bool CS> __global__ void per_row(const float4 *x, float4 *y, int cols4) {
    __shared__ float sm[64];
    const float4 *xr = x + (size_t)blockIdx.x * cols4;
    float4 v[V];
#pragma unroll
    for (int r = 0; r < V; r++) v[r] = xr[threadIdx.x + r * blockDim.x];
    softmax_regs<V, CS>(v, y + (size_t)blockIdx.x * cols4, sm);
}

// Persistent blocks; the next row's loads are issued before the current row's reductions.
template <int V, bool CS> __global__ void pipe_regs(const float4 *x, float4 *y, int rows, int cols4) {
    __shared__ float sm[64];
    int row = blockIdx.x;
    float4 cur[V];
#pragma unroll
    for (int r = 0; r < V; r++) cur[r] = row < rows ? x[(size_t)row * cols4 + threadIdx.x + r * blockDim.x] : float4{};
    for (; row < rows; row += gridDim.x) {
        const int next = row + gridDim.x;
        float4 nx[V];
#pragma unroll
        for (int r = 0; r < V; r++) nx[r] = next < rows ? x[(size_t)next * cols4 + threadIdx.x + r * blockDim.x] : float4{};
        softmax_regs<V, CS>(cur, y + (size_t)row * cols4, sm);
#pragma unroll
        for (int r = 0; r < V; r++) cur[r] = nx[r];
    }
}

__device__ void cp16(void *s, const void *g) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"((unsigned)__cvta_generic_to_shared(s)), "l"(g));
}

// Persistent blocks; rows double-buffered in shared memory by cp.async (each thread
// copies and later reads its own chunks, so only the reductions synchronize).
template <int V, bool CS> __global__ void pipe_smem(const float4 *x, float4 *y, int rows, int cols4) {
    __shared__ float sm[64];
    __shared__ float4 buf[2][1024];
    int row = blockIdx.x, b = 0;
    if (row < rows)
#pragma unroll
        for (int r = 0; r < V; r++) cp16(&buf[0][threadIdx.x + r * blockDim.x], x + (size_t)row * cols4 + threadIdx.x + r * blockDim.x);
    asm volatile("cp.async.commit_group;\n");
    for (; row < rows; row += gridDim.x, b ^= 1) {
        const int next = row + gridDim.x;
        if (next < rows)
#pragma unroll
            for (int r = 0; r < V; r++) cp16(&buf[b ^ 1][threadIdx.x + r * blockDim.x], x + (size_t)next * cols4 + threadIdx.x + r * blockDim.x);
        asm volatile("cp.async.commit_group;\n");
        asm volatile("cp.async.wait_group 1;\n");
        float4 v[V];
#pragma unroll
        for (int r = 0; r < V; r++) v[r] = buf[b][threadIdx.x + r * blockDim.x];
        softmax_regs<V, CS>(v, y + (size_t)row * cols4, sm);
    }
}

__global__ void copy_flat(const float4 *x, float4 *y, size_t n4) {
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n4) y[i] = x[i];
}

int main() {
    const int rows = 4096, cols = 4096, cols4 = cols / 4, NB = 4;
    const size_t n = (size_t)rows * cols;
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
    const double floor_us = 2.0 * n * 4 / 4.24e12 * 1e6;
    auto timeit = [&](const char *name, auto launch, bool verify) {
        for (int b = 0; b < NB; b++) CK(cudaMemset(y[b], 0xff, n * 4));
        for (int i = 0; i < 3; i++) launch((float4 *)x[i % NB], (float4 *)y[i % NB]);
        CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
        const int it = 40;
        std::vector<float> ts;
        for (int rep = 0; rep < 7; rep++) {
            CK(cudaEventRecord(e0));
            for (int i = 0; i < it; i++) launch((float4 *)x[i % NB], (float4 *)y[i % NB]);
            CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
            float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); ts.push_back(ms * 1000 / it);
        }
        std::sort(ts.begin(), ts.end());
        double worst = 0;
        if (verify) {
            std::vector<float> hy(n);
            CK(cudaMemcpy(hy.data(), y[0], n * 4, cudaMemcpyDeviceToHost));
            for (int r = 0; r < rows; r += 1) {
                double m = -INFINITY, s = 0;
                const float *xr = &hx[(size_t)r * cols];
                for (int c = 0; c < cols; c++) m = fmax(m, xr[c]);
                for (int c = 0; c < cols; c++) s += exp(xr[c] - m);
                for (int c = 0; c < cols; c += 7) {
                    const double ref = exp(xr[c] - m) / s, err = fabs(hy[(size_t)r * cols + c] - ref) / ref;
                    if (!(err <= worst)) worst = err;
                }
            }
        }
        printf("%-34s %6.1f us  x%.3f floor  (best %.1f)  max rel err %.1e\n", name, ts[3], ts[3] / floor_us, ts[0], worst);
    };
    timeit("cudaMemcpyAsync 64 MiB", [&](float4 *a, float4 *b) { CK(cudaMemcpyAsync(b, a, n * 4, cudaMemcpyDeviceToDevice)); }, false);
    timeit("copy kernel, a float4 per thread", [&](float4 *a, float4 *b) { copy_flat<<<n / 4 / 256, 256>>>(a, b, n / 4); }, false);
#define ROW(V, CS) timeit("a block per row V=" #V " cs=" #CS, [&](float4 *a, float4 *b) { per_row<V, CS><<<rows, 1024 / V>>>(a, b, cols4); }, true)
    ROW(1, false); ROW(2, false); ROW(4, false); ROW(8, false); ROW(4, true); ROW(2, true);
    char name[80];
    for (int per_sm : {1, 2, 4, 8}) {
#define PIPE(KERN, V, CS) if (per_sm * (1024 / V) <= 2048) { \
            snprintf(name, sizeof name, #KERN " V=%d cs=%d blocks/SM=%d", V, (int)CS, per_sm); \
            timeit(name, [&](float4 *a, float4 *b) { KERN<V, CS><<<sms * per_sm, 1024 / V>>>(a, b, rows, cols4); }, true); }
        PIPE(pipe_regs, 2, false); PIPE(pipe_regs, 4, false); PIPE(pipe_regs, 8, false);
        PIPE(pipe_regs, 4, true);
        if (per_sm <= 4) { PIPE(pipe_smem, 2, false); PIPE(pipe_smem, 4, false); PIPE(pipe_smem, 4, true); }
    }
    return 0;
}
