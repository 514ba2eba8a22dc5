// What lstm_probe.cu and resnet_probe.cu share: error checks, the device's global timer,
// medians, random inputs and their upload.
#pragma once
#include <algorithm>
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
