// The generated row softmax (f2, examples/models.py's softmax in gen_models.cuh, which
// bench/gpu/gen_models.py writes) timed at 4096 x 4096 on the device machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -I../../native/include gen_probe.cu -o g && ./g
// (the variants a, p and q of gpu_rows.md: `git show 945d4e4:bench/gpu/gen_softmax_a.cuh`;
// r, the generated source of the third session: `git show 95d31c9:bench/gpu/gen_softmax_r.cuh`)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "gen_models.cuh"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

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
    auto args = [&](int b) { f2_s0_g0_args a = {{rows, cols}, {(char *)x[b], (char *)y[b]},
                                                {{cols, 1}, {cols, 1}}}; return a; };
    auto run = [&](const char *name, void (*k)(f2_s0_g0_args), int grid) {
        CK(cudaMemset(y[0], 0xff, n * 4));
        for (int i = 0; i < 3; i++) k<<<grid, 256>>>(args(i % NB));
        CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
        std::vector<float> ts;
        for (int rep = 0; rep < 5; rep++) {
            CK(cudaEventRecord(e0));
            for (int i = 0; i < 40; i++) k<<<grid, 256>>>(args(i % NB));
            CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
            float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); ts.push_back(ms * 25);
        }
        std::sort(ts.begin(), ts.end());
        std::vector<float> hy(n);
        CK(cudaMemcpy(hy.data(), y[0], n * 4, cudaMemcpyDeviceToHost));
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
        printf("%-22s %7.1f us  max rel err %.2e\n", name, ts[2], worst);
    };
    run("bc32, a block per row", f2_s0_g0_bc32, rows);
    run("bcu32, a block per row", f2_s0_g0_bcu32, rows);
    run("bcu32, grid sm*8", f2_s0_g0_bcu32, sms * 8);
    run("b32, grid sm*8", f2_s0_g0_b32, sms * 8);
    return 0;
}
