// The int8-weight GEMV at batch 1 (issue 24: >= 80% of the weight bytes over copy
// bandwidth): y[o] = s[o] * sum_p q[o, p] x[p], q (n, k) int8 row-major, per channel. The
// runtime's cv_gemv_q8 (a warp an output, x read from L1 for every output, I2F per byte)
// against variants: O outputs a warp (each x chunk read once for O weight chunks), U
// chunks an output in flight, the bytes converted by I2F or by a byte permute into
// 2^23 + (q + 128) and one FADD (I2F runs at 16 a clock an SM on sm_90: 4.2 TB/s of
// weight at 1.98 GHz by itself), weights loaded through L1 or around it. Weights rotated
// over copies > 2x the L2, so each launch reads them from HBM. Prints us a launch, GB/s
// of q and s, that over the device-to-device copy rate, and the error against float64.
//   nvcc -O3 -std=c++17 -arch=sm_90 -I../../native/include q8_probe.cu -o q && ./q
// (-I a directory holding an older cuda_q8.h first: the runtime's kernel as it was.)
#include <cmath>
#include <cuda_fp16.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuvil_aot/cuda_driver.h"
#include "cuvil_aot/cuda_q8.h"
#include "probe_util.cuh"
#include "q8_bulk.cuh"

#ifndef CV_GEMV_Q8_PER_BLOCK /* cuda_q8.h before it took several outputs a warp */
#define CV_GEMV_Q8_PER_BLOCK (CV_GEMV_Q8_BLOCK / 32)
#endif

struct Store {
    float *y;
    __device__ void operator()(int64_t, int64_t, int64_t o, float v) const { y[o] = v; }
};

__global__ void __launch_bounds__(CV_GEMV_Q8_BLOCK, CV_GEMV_Q8_X1_BLOCKS)
    current(cv_gpu_term t, cv_q8_weight w, int64_t n, Store e) {
    cv_gemv_q8<1>(t, w, 1, n, 1, e);
}

// Four signed bytes of a word as floats.
template <bool PRMT>
__device__ __forceinline__ void bytes4(int word, float q[4]) {
    if constexpr (PRMT) {
        const unsigned u = (unsigned)word ^ 0x80808080u; /* q + 128, unsigned */
#pragma unroll
        for (int e = 0; e < 4; e++) /* 0x4B0000XX = 2^23 + XX, exact */
            q[e] = __int_as_float((int)__byte_perm(u, 0x4B000000u, 0x7540u | e)) - 8388736.f;
    } else {
#pragma unroll
        for (int e = 0; e < 4; e++) q[e] = (float)(signed char)(word >> (8 * e));
    }
}

template <bool NA>
__device__ __forceinline__ int4 load16(const int4 *p) {
    if constexpr (NA) {
        int4 v;
        asm volatile("ld.global.nc.L1::no_allocate.v4.s32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
        return v;
    } else {
        return __ldg(p);
    }
}

constexpr int WARPS = 4; /* a block of 128 */

// The O rows' sums over chunks first, first + stride, ... (< chunks; U of each row in
// flight) into acc: each x chunk read once for the O rows; k % 16 == 0, rows aligned.
template <int O, int U, bool PRMT, bool NA>
__device__ __forceinline__ void chunk_sums(const float *x, const int4 *const rows[O], int chunks,
                                           int first, int stride, float acc[O]) {
    for (int c = first; c < chunks; c += stride * U) {
        int4 raw[U][O];
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int o = 0; o < O; o++)
                raw[u][o] = c + stride * u < chunks ? load16<NA>(rows[o] + c + stride * u)
                                                    : make_int4(0, 0, 0, 0);
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (c + stride * u >= chunks) break;
            const float4 *xp = reinterpret_cast<const float4 *>(x + 16 * (c + stride * u));
            float4 xv[4];
#pragma unroll
            for (int e4 = 0; e4 < 4; e4++) xv[e4] = __ldg(xp + e4);
#pragma unroll
            for (int o = 0; o < O; o++) {
                const int words[4] = {raw[u][o].x, raw[u][o].y, raw[u][o].z, raw[u][o].w};
                float part = 0.f;
#pragma unroll
                for (int e4 = 0; e4 < 4; e4++) {
                    float qv[4];
                    bytes4<PRMT>(words[e4], qv);
                    part = fmaf(xv[e4].x, qv[0], part);
                    part = fmaf(xv[e4].y, qv[1], part);
                    part = fmaf(xv[e4].z, qv[2], part);
                    part = fmaf(xv[e4].w, qv[3], part);
                }
                acc[o] += part;
            }
        }
    }
}

// Rows o0 .. o0 + O - 1 of q (those past n: row n - 1), the sums zeroed.
template <int O>
__device__ __forceinline__ void start(const int8_t *q, int o0, int n, int k, const int4 *rows[O],
                                      float acc[O]) {
#pragma unroll
    for (int o = 0; o < O; o++) {
        rows[o] = reinterpret_cast<const int4 *>(q + (size_t)min(o0 + o, n - 1) * k);
        acc[o] = 0.f;
    }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// O outputs a warp, U chunks of each in flight a lane.
template <int O, int U, bool PRMT, bool NA>
__global__ void __launch_bounds__(32 * WARPS) multi(const float *x, const int8_t *q,
                                                    const float *s, float *y, int n, int k) {
    const int lane = threadIdx.x & 31, warps = gridDim.x * WARPS;
    for (int o0 = (blockIdx.x * WARPS + (threadIdx.x >> 5)) * O; o0 < n; o0 += warps * O) {
        const int4 *rows[O];
        float acc[O];
        start<O>(q, o0, n, k, rows, acc);
        chunk_sums<O, U, PRMT, NA>(x, rows, k >> 4, lane, 32, acc);
#pragma unroll
        for (int o = 0; o < O; o++) {
            const float v = warp_sum(acc[o]);
            if (lane == o && o0 + o < n) y[o0 + o] = v * __ldg(s + o0 + o);
        }
    }
}

// A block of BT threads takes O outputs: its threads split the rows' chunks (thread i
// takes chunks i, i + BT, ...; U in flight), then shuffles and shared memory add them up.
// Many more warps than a warp-per-outputs grid has (4096 -> 4096 at four outputs a warp:
// 1,024 warps, 7.8 an SM), to hide the loads' latency.
template <int BT, int O, int U, bool NA>
__global__ void __launch_bounds__(BT) blockk(const float *x, const int8_t *q, const float *s,
                                             float *y, int n, int k) {
    __shared__ float red[BT / 32][O];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    for (int o0 = blockIdx.x * O; o0 < n; o0 += gridDim.x * O) {
        const int4 *rows[O];
        float acc[O];
        start<O>(q, o0, n, k, rows, acc);
        chunk_sums<O, U, true, NA>(x, rows, k >> 4, tid, BT, acc);
#pragma unroll
        for (int o = 0; o < O; o++) {
            const float v = warp_sum(acc[o]);
            if (lane == 0) red[warp][o] = v;
        }
        __syncthreads();
        if (tid < O && o0 + tid < n) {
            float v = 0.f;
#pragma unroll
            for (int w = 0; w < BT / 32; w++) v += red[w][tid];
            y[o0 + tid] = v * __ldg(s + o0 + tid);
        }
        __syncthreads();
    }
}

// The weight on the tensor cores: mma.sync m16n8k16 (f16 operands, f32 sums). A weight byte is
// exactly an f16 (a byte permute makes 1024 + (q + 128), one HSUB2 takes 1152 off, two bytes an
// instruction each), x is NS f16 terms (hi, x - hi, ...) made once a block into shared memory,
// each MMA's k permuted alike on both sides: a lane's 16 bytes of a row feed 4 MMAs (slots 2t,
// 2t + 1 <- bytes 4j, 4j + 1; slots 2t + 8, 2t + 9 <- 4j + 2, 4j + 3), and its x fragments are
// x[16t + 4j ...] in natural order. All 8 columns of B are x (column 0 is used; up to 8 rows
// of x would be free). A block takes 16 TILES rows, its warps split k in steps of 64, U steps
// of loads in flight; |x| < 2^15 here (the kernel proper would scale x by a power of two).
__device__ __forceinline__ uint32_t q8_f16x2(uint32_t u, uint32_t sel) {
    const uint32_t v = __byte_perm(u, 0x64646464u, sel);
    uint32_t r;
    asm("sub.f16x2 %0, %1, %2;" : "=r"(r) : "r"(v), "r"(0x64806480u)); /* 1152, 1152 */
    return r;
}
__device__ __forceinline__ void mma_f16(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int WARPS, int TILES, int NS, int U>
__global__ void __launch_bounds__(32 * WARPS) mmaq(const float *x, const int8_t *q, const float *s,
                                                  float *y, int n, int k) {
    extern __shared__ __align__(16) unsigned short xs[]; /* NS x k f16 */
    __shared__ float red[WARPS][16 * TILES];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    for (int i = tid; i < k; i += 32 * WARPS) {
        float r = x[i];
#pragma unroll
        for (int e = 0; e < NS; e++) {
            const __half h = __float2half_rn(r);
            xs[e * k + i] = __half_as_ushort(h);
            r -= __half2float(h);
        }
    }
    __syncthreads();
    constexpr int ROWS = 16 * TILES;
    const int steps = k / 64;
    for (int o0 = blockIdx.x * ROWS; o0 < n; o0 += gridDim.x * ROWS) {
        const int4 *wr[TILES][2];
#pragma unroll
        for (int i = 0; i < TILES; i++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                wr[i][h] = reinterpret_cast<const int4 *>(q + (size_t)min(o0 + 16 * i + g + 8 * h, n - 1) * k) + t;
        float acc[TILES][2] = {};
        for (int st = warp; st < steps; st += WARPS * U) {
            int4 w[U][TILES][2];
#pragma unroll
            for (int u = 0; u < U; u++)
#pragma unroll
                for (int i = 0; i < TILES; i++)
#pragma unroll
                    for (int h = 0; h < 2; h++)
                        w[u][i][h] = st + WARPS * u < steps ? load16<true>(wr[i][h] + 4 * (st + WARPS * u))
                                                            : make_int4(0, 0, 0, 0);
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int su = st + WARPS * u;
                if (su >= steps) break;
                uint32_t xb[NS][8];
#pragma unroll
                for (int e = 0; e < NS; e++) {
                    const uint4 *p = reinterpret_cast<const uint4 *>(xs + e * k + 64 * su + 16 * t);
                    const uint4 v0 = p[0], v1 = p[1];
                    xb[e][0] = v0.x, xb[e][1] = v0.y, xb[e][2] = v0.z, xb[e][3] = v0.w;
                    xb[e][4] = v1.x, xb[e][5] = v1.y, xb[e][6] = v1.z, xb[e][7] = v1.w;
                }
#pragma unroll
                for (int i = 0; i < TILES; i++) {
                    const uint32_t lo[4] = {(uint32_t)w[u][i][0].x, (uint32_t)w[u][i][0].y,
                                            (uint32_t)w[u][i][0].z, (uint32_t)w[u][i][0].w};
                    const uint32_t hi[4] = {(uint32_t)w[u][i][1].x, (uint32_t)w[u][i][1].y,
                                            (uint32_t)w[u][i][1].z, (uint32_t)w[u][i][1].w};
                    float part[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        const uint32_t ul = lo[j] ^ 0x80808080u, uh = hi[j] ^ 0x80808080u;
                        const uint32_t a[4] = {q8_f16x2(ul, 0x4140), q8_f16x2(uh, 0x4140),
                                               q8_f16x2(ul, 0x4342), q8_f16x2(uh, 0x4342)};
#pragma unroll
                        for (int e = NS - 1; e >= 0; e--) mma_f16(part, a, xb[e][2 * j], xb[e][2 * j + 1]);
                    }
                    acc[i][0] += part[0];
                    acc[i][1] += part[2];
                }
            }
        }
        if (t == 0)
#pragma unroll
            for (int i = 0; i < TILES; i++) {
                red[warp][16 * i + g] = acc[i][0];
                red[warp][16 * i + g + 8] = acc[i][1];
            }
        __syncthreads();
        if (tid < ROWS && o0 + tid < n) {
            float v = 0.f;
#pragma unroll
            for (int w = 0; w < WARPS; w++) v += red[w][tid];
            y[o0 + tid] = v * __ldg(s + o0 + tid);
        }
        __syncthreads();
    }
}

// Every byte of p read once around L1 (U loads in flight a thread), folded by xor.
template <int U>
__global__ void __launch_bounds__(256) read_only(const int4 *p, size_t n16, int *sink) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    int acc = 0;
    for (; i + (U - 1) * stride < n16; i += U * stride) {
        int4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = load16<true>(p + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; u++) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < n16; i += stride) {
        const int4 v = load16<true>(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x7fffffff) *sink = acc; /* keeps the loads */
}

struct Case {
    int k, n;
};

int main() {
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    // device-to-device copy rate: bytes read + written over a 1 GiB copy's time
    const size_t big = (size_t)1 << 30;
    char *c0, *c1;
    CK(cudaMalloc(&c0, big));
    CK(cudaMalloc(&c1, big));
    const float copy_us = back_to_back_us([&] { CK(cudaMemcpyAsync(c1, c0, big, cudaMemcpyDeviceToDevice)); }, 10);
    const double copy_gbps = 2.0 * big / copy_us / 1e3;
    CK(cudaFree(c0));
    CK(cudaFree(c1));
    printf("%s, %d SMs, copy %.0f GB/s (2 x 1 GiB over one copy)\n", prop.name, sms, copy_gbps);
    printf("%14s %-24s %9s %8s %7s %9s\n", "k -> n", "kernel", "us", "GB/s", "of copy", "max err");
    srand(7);
    std::vector<Case> cases{{4096, 11008}, {4096, 4096}, {11008, 4096}, {768, 3072}, {3072, 768}};
    if (getenv("Q8_FIRST")) cases.resize(1);
    for (Case cs : cases) {
        const int k = cs.k, n = cs.n;
        const size_t wbytes = (size_t)n * k + 4 * (size_t)n;
        const int copies = (int)std::max<size_t>(2, (size_t)(120u << 20) / wbytes + 1);
        std::vector<int8_t> hq((size_t)n * k);
        for (auto &v : hq) v = (int8_t)(rand() % 255 - 127);
        std::vector<float> hs = random_floats(n, 0.02f), hx = random_floats(k, 1.f);
        std::vector<double> want(n);
        double wmax = 0;
        for (int o = 0; o < n; o++) {
            double a = 0;
            for (int p = 0; p < k; p++) a += (double)hq[(size_t)o * k + p] * hx[p];
            want[o] = a * hs[o];
            wmax = std::max(wmax, std::fabs(want[o]));
        }
        int8_t *dq;
        CK(cudaMalloc(&dq, (size_t)n * k * copies));
        for (int c = 0; c < copies; c++)
            CK(cudaMemcpy(dq + (size_t)c * n * k, hq.data(), (size_t)n * k, cudaMemcpyHostToDevice));
        float *ds = upload(hs), *dx = upload(hx), *dy;
        CK(cudaMalloc(&dy, 4 * (size_t)n));
        auto report = [&](const char *name, auto launch) {
            const char *only = getenv("Q8_ONLY"); /* one kernel, e.g. for ncu */
            if (only && !strstr(name, only)) return;
            CK(cudaMemset(dy, 0xff, 4 * (size_t)n)); /* poisoned: NaN where unwritten */
            launch(0);
            CK(cudaDeviceSynchronize());
            std::vector<float> got(n);
            CK(cudaMemcpy(got.data(), dy, 4 * (size_t)n, cudaMemcpyDeviceToHost));
            double err = 0;
            for (int o = 0; o < n; o++) err = std::max(err, std::fabs(got[o] - want[o]) / wmax);
            if (!(err < 1e-5)) err = INFINITY;
            int i = 0;
            std::vector<float> t;
            for (int r = 0; r < 5; r++) t.push_back(back_to_back_us([&] { launch(i++ % copies); }, 200));
            const float us = med(t);
            printf("%6d->%-6d %-24s %9.2f %8.0f %6.0f%% %9.1e\n", k, n, name, us, wbytes / us / 1e3,
                   100.0 * wbytes / us / 1e3 / copy_gbps, err);
        };
        // what any kernel can do: the weight read and nothing else (xor-folded), and the
        // copy engine moving the weight's bytes (read + written over its time)
        if (!getenv("Q8_ONLY")) {
            int *sink;
            CK(cudaMalloc(&sink, 4));
            const size_t n16 = (size_t)n * k / 16;
            int i = 0;
            std::vector<float> t;
            for (int r = 0; r < 5; r++)
                t.push_back(back_to_back_us([&] {
                    read_only<4><<<sms * 8, 256>>>(reinterpret_cast<const int4 *>(dq + (size_t)(i++ % copies) * n * k), n16, sink);
                }, 200));
            float us = med(t);
            printf("%6d->%-6d %-24s %9.2f %8.0f %6.0f%%\n", k, n, "read only (ceiling)", us,
                   (double)n * k / us / 1e3, 100.0 * n * k / us / 1e3 / copy_gbps);
            t.clear();
            char *scratch;
            CK(cudaMalloc(&scratch, (size_t)n * k));
            for (int r = 0; r < 5; r++)
                t.push_back(back_to_back_us([&] {
                    CK(cudaMemcpyAsync(scratch, dq + (size_t)(i++ % copies) * n * k, (size_t)n * k, cudaMemcpyDeviceToDevice));
                }, 200));
            us = med(t);
            printf("%6d->%-6d %-24s %9.2f %8.0f %6.0f%%\n", k, n, "copy of q (r + w)", us,
                   2.0 * n * k / us / 1e3, 200.0 * n * k / us / 1e3 / copy_gbps);
            CK(cudaFree(scratch));
            CK(cudaFree(sink));
        }
        report("runtime", [&](int c) {
            cv_gpu_term t{};
            t.a = (const char *)dx;
            t.a_rs = k;
            t.a_cs = 1;
            t.k = k;
            cv_q8_weight w{dq + (size_t)c * n * k, ds, k, 0, 1, 0, 1};
            const int per = CV_GEMV_Q8_PER_BLOCK;
            current<<<(n + per - 1) / per, CV_GEMV_Q8_BLOCK>>>(
                t, w, n, Store{dy});
        });
        report("runtime, one wave", [&](int c) { /* the grid gpu_launch.py gives one row */
            cv_gpu_term t{};
            t.a = (const char *)dx;
            t.a_rs = k;
            t.a_cs = 1;
            t.k = k;
            cv_q8_weight w{dq + (size_t)c * n * k, ds, k, 0, 1, 0, 1};
            const int groups = (n + CV_GEMV_Q8_PER_BLOCK - 1) / CV_GEMV_Q8_PER_BLOCK;
            const int slots = CV_GEMV_Q8_X1_BLOCKS * sms, turns = (groups + slots - 1) / slots;
            current<<<(groups + turns - 1) / turns, CV_GEMV_Q8_BLOCK>>>(t, w, n, Store{dy});
        });
#define MULTI(O, U, P, NA)                                                                     \
    {                                                                                          \
        auto kern = multi<O, U, P, NA>;                                                        \
        int per;                                                                               \
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kern, 32 * WARPS, 0));          \
        const int tasks = (n + O - 1) / O, blocks = std::min((tasks + WARPS - 1) / WARPS, per * sms); \
        char name[64];                                                                         \
        snprintf(name, sizeof name, "O%d U%d %s%s (%d/SM)", O, U, P ? "prmt" : "i2f", NA ? " na" : "", per); \
        report(name, [&](int c) { kern<<<blocks, 32 * WARPS>>>(dx, dq + (size_t)c * n * k, ds, dy, n, k); }); \
    }
        MULTI(1, 4, false, false)
        MULTI(2, 4, true, true)
        MULTI(4, 2, true, true)
        MULTI(4, 4, true, true)
#define BLOCKK(BT, O, U)                                                                       \
    {                                                                                          \
        auto kern = blockk<BT, O, U, true>;                                                    \
        int per;                                                                               \
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kern, BT, 0));                  \
        const int blocks = std::min((n + O - 1) / O, 65535);                                   \
        char name[64];                                                                         \
        snprintf(name, sizeof name, "block%d O%d U%d (%d/SM)", BT, O, U, per);                 \
        report(name, [&](int c) { kern<<<blocks, BT>>>(dx, dq + (size_t)c * n * k, ds, dy, n, k); }); \
    }
        BLOCKK(128, 4, 2)
        BLOCKK(128, 4, 1)
        BLOCKK(128, 2, 2)
        BLOCKK(128, 8, 1)
        BLOCKK(256, 4, 1)
        BLOCKK(256, 4, 2)
        BLOCKK(256, 8, 1)
        BLOCKK(64, 4, 2)
        BLOCKK(64, 4, 4)
// the same, a persistent grid: every slot of the SMs once, the groups dealt round-robin
#define BLOCKP(BT, O, U)                                                                       \
    {                                                                                          \
        auto kern = blockk<BT, O, U, true>;                                                    \
        int occ;                                                                               \
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, BT, 0));                  \
        const int groups = (n + O - 1) / O, per = (groups + occ * sms - 1) / (occ * sms);      \
        const int blocks = (groups + per - 1) / per;                                           \
        char name[64];                                                                         \
        snprintf(name, sizeof name, "persist%d O%d U%d (%d/SM)", BT, O, U, occ);               \
        report(name, [&](int c) { kern<<<blocks, BT>>>(dx, dq + (size_t)c * n * k, ds, dy, n, k); }); \
    }
        BLOCKP(64, 4, 2)
        BLOCKP(128, 8, 1)
// the weight on the tensor cores (mmaq): W warps a block, 16 T rows, NS terms of x, U steps
#define MMAQ(W, T, NS, U)                                                                      \
    {                                                                                          \
        auto kern = mmaq<W, T, NS, U>;                                                         \
        const int shm = NS * k * 2;                                                            \
        CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, shm));      \
        int occ;                                                                               \
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, 32 * W, shm));            \
        const int blocks = std::min((n + 16 * T - 1) / (16 * T), occ * sms);                   \
        char name[64];                                                                         \
        snprintf(name, sizeof name, "mma%d T%d NS%d U%d (%d/SM)", 32 * W, T, NS, U, occ);     \
        report(name, [&](int c) { kern<<<blocks, 32 * W, shm>>>(dx, dq + (size_t)c * n * k, ds, dy, n, k); }); \
    }
        MMAQ(8, 4, 2, 2)
        MMAQ(8, 2, 2, 2)
        MMAQ(4, 2, 2, 2)
        MMAQ(8, 1, 2, 2)
        MMAQ(8, 4, 3, 2)
        MMAQ(8, 2, 2, 4)
        MMAQ(16, 4, 2, 1)
// the copy engine's stream (q8_bulk.cuh): BT threads, R rows a group, S stages of R x KC
#define BULK(BT, R, S, KC)                                                                     \
    {                                                                                          \
        auto kern = bulk::gemv<BT, R, S, KC>;                                                  \
        const int shm = S * R * KC;                                                            \
        CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, shm));      \
        int occ;                                                                               \
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, BT, shm));                \
        const int groups = (n + R - 1) / R, per = (groups + occ * sms - 1) / (occ * sms);      \
        const int blocks = (groups + per - 1) / per;                                           \
        char name[64];                                                                         \
        snprintf(name, sizeof name, "bulk%d R%d S%d KC%d (%d/SM)", BT, R, S, KC, occ);         \
        report(name, [&](int c) {                                                              \
            kern<<<blocks, BT, shm>>>(dx, dq + (size_t)c * n * k, ds, dy, n, k, per);          \
        });                                                                                    \
    }
        BULK(256, 4, 4, 4096)
        BULK(256, 4, 3, 4096)
        BULK(128, 4, 4, 2048)
        BULK(256, 8, 4, 2048)
        BULK(256, 8, 6, 1024)
        BULK(512, 4, 4, 4096)
        BULK(256, 4, 8, 2048)
        CK(cudaFree(dq));
        CK(cudaFree(ds));
        CK(cudaFree(dx));
        CK(cudaFree(dy));
    }
    return 0;
}
