// The 16M-element chain tanh(x * 0.5 + y) * sigmoid(y) - |x| * 0.25 on the device machine
// (issue 6, target 1.05x the copy floor): the generated _flat kernel (f6, examples/models.py's elementwise_chain in gen_models.cuh)
// against
// hand-written variants that load U float4 of each input per thread before any math, with
// streaming cache hints, with the math replaced by x + y (memory alone), and other grids.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I../../native/include chain_probe.cu -o c && ./c
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "gen_models.cuh"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__device__ __forceinline__ float chain(float x, float y) {
    return tanhf(x * 0.5f + y) * (1.0f / (1.0f + expf(-y))) - fabsf(x) * 0.25f;
}

// MATH: the chain, else x + y. CS: __ldcs / __stcs (evict-first) instead of plain accesses.
template <int U, bool MATH, bool CS>
__global__ void __launch_bounds__(256) hand(const float4 *x, const float4 *y, float4 *z, long n4) {
    const long step = (long)gridDim.x * blockDim.x;
    for (long q = (long)blockIdx.x * blockDim.x + threadIdx.x; q < n4; q += step * U) {
        float4 a[U], b[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const long i = q + u * step;
            if (i < n4) { a[u] = CS ? __ldcs(x + i) : x[i]; b[u] = CS ? __ldcs(y + i) : y[i]; }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const long i = q + u * step;
            if (i >= n4) break;
            float4 r;
            if (MATH) {
                r.x = chain(a[u].x, b[u].x); r.y = chain(a[u].y, b[u].y);
                r.z = chain(a[u].z, b[u].z); r.w = chain(a[u].w, b[u].w);
            } else {
                r.x = a[u].x + b[u].x; r.y = a[u].y + b[u].y; r.z = a[u].z + b[u].z; r.w = a[u].w + b[u].w;
            }
            if (CS) __stcs(z + i, r); else z[i] = r;
        }
    }
}

int main() {
    const long n = 1L << 24, n4 = n / 4;
    std::vector<float> hx(n), hy(n);
    srand(1);
    for (long i = 0; i < n; i++) { hx[i] = rand() / (float)RAND_MAX * 6 - 3; hy[i] = rand() / (float)RAND_MAX * 6 - 3; }
    float *x, *y, *z, *big0, *big1;
    CK(cudaMalloc(&x, n * 4)); CK(cudaMalloc(&y, n * 4)); CK(cudaMalloc(&z, n * 4));
    CK(cudaMalloc(&big0, 4L << 28)); CK(cudaMalloc(&big1, 4L << 28));
    CK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(y, hy.data(), n * 4, cudaMemcpyHostToDevice));
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    auto time = [&](auto launch, int calls) {
        launch(); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
        std::vector<float> ts;
        for (int rep = 0; rep < 5; rep++) {
            CK(cudaEventRecord(e0));
            for (int i = 0; i < calls; i++) launch();
            CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
            float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); ts.push_back(ms * 1000 / calls);
        }
        std::sort(ts.begin(), ts.end());
        return ts[2];
    };
    const float copy_us = time([&] { cudaMemcpyAsync(big1, big0, 4L << 28, cudaMemcpyDeviceToDevice); }, 20);
    const double bw = 2.0 * (4L << 28) / (copy_us * 1e-6);
    const double floor_us = 3.0 * n * 4 / bw * 1e6;
    printf("copy 1 GiB: %.1f us = %.2f TB/s; chain floor (192 MiB) %.1f us\n", copy_us, bw / 1e12, floor_us);
    const float copy64 = time([&] { cudaMemcpyAsync(z, x, n * 4, cudaMemcpyDeviceToDevice); }, 200);
    printf("%-40s %7.1f us  (x%.2f of its own 128 MiB floor)\n", "copy 64 MiB", copy64, copy64 / (2.0 * n * 4 / bw * 1e6));
    auto check = [&](const char *name, float us, bool math) {
        std::vector<float> hz(n);
        CK(cudaMemcpy(hz.data(), z, n * 4, cudaMemcpyDeviceToHost));
        double worst = 0;
        for (long i = 0; i < n; i += 9973) {
            double ref = math ? tanh(hx[i] * 0.5 + hy[i]) / (1 + exp(-(double)hy[i])) - fabs(hx[i]) * 0.25
                              : (double)hx[i] + hy[i];
            double err = fabs(hz[i] - ref) / (fabs(ref) + 1e-6);
            if (!(err <= worst)) worst = err;
        }
        printf("%-40s %7.1f us  x%.3f floor  max rel err %.1e\n", name, us, us / floor_us, worst);
    };
    f6_s0_g0_args ga = {{n}, {(char *)x, (char *)y, (char *)z}, {{1}, {1}, {1}}};
    for (int per : {4, 8, 16}) {
        char name[64]; snprintf(name, sizeof name, "generated _flat, grid sm*%d", per);
        CK(cudaMemset(z, 0xff, n * 4));
        check(name, time([&] { f6_s0_g0_flat<<<sms * per, 256>>>(ga); }, 20), true);
    }
    const float4 *x4 = (const float4 *)x, *y4 = (const float4 *)y; float4 *z4 = (float4 *)z;
#define RUN(U, MATH, CS, PER) do { CK(cudaMemset(z, 0xff, n * 4)); \
        check("hand U=" #U " math=" #MATH " cs=" #CS " grid sm*" #PER, \
              time([&] { hand<U, MATH, CS><<<sms * PER, 256>>>(x4, y4, z4, n4); }, 20), MATH); } while (0)
    RUN(1, true, false, 8);
    RUN(2, true, false, 8);
    RUN(4, true, false, 8);
    RUN(2, true, true, 8);
    RUN(4, true, true, 8);
    RUN(2, true, false, 16);
    RUN(1, false, false, 8);
    RUN(2, false, false, 8);
    RUN(4, false, false, 8);
    RUN(4, false, true, 8);
    CK(cudaMemset(z, 0xff, n * 4));
    check("hand U=1 math one vector per thread", time([&] { hand<1, true, false><<<(n4 + 255) / 256, 256>>>(x4, y4, z4, n4); }, 20), true);
    return 0;
}
