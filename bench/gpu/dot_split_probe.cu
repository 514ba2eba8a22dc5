// The batch-1 dot GEMV (x @ w.T, 8 or 16 rows, 3xTF32 mma: cv_gemv_dot_mma) with each tile's
// k split over a thread-block cluster (sm_90): CS blocks of W warps share a tile of 8 columns,
// each warp of the cluster a share of k's chunks of 16; the partial sums meet in the cluster's
// distributed shared memory, each block reducing and storing a share of the tile's outputs.
// Against the host's pick today (16 warps, one block a tile: cv_gemv_dot_wide), at the BERT-base
// layer's shapes. us per launch in a graph of 20, results against float64.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I../../native/include dot_split_probe.cu -o d && ./d
#include <cooperative_groups.h>
#include <cmath>
#include "cuvil_aot/cuda_gemm.h"
#include "probe_util.cuh"

namespace cg = cooperative_groups;

struct Store {
    float *c;
    int64_t n;
    __device__ void operator()(int64_t, int64_t i, int64_t j, float acc) const { c[i * n + j] = acc; }
};

__global__ void __launch_bounds__(512, 1) wide(const __grid_constant__ cv_gpu_term t, int64_t m,
                                               int64_t n, float *c) {
    cv_gemv_dot_mma<1, 4>(&t, 1, m, n, 1, cv_gemv_buffer(), Store{c, n});
}

// cv_gemv_mma_term with the warp's index and count in the cluster given.
template <int U>
__device__ __forceinline__ void term(const cv_gpu_term &tm, int64_t m, int64_t n, int64_t col0,
                                     int wi, int wn, float (&acc)[1][4]) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const float *a = reinterpret_cast<const float *>(tm.a), *b = reinterpret_cast<const float *>(tm.b);
    const float *row0 = a + (g < m ? g : m - 1) * tm.a_rs + 4 * t;
    const float *row1 = a + (g + 8 < m ? g + 8 : m - 1) * tm.a_rs + 4 * t;
    const int64_t cc = col0 + g;
    const float *col = b + (cc < n ? cc : n - 1) * tm.b_cs + 4 * t;
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int64_t k0 = (int64_t)wi * 16; k0 < tm.k; k0 += (int64_t)wn * 16 * U) {
        float4 x[U][2], w4[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t k = k0 + (int64_t)u * wn * 16;
            const bool in = k + 4 * t < tm.k;
            x[u][0] = in ? __ldg(reinterpret_cast<const float4 *>(row0 + k)) : zero;
            x[u][1] = in ? __ldg(reinterpret_cast<const float4 *>(row1 + k)) : zero;
            w4[u] = in ? __ldg(reinterpret_cast<const float4 *>(col + k)) : zero;
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const float lo[1][2] = {{w4[u].x, w4[u].y}}, hi[1][2] = {{w4[u].z, w4[u].w}};
            cv_gemv_mma_slab<1>(x[u][0].x, x[u][1].x, x[u][0].y, x[u][1].y, lo, acc);
            cv_gemv_mma_slab<1>(x[u][0].z, x[u][1].z, x[u][0].w, x[u][1].w, hi, acc);
        }
    }
}

// A cluster of CS blocks of W warps per tile of 8 columns; grid.x = tiles * CS.
template <int CS, int W, int U>
__global__ void __launch_bounds__(32 * W) split(const __grid_constant__ cv_gpu_term t, int64_t m,
                                                int64_t n, float *c) {
    __shared__ float part[W][16][8];
    cg::cluster_group cluster = cg::this_cluster();
    const int rank = (int)cluster.block_rank(), warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, tq = lane & 3;
    const int64_t col0 = (int64_t)(blockIdx.x / CS) * 8;
    float acc[1][4] = {{0, 0, 0, 0}};
    term<U>(t, m, n, col0, rank * W + warp, CS * W, acc);
#pragma unroll
    for (int e = 0; e < 4; e++) part[warp][g + (e >> 1) * 8][2 * tq + (e & 1)] = acc[0][e];
    cluster.sync();
    // block `rank` sums rows rank, rank + CS, ... of the tile over every warp of the cluster
    for (int i = threadIdx.x; i < 16 * 8; i += 32 * W) {
        const int r = i / 8, cc = i % 8;
        if (r % CS != rank || r >= m) continue;
        float sum = 0;
        for (int b = 0; b < CS; b++) {
            float (*peer)[16][8] = cluster.map_shared_rank(part, b);
            for (int w = 0; w < W; w++) sum += peer[w][r][cc];
        }
        if (col0 + cc < n) c[r * n + col0 + cc] = sum;
    }
    cluster.sync(); /* the peers' part[] stays until every block has read it */
}

static cudaStream_t st;

template <int CS, int W, int U>
static void launch_split(const cv_gpu_term &tt, int64_t m, int64_t n, float *c) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)((n + 7) / 8 * CS));
    cfg.blockDim = dim3(32 * W);
    cfg.stream = st;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = CS, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, split<CS, W, U>, tt, m, n, c));
}

int main() {
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    const int shapes[][3] = {{8, 768, 768}, {8, 3072, 768}, {8, 768, 3072}, {16, 768, 768},
                             {16, 3072, 768}, {8, 768, 2304}};
    srand(5);
    printf("us per launch in a graph; floor = weight bytes at 3.35 TB/s\n");
    printf("%-14s %7s %8s %8s %8s %8s %8s %8s %8s\n", "m x k x n", "floor", "wide16", "c2w8u4",
           "c2w16u4", "c4w8u4", "c4w8u2", "c4w16u2", "c8w8u2");
    for (auto &s : shapes) {
        const int m = s[0], k = s[1], n = s[2];
        auto a = random_floats((size_t)m * k, 1), w = random_floats((size_t)n * k, 1);
        std::vector<double> ref((size_t)m * n);
        double top = 0;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double acc = 0;
                for (int q = 0; q < k; q++) acc += (double)a[(size_t)i * k + q] * w[(size_t)j * k + q];
                ref[(size_t)i * n + j] = acc, top = std::max(top, std::fabs(acc));
            }
        float *da = upload(a), *dw = upload(w), *dc;
        CK(cudaMalloc(&dc, 4 * (size_t)m * n));
        const cv_gpu_term tt = {(const char *)da, k, 1, 0, (const char *)dw, 1, k, 0, k};
        std::vector<float> out((size_t)m * n);
        auto run = [&](auto launch) {
            CK(cudaMemsetAsync(dc, 0xff, 4 * out.size(), st));
            launch();
            CK(cudaGetLastError());
            CK(cudaStreamSynchronize(st));
            CK(cudaMemcpy(out.data(), dc, 4 * out.size(), cudaMemcpyDeviceToHost));
            double err = 0;
            for (size_t i = 0; i < out.size(); i++) {
                const double e = std::fabs(out[i] - ref[i]);
                err = std::isnan(e) ? INFINITY : std::max(err, e);
            }
            printf(" %7.2f%s", graph_us(st, launch), err / top < 2e-6 ? " " : "!");
        };
        char name[32];
        snprintf(name, sizeof name, "%dx%dx%d", m, k, n);
        printf("%-14s %7.2f", name, 4.0 * n * k / 3.35e6);
        run([&] { wide<<<(n + 7) / 8, 512, 0, st>>>(tt, m, n, dc); });
        run([&] { launch_split<2, 8, 4>(tt, m, n, dc); });
        run([&] { launch_split<2, 16, 4>(tt, m, n, dc); });
        run([&] { launch_split<4, 8, 4>(tt, m, n, dc); });
        run([&] { launch_split<4, 8, 2>(tt, m, n, dc); });
        run([&] { launch_split<4, 16, 2>(tt, m, n, dc); });
        run([&] { launch_split<8, 8, 2>(tt, m, n, dc); });
        printf("\n");
        CK(cudaFree(da)); CK(cudaFree(dw)); CK(cudaFree(dc));
    }
    return 0;
}
