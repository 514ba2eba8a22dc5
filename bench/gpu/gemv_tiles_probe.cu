// The one-row GEMV y = x @ W + b (W row-major k x n, float32: GPT-2's Conv1D weights at a
// decode step) as generated code runs it (cv_gemv's float4 path), over its tile widths and
// block sizes, against cuBLAS's sgemv where the probe links it (-DWITH_CUBLAS -lcublas).
// The host picks 32 columns a tile on 1024 threads where 16 would give more tiles than SMs:
// 72 blocks for GPT-2's 2304 columns on 132 SMs. us per launch in a graph of 20 (W, 2.4-9.4
// MB, stays in the 50 MB L2 between launches, as in a profiler's repeated calls).
//   nvcc -O3 -std=c++17 -arch=sm_90 -I../../native/include gemv_tiles_probe.cu -o g && ./g
#include <cmath>
#include "cuvil_aot/cuda_gemm.h"
#include "probe_util.cuh"
#ifdef WITH_CUBLAS
#include <cublas_v2.h>
#endif

struct BiasStore {
    const float *b;
    float *y;
    __device__ void operator()(int64_t, int64_t, int64_t j, float acc) const { y[j] = acc + b[j]; }
};

template <int B>
__global__ void __launch_bounds__(B) gemv(const __grid_constant__ cv_gpu_term t, int64_t n, int cols,
                                          const float *b, float *y) {
    cv_gemv<float, 1>(&t, 1, 1, n, 1, cols, 1, BiasStore{b, y});
}

static cudaStream_t st;

int main() {
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
#ifdef WITH_CUBLAS
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) { printf("no cuBLAS\n"); return 1; }
    cublasSetStream(h, st);
#endif
    const int shapes[][2] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}};
    srand(9);
    printf("us per launch in a graph; tiles: columns x threads\n");
    printf("%-11s %8s %8s %8s %8s %8s %8s %8s %8s\n", "k x n", "32x1024", "16x1024", "16x512",
           "16x256", "8x512", "8x256", "32x512", "cublas");
    for (auto &s : shapes) {
        const int k = s[0], n = s[1];
        auto x = random_floats(k, 1), w = random_floats((size_t)k * n, 1), b = random_floats(n, 1);
        std::vector<double> ref(n);
        double top = 0;
        for (int j = 0; j < n; j++) {
            double acc = b[j];
            for (int q = 0; q < k; q++) acc += (double)x[q] * w[(size_t)q * n + j];
            ref[j] = acc, top = std::max(top, std::fabs(acc));
        }
        float *dx = upload(x), *dw = upload(w), *db = upload(b), *dy;
        CK(cudaMalloc(&dy, 4 * (size_t)n));
        const cv_gpu_term tt = {(const char *)dx, k, 1, 0, (const char *)dw, n, 1, 0, k};
        std::vector<float> out(n);
        auto run = [&](auto launch, bool check = true) {
            CK(cudaMemsetAsync(dy, 0xff, 4 * out.size(), st));
            launch();
            CK(cudaGetLastError());
            CK(cudaStreamSynchronize(st));
            CK(cudaMemcpy(out.data(), dy, 4 * out.size(), cudaMemcpyDeviceToHost));
            double err = 0;
            for (size_t i = 0; i < out.size(); i++) {
                const double e = std::fabs(out[i] - ref[i]);
                err = std::isnan(e) ? INFINITY : std::max(err, e);
            }
            printf(" %8.2f%s", graph_us(st, launch), !check || err / top < 2e-6 ? "" : "!");
        };
        char name[32];
        snprintf(name, sizeof name, "%dx%d", k, n);
        printf("%-11s", name);
        auto grid = [&](int cols) { return (unsigned)((n + cols - 1) / cols); };
        run([&] { gemv<1024><<<grid(32), 1024, 0, st>>>(tt, n, 32, db, dy); });
        run([&] { gemv<1024><<<grid(16), 1024, 0, st>>>(tt, n, 16, db, dy); });
        run([&] { gemv<512><<<grid(16), 512, 0, st>>>(tt, n, 16, db, dy); });
        run([&] { gemv<256><<<grid(16), 256, 0, st>>>(tt, n, 16, db, dy); });
        run([&] { gemv<512><<<grid(8), 512, 0, st>>>(tt, n, 8, db, dy); });
        run([&] { gemv<256><<<grid(8), 256, 0, st>>>(tt, n, 8, db, dy); });
        run([&] { gemv<512><<<grid(32), 512, 0, st>>>(tt, n, 32, db, dy); });
#ifdef WITH_CUBLAS
        // y = W_cm x with W (k x n row-major) as an n x k column-major matrix, without the
        // bias (its result not checked): cuBLAS's kernel alone
        const float one = 1.f, zero = 0.f;
        run([&] { cublasSgemv(h, CUBLAS_OP_N, n, k, &one, dw, n, dx, 1, &zero, dy, 1); }, false);
#endif
        printf("\n");
        CK(cudaFree(dx)); CK(cudaFree(dw)); CK(cudaFree(db)); CK(cudaFree(dy));
    }
    return 0;
}
