// Mid-size GEMMs on the tensor cores (issue 6, batch 32-256), on the device machine: the
// 3xTF32 main loop with tiles of 64 x 128 (cv_gemm_tc<BT, 64>) against 128 x 128 and the
// SIMT 64 x 64 tiles the host picks where 128-row tiles would be fewer than the SMs (the
// ResNet head's 256 x 512 x 1000 GEMM ran so at 6.3 TFLOP/s, H200), and split-K on the
// 64-row tiles: k in `split` chunks, partial sums added by cv_gemm_ksum (the time of both
// launches). Each result is checked against a double-precision reference first.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I../../native/include tc_probe.cu -o t && ./t
#include <cmath>
#include "cuvil_aot/cuda_gemm.h"
#include "probe_util.cuh"

struct Store {
    float *c;
    int64_t n;
    __device__ void operator()(int64_t, int64_t i, int64_t j, float acc) const { c[i * n + j] = acc; }
};

template <bool BT, int BM>
__global__ void __launch_bounds__(256, 2) tc(const __grid_constant__ cv_gpu_term t, int64_t m,
                                             int64_t n, float *c, int split, float *part) {
    cv_gemm_tc<BT, BM>(&t, 1, m, n, 1, split, part, Store{c, n});
}

__global__ void __launch_bounds__(256) simt64(const __grid_constant__ cv_gpu_term t, int64_t m,
                                              int64_t n, float *c, int split, float *part) {
    cv_gemm_tiled<float, 64>(&t, 1, m, n, 1, split, part, Store{c, n});
}

__global__ void __launch_bounds__(256) ksum(const float *part, int split, int64_t m, int64_t n,
                                            float *c) {
    cv_gemm_ksum<float>(part, split, m, n, 1, Store{c, n});
}

int main() {
    int sm;
    CK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0));
    const int shapes[][3] = {{70, 36, 20},    {100, 300, 132},  {256, 512, 1000},
                             {256, 768, 3072}, {256, 3072, 768}, {64, 512, 4096}};
    srand(3);
    for (auto &s : shapes) {
        const int m = s[0], k = s[1], n = s[2];
        auto a = random_floats((size_t)m * k, 1), b = random_floats((size_t)k * n, 1);
        std::vector<float> bt((size_t)n * k);  // B as [n][k]: k contiguous
        for (int i = 0; i < k; i++)
            for (int j = 0; j < n; j++) bt[(size_t)j * k + i] = b[(size_t)i * n + j];
        std::vector<double> ref((size_t)m * n);
        double top = 0;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double acc = 0;
                for (int q = 0; q < k; q++) acc += (double)a[(size_t)i * k + q] * b[(size_t)q * n + j];
                ref[(size_t)i * n + j] = acc;
                top = std::max(top, std::fabs(acc));
            }
        float *da = upload(a), *db = upload(b), *dbt = upload(bt), *dc, *dp;
        CK(cudaMalloc(&dc, 4 * (size_t)m * n));
        CK(cudaMalloc(&dp, 4 * 16 * (size_t)m * n));
        const cv_gpu_term tn = {(const char *)da, k, 1, 0, (const char *)db, n, 1, 0, k};
        const cv_gpu_term tt = {(const char *)da, k, 1, 0, (const char *)dbt, 1, k, 0, k};
        auto run = [&](const char *name, auto launch) {
            CK(cudaMemset(dc, 0xff, 4 * (size_t)m * n));
            launch();
            CK(cudaDeviceSynchronize());
            std::vector<float> got((size_t)m * n);
            CK(cudaMemcpy(got.data(), dc, 4 * got.size(), cudaMemcpyDeviceToHost));
            double err = 0;
            for (size_t e = 0; e < got.size(); e++) err = std::max(err, std::fabs(got[e] - ref[e]));
            cudaEvent_t e0, e1;
            CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
            for (int i = 0; i < 10; i++) launch();
            CK(cudaEventRecord(e0));
            for (int i = 0; i < 50; i++) launch();
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            const double us = ms * 1e3 / 50;
            printf("%4d x %4d x %4d  %-14s %8.2f us  %6.1f TFLOP/s  rel err %.1e%s\n", m, k, n, name,
                   us, 2.0 * m * n * k / us * 1e-6, err / top, err / top < 1e-5 ? "" : "  WRONG");
        };
        const uint32_t t128 = ((m + 127) / 128) * ((n + 127) / 128), t64 = ((m + 63) / 64) * ((n + 127) / 128);
        run("tc 128", [&] { tc<false, 128><<<t128, 256>>>(tn, m, n, dc, 1, nullptr); });
        run("tc 64", [&] { tc<false, 64><<<t64, 256>>>(tn, m, n, dc, 1, nullptr); });
        run("tct 128", [&] { tc<true, 128><<<t128, 256>>>(tt, m, n, dc, 1, nullptr); });
        run("tct 64", [&] { tc<true, 64><<<t64, 256>>>(tt, m, n, dc, 1, nullptr); });
        const uint32_t s64 = ((m + 63) / 64) * ((n + 63) / 64);
        run("simt 64x64", [&] { simt64<<<s64, 256>>>(tn, m, n, dc, 1, nullptr); });
        const int sums = (int)((m * n + 255) / 256);
        for (int split : {2, 3, 4, 6, 8, 11, 16}) {
            if (k / split < 32) continue;
            char name[40];
            snprintf(name, sizeof name, "tc 64 split %d", split);
            run(name, [&] {
                tc<false, 64><<<t64 * split, 256>>>(tn, m, n, dc, split, dp);
                ksum<<<sums, 256>>>(dp, split, m, n, dc);
            });
            snprintf(name, sizeof name, "tct 64 split %d", split);
            run(name, [&] {
                tc<true, 64><<<t64 * split, 256>>>(tt, m, n, dc, split, dp);
                ksum<<<sums, 256>>>(dp, split, m, n, dc);
            });
            snprintf(name, sizeof name, "simt64 split %d", split);
            run(name, [&] {
                simt64<<<s64 * split, 256>>>(tn, m, n, dc, split, dp);
                ksum<<<sums, 256>>>(dp, split, m, n, dc);
            });
        }
        printf("  (128-row tiles: %u, 64-row tiles: %u, SMs: %d)\n", t128, t64, sm);
        CK(cudaFree(da)); CK(cudaFree(db)); CK(cudaFree(dbt)); CK(cudaFree(dc)); CK(cudaFree(dp));
    }
    return 0;
}
