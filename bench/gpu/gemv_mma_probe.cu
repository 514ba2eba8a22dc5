// The dot GEMV (x @ w.T, few rows of x, w's rows along k) on the device machine: the FMA
// loop (cv_gemv_dot, 8-warp teams on tiles of 4 x 4) against the tensor-core one
// (cv_gemv_dot_mma<NT, U>: 8 * NT columns a block, U chunks of 16 k in flight), at the
// BERT-base / GPT-2 shapes of batch 1 (m rows, k, n). Each result is checked against a
// double-precision reference first (max |err| / max |ref|); times are per launch, back to
// back, beside the weight bytes at 4.8 TB/s.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I../../native/include gemv_mma_probe.cu -o g && ./g
#include <cmath>
#include "cuvil_aot/cuda_gemm.h"
#include "probe_util.cuh"

struct Store {
    float *c;
    int64_t n;
    __device__ void operator()(int64_t, int64_t i, int64_t j, float acc) const { c[i * n + j] = acc; }
};

__global__ void __launch_bounds__(256, 3) fma_dot(const __grid_constant__ cv_gpu_term t, int64_t m,
                                                  int64_t n, float *c) {
    cv_gemv_dot_fma<float, 4, 4>(&t, 1, m, n, 1, 1, Store{c, n});
}

template <int NT, int U>
__global__ void __launch_bounds__(256, 3) mma_dot(const __grid_constant__ cv_gpu_term t, int64_t m,
                                                  int64_t n, float *c) {
    cv_gemv_dot_mma<NT, U>(&t, 1, m, n, 1, cv_gemv_buffer(), Store{c, n});
}

int main() {
    int sm;
    CK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0));
    const int shapes[][3] = {{16, 768, 2304}, {16, 768, 768}, {16, 768, 3072}, {16, 3072, 768},
                             {8, 768, 3072},  {1, 768, 2304}, {5, 100, 36},   {16, 1024, 4096}};
    srand(7);
    printf("%-16s %10s %10s %10s %10s %10s %10s\n", "m x k x n", "floor us", "fma", "mma1x4",
           "mma2x2", "mma2x4", "mma4x2");
    for (auto &s : shapes) {
        const int m = s[0], k = s[1], n = s[2];
        auto a = random_floats((size_t)m * k, 1), w = random_floats((size_t)n * k, 1);
        std::vector<double> ref((size_t)m * n);
        double top = 0;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double acc = 0;
                for (int q = 0; q < k; q++) acc += (double)a[(size_t)i * k + q] * w[(size_t)j * k + q];
                ref[(size_t)i * n + j] = acc;
                top = std::max(top, std::fabs(acc));
            }
        float *da = upload(a), *dw = upload(w), *dc;
        CK(cudaMalloc(&dc, 4 * (size_t)m * n));
        const cv_gpu_term tt = {(const char *)da, k, 1, 0, (const char *)dw, 1, k, 0, k};
        std::vector<float> out((size_t)m * n);
        auto run = [&](auto launch) {
            CK(cudaMemset(dc, 0xff, 4 * (size_t)m * n));  // NaN: unwritten shows
            launch();
            CK(cudaGetLastError());
            CK(cudaMemcpy(out.data(), dc, 4 * out.size(), cudaMemcpyDeviceToHost));
            double err = 0;
            for (size_t i = 0; i < out.size(); i++) {
                const double e = std::fabs(out[i] - ref[i]);
                err = std::isnan(e) ? INFINITY : std::max(err, e);
            }
            const float us = back_to_back_us(launch, 500);
            char cell[32];
            snprintf(cell, sizeof cell, "%.2f%s", us, err / top < 2e-6 ? "" : "!");
            if (err / top >= 2e-6) fprintf(stderr, "  error %.3g at %dx%dx%d\n", err / top, m, k, n);
            printf(" %10s", cell);
        };
        char name[32];
        snprintf(name, sizeof name, "%dx%dx%d", m, k, n);
        printf("%-16s %10.2f", name, 4.0 * n * k / 4.8e6);
        const uint32_t fgrid = std::min<int64_t>((n + 3) / 4 * ((m + 3) / 4), 8 * sm);
        run([&] { fma_dot<<<fgrid, 256>>>(tt, m, n, dc); });
        auto grid = [&](int cols) { return (uint32_t)std::min<int64_t>((n + cols - 1) / cols, 8 * sm); };
        run([&] { mma_dot<1, 4><<<grid(8), 256>>>(tt, m, n, dc); });
        run([&] { mma_dot<2, 2><<<grid(16), 256>>>(tt, m, n, dc); });
        run([&] { mma_dot<2, 4><<<grid(16), 256>>>(tt, m, n, dc); });
        run([&] { mma_dot<4, 2><<<grid(32), 256>>>(tt, m, n, dc); });
        printf("\n");
        CK(cudaFree(da)); CK(cudaFree(dw)); CK(cudaFree(dc));
    }
    return 0;
}
