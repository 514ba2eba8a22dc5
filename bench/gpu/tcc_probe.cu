// The cluster split-K GEMM (cuda_gemm_tc.h's cv_gemm_tc_cluster, float32 3xTF32, B N-major)
// at GPT-2's four shapes at 1 x 128 tokens, against variants, on the device
// machine: µs per launch back to back, the weights warm in L2 and rotated over copies that
// exceed it, the error against a double reference on sampled rows, and a hash of the
// output's bits (builds of the probe against two versions of the headers compared).
//   base      the header's kernel as shipped, a tile a cluster of 8 blocks (built against
//             headers with h100_2026-12-06d/tcc_deep_port.patch applied, its deep-slab loop)
//   deep KSxS  slabs of KS k (not 8) in S stages of dynamic shared memory, the same
//             arithmetic in the same order (the same bits as base); C=16: clusters of 16
//             (non-portable size), C=1: one block a tile over all of k, no sums
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

#ifdef CV_TCC_SMEM  // the port's kernel (tcc_deep_port.patch): k-slabs of CV_TCC_KS, dynamic smem
#define BASE_SMEM CV_TCC_SMEM
extern "C" __global__ void CV_TC_CLUSTER_DIMS __launch_bounds__(256, 2)
    base(const __grid_constant__ cv_gpu_term t, int64_t m, int64_t n, float *c) {
    cv_gemm_tc_cluster<true>(&t, 1, m, n, 1, Store{c, n});
}
#else
#define BASE_SMEM 0
extern "C" __global__ void CV_TC_CLUSTER_DIMS __launch_bounds__(256, 2)
    base(const __grid_constant__ cv_gpu_term t, int64_t m, int64_t n, float *c) {
    cv_gemm_tc_cluster<false, true>(&t, 1, m, n, 1, Store{c, n});
}
#endif

// Deeper k-slabs in dynamic shared memory: KS (16 or 32) k a slab in S stages, the
// same 3xTF32 arithmetic in the same order as the header's slabs of 8 (so the same bits):
// fewer barriers and cp.async waits a k, more bytes in flight a block.
template <int KS>
struct Deep {
    static constexpr int BM = 64, LDA = KS + 8, LDB = 128 + 4;  // rows of A and B in floats
    static constexpr int STAGE = BM * LDA + KS * LDB;             // floats a stage
    static constexpr int NA = BM * KS / 4 / 256, NB = KS / 8;     // 16-byte chunks a thread
    static constexpr int AROWS = 256 / (KS / 4);                  // A rows apart for u + 1
};

template <int KS, int S, bool X3>
__device__ void deep_tile(const cv_gpu_term &t, int64_t m, int64_t n, int64_t row0, int64_t col0,
                          float *sm, float (&acc)[2][4][4]) {
    using D = Deep<KS>;
    const int tid = threadIdx.x;
    const int ar = tid / (KS / 4), ak = (tid % (KS / 4)) * 4, bk = tid / 32, bc = (tid % 32) * 4;
    const float *pa = reinterpret_cast<const float *>(t.a) + ak;
    const float *pb = reinterpret_cast<const float *>(t.b) + bc;
    const int64_t left = n - (col0 + bc);
    const int b_bytes = left <= 0 ? 0 : left >= 4 ? 16 : (int)left * 4;
    if (b_bytes) pb += col0;
    const int64_t k = t.k, slabs = (k + KS - 1) / KS;
    auto load = [&](int64_t s, int st) {
        float *a = sm + st * D::STAGE, *b = a + D::BM * D::LDA;
        const int64_t kk = s * KS;
#pragma unroll
        for (int u = 0; u < D::NA; u++) {
            const int r = ar + u * D::AROWS;
            const int64_t kl = k - (kk + ak);
            const int bytes = row0 + r < m && kl > 0 ? (kl >= 4 ? 16 : (int)kl * 4) : 0;
            cv_cp_async16(a + r * D::LDA + ak, bytes ? pa + (row0 + r) * t.a_rs + kk : pa, bytes);
        }
#pragma unroll
        for (int u = 0; u < D::NB; u++) {
            const int64_t kr = kk + bk + 8 * u;
            const int bytes = kr < k ? b_bytes : 0;
            cv_cp_async16(b + (bk + 8 * u) * D::LDB + bc, bytes ? pb + kr * t.b_rs : pb, bytes);
        }
    };
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++)
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0;
    const int warp = tid >> 5, lane = tid & 31, wm = warp >> 2, wn = warp & 3, g = lane >> 2,
              tq = lane & 3;
#pragma unroll
    for (int s = 0; s < S - 1; s++) {
        if (s < slabs) load(s, s);
        cv_cp_async_commit();
    }
    for (int64_t s = 0; s < slabs; s++) {
        cv_cp_async_wait<S - 2>();
        __syncthreads();
        const int64_t next = s + S - 1;
        if (next < slabs) load(next, (int)(next % S));
        cv_cp_async_commit();
        const float *a = sm + (s % S) * D::STAGE, *b = a + D::BM * D::LDA;
#pragma unroll 2
        for (int q = 0; q < KS / 8; q++) {  // the header's slab of 8, at k 8q of this one
            uint32_t bb[4][2], bs[4][2];
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int c = wn * 32 + j * 8 + g;
                cv_split_tf32(b[(8 * q + 2 * tq) * D::LDB + c], bb[j][0], bs[j][0]);
                cv_split_tf32(b[(8 * q + 2 * tq + 1) * D::LDB + c], bb[j][1], bs[j][1]);
            }
#pragma unroll
            for (int i = 0; i < 2; i++) {
                const int r = wm * 32 + i * 16 + g;
                const float2 lo = *reinterpret_cast<const float2 *>(a + r * D::LDA + 8 * q + 2 * tq);
                const float2 hi =
                    *reinterpret_cast<const float2 *>(a + (r + 8) * D::LDA + 8 * q + 2 * tq);
                uint32_t ab[4], as[4];
                cv_split_tf32(lo.x, ab[0], as[0]);
                cv_split_tf32(hi.x, ab[1], as[1]);
                cv_split_tf32(lo.y, ab[2], as[2]);
                cv_split_tf32(hi.y, ab[3], as[3]);
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    float part[4] = {0, 0, 0, 0};
                    if (X3) {
                        cv_mma_tf32(part, as, bb[j]);
                        cv_mma_tf32(part, ab, bs[j]);
                    }
                    cv_mma_tf32(part, ab, bb[j]);
#pragma unroll
                    for (int e = 0; e < 4; e++) acc[i][j][e] += part[e];
                }
            }
        }
    }
    cv_cp_async_wait<0>();
    __syncthreads();
}

// The cluster kernel's sums (the header's, v4) after deep_tile.
template <int KS, int S, int C = 8, bool X3 = true>
__global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(256, 2)
    deep(const __grid_constant__ cv_gpu_term t0, int64_t m, int64_t n, float *c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) float dsm[];
    constexpr int BM = 64, W = 128 + 4, SHARE = 32 / C;
    const int s = (int)(blockIdx.x % C);
    const int64_t tiles_n = (n + 127) / 128, tile = blockIdx.x / C;
    const int64_t row0 = (tile / tiles_n) * BM, col0 = (tile % tiles_n) * 128;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wm = warp >> 2, wn = warp & 3, g = lane >> 2, tq = lane & 3;
    float acc[2][4][4];
    deep_tile<KS, S, X3>(cv_term_chunk<float>(t0, s, C), m, n, row0, col0, dsm, acc);
    float *stage = dsm;
#pragma unroll
    for (int half = 0; half < 2; half++) {
        if (wm == half)
#pragma unroll
            for (int i = 0; i < 2; i++)
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
            float4 p[C];
#pragma unroll
            for (int q = 0; q < C; q++) p[q] = cv_cluster_ld4(stage + r * W + c4, q);
            float v[4] = {0, 0, 0, 0};
#pragma unroll
            for (int q = 0; q < C; q++) v[0] += p[q].x, v[1] += p[q].y, v[2] += p[q].z, v[3] += p[q].w;
            const int64_t i = row0 + half * 32 + r, j = col0 + c4;
            for (int u = 0; u < 4; u++)
                if (i < m && j + u < n) c[i * n + j + u] = v[u];
        }
        cv_cluster_sync();
    }
#endif
}

template <int KS, int S, int C = 8>
static void launch_deep(uint32_t tiles, cv_gpu_term t, int m, int n, float *dc) {
    constexpr int bytes = S * Deep<KS>::STAGE * 4;
    static bool set = false;
    if (!set) {
        CK(cudaFuncSetAttribute(deep<KS, S, C>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
        if (C > 8) CK(cudaFuncSetAttribute(deep<KS, S, C>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        set = true;
    }
    deep<KS, S, C><<<tiles * C, 256, bytes>>>(t, m, n, dc);
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
    printf("%-16s %25s %25s %25s %25s %25s %25s %25s %25s %25s\n", "m x k x n", "base", "deep 16x3", "deep 16x4", "deep 32x3",
           "deep 32x4", "deep 16x6", "deep 32x3 C=16", "deep 32x4 C=1", "tc64 1");
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
        if (BASE_SMEM > 48 * 1024)
            CK(cudaFuncSetAttribute(base, cudaFuncAttributeMaxDynamicSharedMemorySize, BASE_SMEM));
        run([&](cv_gpu_term t) { base<<<tiles * CV_TC_CLUSTER, 256, BASE_SMEM>>>(t, m, n, dc); }, false);
        run([&](cv_gpu_term t) { launch_deep<16, 3>(tiles, t, m, n, dc); }, false);
        run([&](cv_gpu_term t) { launch_deep<16, 4>(tiles, t, m, n, dc); }, false);
        run([&](cv_gpu_term t) { launch_deep<32, 3>(tiles, t, m, n, dc); }, false);
        run([&](cv_gpu_term t) { launch_deep<32, 4>(tiles, t, m, n, dc); }, false);
        run([&](cv_gpu_term t) { launch_deep<16, 6>(tiles, t, m, n, dc); }, false);
        run([&](cv_gpu_term t) { launch_deep<32, 3, 16>(tiles, t, m, n, dc); }, false);
        run([&](cv_gpu_term t) { launch_deep<32, 4, 1>(tiles, t, m, n, dc); }, false);
        run([&](cv_gpu_term t) { tc64<<<tiles, 256>>>(t, m, n, dc); }, false);
        printf("\n");
        CK(cudaFree(da)); CK(cudaFree(dc));
        for (auto d : dw) CK(cudaFree(d));
    }
    return 0;
}
