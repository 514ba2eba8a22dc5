// The tensor-core GEMM main loop at the transformer shapes of batch 8 x 128 and 32 x 128
// tokens (x @ w.T: B with k contiguous, cv_gemm_tc<true, BM>), 3xTF32 against one TF32
// product (X3 false: what precision="tf32" reads), on the device machine: TFLOP/s per
// launch (back to back) and the error against a double reference on sampled rows; and the
// 64-row tiles under register caps of 3 and 4 blocks per SM (occupancy: ncu found the
// 128-row tiles latency-bound at 2 blocks, 0.79 eligible warps per scheduler).
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I../../native/include \
//        tct_probe.cu -o t && ./t
#include <cmath>
#include "cuvil_aot/cuda_gemm.h"
#include "probe_util.cuh"

struct Store {
    float *c;
    int64_t n;
    __device__ void operator()(int64_t, int64_t i, int64_t j, float acc) const { c[i * n + j] = acc; }
};

template <int BM, bool X3>
__global__ void __launch_bounds__(256, 2) tct(const __grid_constant__ cv_gpu_term t, int64_t m,
                                              int64_t n, float *c) {
    cv_gemm_tc<true, BM, X3>(&t, 1, m, n, 1, 1, nullptr, Store{c, n});
}

template <int BLOCKS>
__global__ void __launch_bounds__(256, BLOCKS) tct64(const __grid_constant__ cv_gpu_term t,
                                                     int64_t m, int64_t n, float *c) {
    cv_gemm_tc<true, 64, true>(&t, 1, m, n, 1, 1, nullptr, Store{c, n});
}

int main() {
    const int shapes[][3] = {{1024, 768, 3072}, {1024, 3072, 768}, {1024, 768, 2304},
                             {4096, 768, 3072}, {4096, 3072, 768}, {4096, 1024, 4096}};
    srand(5);
    printf("%-18s %12s %12s %12s %12s %12s %12s\n", "m x k x n", "3x BM128", "3x BM64",
           "1x BM128", "1x BM64", "3x 64 (3/SM)", "3x 64 (4/SM)");
    for (auto &s : shapes) {
        const int m = s[0], k = s[1], n = s[2];
        auto a = random_floats((size_t)m * k, 1), w = random_floats((size_t)n * k, 1);
        float *da = upload(a), *dw = upload(w), *dc;
        CK(cudaMalloc(&dc, 4 * (size_t)m * n));
        const cv_gpu_term tt = {(const char *)da, k, 1, 0, (const char *)dw, 1, k, 0, k};
        std::vector<float> out((size_t)m * n);
        char name[32];
        snprintf(name, sizeof name, "%dx%dx%d", m, k, n);
        printf("%-18s", name);
        auto run = [&](auto launch) {
            CK(cudaMemset(dc, 0xff, 4 * (size_t)m * n));
            launch();
            CK(cudaGetLastError());
            CK(cudaMemcpy(out.data(), dc, 4 * out.size(), cudaMemcpyDeviceToHost));
            double err = 0, top = 0;
            for (int i = 0; i < m; i += 97)  // sampled rows against double
                for (int j = 0; j < n; j++) {
                    double acc = 0;
                    for (int q = 0; q < k; q++) acc += (double)a[(size_t)i * k + q] * w[(size_t)j * k + q];
                    const double e = std::fabs(out[(size_t)i * n + j] - acc);
                    err = std::isnan(e) ? INFINITY : std::max(err, e);
                    top = std::max(top, std::fabs(acc));
                }
            const float us = back_to_back_us(launch, 50);
            printf(" %7.1f %.0e", 2.0 * m * n * k / us / 1e6, err / top);
        };
        auto grid = [&](int bm) { return (uint32_t)(((m + bm - 1) / bm) * ((n + 127) / 128)); };
        run([&] { tct<128, true><<<grid(128), 256>>>(tt, m, n, dc); });
        run([&] { tct<64, true><<<grid(64), 256>>>(tt, m, n, dc); });
        run([&] { tct<128, false><<<grid(128), 256>>>(tt, m, n, dc); });
        run([&] { tct<64, false><<<grid(64), 256>>>(tt, m, n, dc); });
        run([&] { tct64<3><<<grid(64), 256>>>(tt, m, n, dc); });
        run([&] { tct64<4><<<grid(64), 256>>>(tt, m, n, dc); });
        printf("\n");
        CK(cudaFree(da)); CK(cudaFree(dw)); CK(cudaFree(dc));
    }
    return 0;
}
