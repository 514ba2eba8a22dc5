// The cluster split-K GEMM (cuda_gemm_tc.h's cv_gemm_tc_cluster, float32 3xTF32, B N-major)
// at GPT-2's four shapes at 1 x 128 tokens, against variants of its last step, on the device
// machine: µs per launch back to back, the weights warm in L2 and rotated over copies that
// exceed it, the error against a double reference on sampled rows, and a hash of the
// output's bits (builds of the probe against two versions of the headers compared).
//   base      the header's kernel as shipped, a tile a cluster of 8 blocks (before
//             2026-12-06 each block added its rows of a half from the 8 blocks' shared memory
//             one scalar load after the other; since, as v4 C=8)
//   v4 C=8/4/2  the same sums, each thread's float4 of every block loaded before it adds
//             them (in chunk order: the same total), clusters of C blocks
//   main C=8  the main loop alone: each block stores its k-chunk's partial tile (no sum)
//   main 1xTF32  the same with one TF32 product (no split, one mma in three)
//   tc64 1    one block a 64 x 128 tile over all of k (no split)
//   nvcc -O3 -std=c++17 -arch=sm_90 -I../../native/include tcc_probe.cu -o t && ./t
#include <cmath>
#include "cuvil_aot/cuda_gemm.h"
#include "probe_util.cuh"

struct Store {
    float *c;
    int64_t n;
    __device__ void operator()(int64_t, int64_t i, int64_t j, float acc) const { c[i * n + j] = acc; }
};

extern "C" __global__ void CV_TC_CLUSTER_DIMS __launch_bounds__(256, 2)
    base(const __grid_constant__ cv_gpu_term t, int64_t m, int64_t n, float *c) {
    cv_gemm_tc_cluster<false, true>(&t, 1, m, n, 1, Store{c, n});
}

// RED 1: float4 sums, loads first; RED 2: no sum, the partial tile of chunk s at c + s m n.
template <int C, int RED, bool X3 = true>
__global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(256, 2)
    var(const __grid_constant__ cv_gpu_term t, int64_t m, int64_t n, float *c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int BM = 64, W = 128 + 4, SHARE = 32 / C;
    const int s = (int)(blockIdx.x % C);
    const int64_t tiles_n = (n + 127) / 128, tile = blockIdx.x / C;
    const int64_t row0 = (tile / tiles_n) * BM, col0 = (tile % tiles_n) * 128;
    __shared__ __align__(16) cv_tc_smem<false, BM> sm;
    float *stage = reinterpret_cast<float *>(&sm);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wm = warp >> 2, wn = warp & 3, g = lane >> 2, tq = lane & 3;
    float acc[BM / 32][4][4];
    cv_tc_tile<false, BM, X3>(&t, 1, 0, m, n, row0, col0, s, C, sm, acc);
    if (RED == 2) {
        for (int i = 0; i < BM / 32; i++)
            for (int j = 0; j < 4; j++)
                for (int e = 0; e < 4; e++) {
                    const int64_t r = row0 + wm * 32 + i * 16 + g + (e >> 1) * 8;
                    const int64_t q = col0 + wn * 32 + j * 8 + 2 * tq + (e & 1);
                    if (r < m && q < n) c[s * m * n + r * n + q] = acc[i][j][e];
                }
        return;
    }
#pragma unroll
    for (int half = 0; half < 2; half++) {
        if (wm == half)
#pragma unroll
            for (int i = 0; i < BM / 32; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        stage[(i * 16 + g + (e >> 1) * 8) * W + wn * 32 + j * 8 + 2 * tq +
                              (e & 1)] = acc[i][j][e];
        cv_cluster_sync();
#pragma unroll 1
        for (int e = threadIdx.x; e < SHARE * 32; e += 256) {
            const int r = s * SHARE + e / 32, c4 = (e % 32) * 4;
            const uint32_t a = (uint32_t)__cvta_generic_to_shared(stage + r * W + c4);
            float4 p[C];
#pragma unroll
            for (int q = 0; q < C; q++) {
                uint32_t ra;
                asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(ra) : "r"(a), "r"(q));
                asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                             : "=f"(p[q].x), "=f"(p[q].y), "=f"(p[q].z), "=f"(p[q].w)
                             : "r"(ra));
            }
            float4 v = make_float4(0, 0, 0, 0);
#pragma unroll
            for (int q = 0; q < C; q++) v.x += p[q].x, v.y += p[q].y, v.z += p[q].z, v.w += p[q].w;
            const int64_t i = row0 + half * 32 + r, j = col0 + c4;
            const float vs[4] = {v.x, v.y, v.z, v.w};
            for (int u = 0; u < 4; u++)
                if (i < m && j + u < n) c[i * n + j + u] = vs[u];
        }
        cv_cluster_sync();
    }
#endif
}

__global__ void __launch_bounds__(256, 2)
    tc64(const __grid_constant__ cv_gpu_term t, int64_t m, int64_t n, float *c) {
    cv_gemm_tc<false, 64, true>(&t, 1, m, n, 1, 1, nullptr, Store{c, n});
}

int main() {
    const int shapes[][3] = {{128, 768, 2304}, {128, 768, 768}, {128, 768, 3072}, {128, 3072, 768}};
    const int COPIES = 8;  // rotated weights: 8 x 9.4 MB at the largest, past the 50 MB L2
    srand(5);
    printf("µs per launch, warm (one B) / rotated (%d copies of B); max err / max |ref|\n", COPIES);
    printf("%-16s %25s %25s %25s %25s %25s %25s %25s\n", "m x k x n", "base", "v4 C=8", "v4 C=4",
           "v4 C=2", "main C=8", "main 1xTF32", "tc64 1");
    for (auto &s : shapes) {
        const int m = s[0], k = s[1], n = s[2];
        auto a = random_floats((size_t)m * k, 1), w = random_floats((size_t)k * n, 1);
        float *da = upload(a), *dc, *dw[COPIES];
        for (auto &d : dw) d = upload(w);
        CK(cudaMalloc(&dc, 4 * (size_t)m * n * 8));
        std::vector<float> out((size_t)m * n);
        char name[32];
        snprintf(name, sizeof name, "%dx%dx%d", m, k, n);
        printf("%-16s", name);
        auto term = [&](int i) {
            return cv_gpu_term{(const char *)da, k, 1, 0, (const char *)dw[i], n, 1, 0, k};
        };
        auto run = [&](auto launch, bool partial) {
            CK(cudaMemset(dc, 0xff, 4 * (size_t)m * n * 8));
            launch(term(0));
            CK(cudaGetLastError());
            double err = 0, top = 0;
            uint32_t hash = 2166136261u;  // FNV-1a over the output's bits: builds compared
            if (!partial) {
                CK(cudaMemcpy(out.data(), dc, 4 * out.size(), cudaMemcpyDeviceToHost));
                for (float f : out) hash = (hash ^ *reinterpret_cast<uint32_t *>(&f)) * 16777619u;
                for (int i = 0; i < m; i += 13)
                    for (int j = 0; j < n; j++) {
                        double ref = 0;
                        for (int q = 0; q < k; q++) ref += (double)a[(size_t)i * k + q] * w[(size_t)q * n + j];
                        const double e = std::fabs(out[(size_t)i * n + j] - ref);
                        err = std::isnan(e) ? INFINITY : std::max(err, e);
                        top = std::max(top, std::fabs(ref));
                    }
            }
            int r = 0;
            const float warm = back_to_back_us([&] { launch(term(0)); }, 200);
            const float cold = back_to_back_us([&] { launch(term(r++ % COPIES)); }, 200);
            printf(" %5.1f/%5.1f %.0e %08x", warm, cold, partial ? 0.0 : err / top, hash);
        };
        const uint32_t tiles = (uint32_t)(((m + 63) / 64) * ((n + 127) / 128));
        run([&](cv_gpu_term t) { base<<<tiles * CV_TC_CLUSTER, 256>>>(t, m, n, dc); }, false);
        run([&](cv_gpu_term t) { var<8, 1><<<tiles * 8, 256>>>(t, m, n, dc); }, false);
        run([&](cv_gpu_term t) { var<4, 1><<<tiles * 4, 256>>>(t, m, n, dc); }, false);
        run([&](cv_gpu_term t) { var<2, 1><<<tiles * 2, 256>>>(t, m, n, dc); }, false);
        run([&](cv_gpu_term t) { var<8, 2><<<tiles * 8, 256>>>(t, m, n, dc); }, true);
        run([&](cv_gpu_term t) { var<8, 2, false><<<tiles * 8, 256>>>(t, m, n, dc); }, true);
        run([&](cv_gpu_term t) { tc64<<<tiles, 256>>>(t, m, n, dc); }, false);
        printf("\n");
        CK(cudaFree(da)); CK(cudaFree(dc));
        for (auto d : dw) CK(cudaFree(d));
    }
    return 0;
}
