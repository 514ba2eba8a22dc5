// The GEMV of 8-row tiles (cuda_gemv_rows.h, entry `_gemv8`): y = x @ W + b at GPT-2's
// four decode projections for 8 sequences (x 8 x k, W row-major k x n), as the runtime runs
// it, against variants that keep more of W in flight per thread: LOADS float4s of W in
// registers (the runtime: 4), blocks of 512 threads, and W copied by cp.async into shared
// memory DEPTH float4s a thread at a time. The H100 ran the four in 48.5 us as `gemv8`
// (bench/gpu/h100_2026-12-07g/abtree.txt): 28 MB at 0.6 TB/s.
// us per launch in a graph of 20: "L2", one W (it stays in the 50 MB L2, as in a profiler's
// repeated calls); "DRAM", four copies of W in turn (113 MB: read from memory, as a decode
// step whose caches push its weights out of the L2 does). ! marks a wrong result.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I../../native/include gemv_rows_probe.cu -o g && ./g
#include <cmath>
#include "cuvil_aot/cuda_gemm.h"
#include "cuvil_aot/cuda_gemm_tc.h"
#include "probe_util.cuh"

struct BiasStore {
    const float *b;
    float *y;
    int64_t n;
    __device__ void operator()(int64_t, int64_t i, int64_t j, float acc) const {
        y[i * n + j] = acc + b[j];
    }
};

template <int THREADS, int LOADS>
__global__ void __launch_bounds__(THREADS) rows(const __grid_constant__ cv_gpu_term t, int m, int n,
                                                int cols, BiasStore epi) {
    cv_gemv_vec_rows<LOADS>(&t, 1, m, n, 1, cols, epi);
}

// W's float4s for this thread's k rows through shared memory: DEPTH cp.async copies in
// flight, then the FMAs from shared memory (slot u of thread i at u * THREADS + i).
template <int DEPTH>
__device__ void term_async(const cv_gpu_term &t, int m, int col, int first, int step,
                           float (&acc)[8][4], float4 *slots) {
    const float *a = reinterpret_cast<const float *>(t.a);
    const float *b = reinterpret_cast<const float *>(t.b) + col;
    const int k_end = (int)t.k, b_rs = (int)t.b_rs;
    for (int k = first; k < k_end; k += DEPTH * step) {
#pragma unroll
        for (int u = 0; u < DEPTH; u++) {
            const bool in = k + u * step < k_end;
            cv_cp_async16(&slots[u * blockDim.x + threadIdx.x], in ? b + (k + u * step) * b_rs : b,
                          in ? 16 : 0);
        }
        cv_cp_async_commit();
        cv_cp_async_wait<0>();
#pragma unroll
        for (int u = 0; u < DEPTH; u++)
            if (k + u * step < k_end) {
                const float4 w = slots[u * blockDim.x + threadIdx.x];
                const int kk = k + u * step;
#pragma unroll
                for (int r = 0; r < 8; r++) {
                    const float x = __ldg(a + (r < m ? r : m - 1) * (int)t.a_rs + kk);
                    acc[r][0] = fmaf(x, w.x, acc[r][0]), acc[r][1] = fmaf(x, w.y, acc[r][1]);
                    acc[r][2] = fmaf(x, w.z, acc[r][2]), acc[r][3] = fmaf(x, w.w, acc[r][3]);
                }
            }
    }
}

// As cv_gemv_vec_rows for one row group and one term, W through term_async.
template <int DEPTH>
__global__ void __launch_bounds__(256) rows_async(const __grid_constant__ cv_gpu_term t, int m, int n,
                                                  int cols, BiasStore epi) {
    __shared__ __align__(16) float4 slots[DEPTH * 256];
    __shared__ float part[8][8][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const int lanes_log = __ffs(cols) - 3, lanes = 1 << lanes_log;
    const int mine = (lane & (lanes - 1)) * 4;
    const int first = (warp << (5 - lanes_log)) + (lane >> lanes_log);
    const int step = nwarps << (5 - lanes_log);
    for (int tile = blockIdx.x; tile < (n + cols - 1) / cols; tile += gridDim.x) {
        const int col0 = tile * cols;
        float acc[8][4] = {};
        if (col0 + mine < n) term_async<DEPTH>(t, m, col0 + mine, first, step, acc, slots);
#pragma unroll
        for (int r = 0; r < 8; r++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
#pragma unroll
                for (int off = 16; off >= 2; off >>= 1)
                    if (off >= lanes) acc[r][e] += __shfl_xor_sync(0xffffffffu, acc[r][e], off);
                if (lane < lanes) part[warp][r][mine + e] = acc[r][e];
            }
        __syncthreads();
        for (int i = threadIdx.x; i < 8 * cols; i += blockDim.x) {
            const int r = i / cols, c = i % cols;
            float sum = 0;
            for (int v = 0; v < nwarps; v++) sum += part[v][r][c];
            if (r < m && col0 + c < n) epi(0, r, col0 + c, sum);
        }
        __syncthreads();
    }
}

static cudaStream_t st;

int main() {
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    int sm;
    CK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0));
    const int shapes[][2] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}};
    const int m = 8, copies = 4;
    srand(9);
    printf("us per launch in a graph of 20, 8 rows; columns a tile as the host picks them\n");
    printf("%-10s %4s %5s | %-6s %7s %7s %7s %7s %7s %7s\n", "k x n", "cols", "MB", "W in",
           "256x4", "256x8", "256x16", "512x4", "512x8", "async8");
    for (auto &s : shapes) {
        const int k = s[0], n = s[1];
        int cols = 32;  // gpu_launch.py's rule for gemv8
        while (cols > 8 && (n + cols - 1) / cols < sm) cols /= 2;
        auto x = random_floats((size_t)m * k, 1), w = random_floats((size_t)k * n, 1),
             b = random_floats(n, 1);
        std::vector<double> ref((size_t)m * n);
        double top = 0;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double acc = b[j];
                for (int q = 0; q < k; q++) acc += (double)x[(size_t)i * k + q] * w[(size_t)q * n + j];
                ref[(size_t)i * n + j] = acc, top = std::max(top, std::fabs(acc));
            }
        float *dx = upload(x), *db = upload(b), *dy, *dw[copies];
        for (auto &p : dw) p = upload(w);
        CK(cudaMalloc(&dy, 4 * ref.size()));
        std::vector<float> out(ref.size());
        const BiasStore epi{db, dy, n};
        const unsigned grid = (unsigned)((n + cols - 1) / cols);
        for (int rotate : {1, copies}) {
            printf("%4dx%-5d %4d %5.1f | %-6s", k, n, cols, 4e-6 * k * n, rotate == 1 ? "L2" : "DRAM");
            auto run = [&](auto kernel, int threads) {
                int i = 0;
                auto launch = [&] {
                    const cv_gpu_term t = {(const char *)dx, k, 1, 0, (const char *)dw[i++ % rotate], n, 1, 0, k};
                    kernel<<<grid, threads, 0, st>>>(t, m, n, cols, epi);
                };
                CK(cudaMemsetAsync(dy, 0xff, 4 * out.size(), st));
                launch();
                CK(cudaGetLastError());
                CK(cudaStreamSynchronize(st));
                CK(cudaMemcpy(out.data(), dy, 4 * out.size(), cudaMemcpyDeviceToHost));
                double err = 0;
                for (size_t q = 0; q < out.size(); q++) {
                    const double e = std::fabs(out[q] - ref[q]);
                    err = std::isnan(e) ? INFINITY : std::max(err, e);
                }
                printf(" %7.2f%s", graph_us(st, launch), err / top < 2e-6 ? "" : "!");
            };
            run(rows<256, 4>, 256);
            run(rows<256, 8>, 256);
            run(rows<256, 16>, 256);
            run(rows<512, 4>, 512);
            run(rows<512, 8>, 512);
            run(rows_async<8>, 256);
            printf("\n");
        }
        CK(cudaFree(dx)); CK(cudaFree(db)); CK(cudaFree(dy));
        for (auto p : dw) CK(cudaFree(p));
    }
    return 0;
}
