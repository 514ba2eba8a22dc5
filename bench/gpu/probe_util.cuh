// What the probes of this folder share: error checks, the device's global timer,
// medians, random inputs and their upload, back-to-back, launch + sync and graph timings.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__device__ __forceinline__ unsigned long long gtime() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static float med(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// n values uniform in [-k, k) (rand(): seed with srand first).
static std::vector<float> random_floats(size_t n, float k) {
    std::vector<float> v(n);
    for (auto &e : v) e = k * ((rand() / (float)RAND_MAX) * 2 - 1);
    return v;
}

static float *upload(const std::vector<float> &v) {
    float *d;
    CK(cudaMalloc(&d, 4 * v.size()));
    CK(cudaMemcpy(d, v.data(), 4 * v.size(), cudaMemcpyHostToDevice));
    return d;
}

// Per launch, us: n launches back to back between two events on the default stream.
template <class L>
static float back_to_back_us(L launch, int n = 200) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0));
    for (int i = 0; i < n; i++) launch();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
    return ms * 1e3f / n;
}

// The host's time of one launch + stream synchronize, us (after).
template <class L>
static float launch_sync_us(L launch) {
    const auto t0 = std::chrono::steady_clock::now();
    launch();
    CK(cudaStreamSynchronize(0));
    return std::chrono::duration<float, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// Per launch, us: 20 launches captured into a graph on `stream` (not the legacy stream:
// capture refuses it), replayed 25 times between two events, median of 5 such rounds: the
// host's launch rate out of the way, the kernels back to back on the device.
template <class L>
static float graph_us(cudaStream_t stream, L launch) {
    cudaGraph_t g;
    cudaGraphExec_t ex;
    CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < 20; i++) launch();
    CK(cudaStreamEndCapture(stream, &g));
    CK(cudaGraphInstantiate(&ex, g, 0));
    CK(cudaGraphLaunch(ex, stream));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    std::vector<float> t;
    for (int r = 0; r < 5; r++) {
        CK(cudaEventRecord(e0, stream));
        for (int i = 0; i < 25; i++) CK(cudaGraphLaunch(ex, stream));
        CK(cudaEventRecord(e1, stream));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms * 1e3f / 500);
    }
    CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
    CK(cudaGraphExecDestroy(ex)); CK(cudaGraphDestroy(g));
    return med(t);
}
