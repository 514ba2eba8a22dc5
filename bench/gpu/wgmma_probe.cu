// The Hopper wgmma + TMA GEMM (cuda_gemm_wgmma.h) against cv_gemm_tc and cuBLAS, x @ w.T
// (A[M,K], B[N,K], both K-major): first correctness against a float64 host reference
// (max|err| / max|ref| on sampled rows/cols; odd sizes and 1..16 rows exercise TMA's
// zero fill and the epilogue's masks), then TFLOP/s (cuda events, 20 launches after warm-up).
// From the repository root, on the device machine (one line):
//   cd bench/gpu && nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I../../native/include wgmma_probe.cu -lcuda -lcublas -o /tmp/wp && /tmp/wp
// Without cuBLAS: add -DNO_CUBLAS and drop -lcublas. Modes: `/tmp/wp tile` (small problems
// per kind, the first mismatches printed, and with one operand one-hot, where each output
// should be one element of the other operand: the element it got instead locates a layout
// bug), `/tmp/wp check` (correctness only), no argument (check, then the timing table). A
// second argument, a comma-separated list of kind names as printed (e.g. `/tmp/wp all
// bf16,3xtf32`; `all`: check + time), runs only those: a kind that traps ends the process
// (the context is lost), so run the others without it.
#define CV_WG_WAIT_TRAP_CYCLES 20000000000LL  // ~10 s: a hung pipeline is a launch error
#include <cuda.h>
#include <cuda_bf16.h>
#include <cstring>
#include <functional>
#include <cmath>
#include <string>
#include "cuvil_aot/cuda_gemm.h"
#include "cuvil_aot/cuda_gemm_wgmma.h"
#include "probe_util.cuh"
#if !defined(NO_CUBLAS) && !__has_include(<cublas_v2.h>)
#define NO_CUBLAS /* a toolkit without cuBLAS (this compiles, the anchors are left out) */
#endif
#ifndef NO_CUBLAS
#include <cublas_v2.h>
#endif

struct Store {  // the probe's epilogue: C = acc (+ bias[col])
    float *c;
    const float *bias;
    int64_t n;
    __device__ void operator()(int64_t, int64_t i, int64_t j, float acc) const {
        c[i * n + j] = bias ? acc + bias[j] : acc;
    }
};

template <int KIND, int BN, int STAGES>
__global__ void __launch_bounds__(384, 1) wg_kernel(const __grid_constant__ CUtensorMap ta,
                                                    const __grid_constant__ CUtensorMap tb,
                                                    int64_t m, int64_t n, int64_t k, Store st) {
    cv_gemm_wgmma<KIND, BN, STAGES>(ta, tb, m, n, k, st);
}

__global__ void __launch_bounds__(256, 2) tc_kernel(const __grid_constant__ cv_gpu_term t,
                                                    int64_t m, int64_t n, Store st) {
    cv_gemm_tc<true, 64, true>(&t, 1, m, n, 1, 1, nullptr, st);
}

// The variants: kind, tile N, stages.
#define TF32_CFG CV_WG_TF32, 256, 4
#define X3_CFG CV_WG_TF32X3, 128, 3
#define X3F_CFG CV_WG_TF32X3F, 128, 3 /* 3xTF32 without per-k-block partials */
#define BF16_CFG CV_WG_BF16, 256, 4
#define TF32_N128_CFG CV_WG_TF32, 128, 6 /* 128-wide tiles: twice the blocks at small shapes */
#define BF16_N128_CFG CV_WG_BF16, 128, 6

struct Problem {
    int m, n, k, k16;                       // k16: the bf16 copies' row stride (k rounded up to 8)
    std::vector<float> a, w, bias;          // float32 inputs (k % 4 == 0: TMA's 16-byte rows)
    std::vector<float> ab, wb;              // the same, rounded to bfloat16 (as float)
    float *da, *dw, *dbias, *dc;
    std::vector<double> ref[2];             // check()'s float64 reference: float32, bf16 inputs
    std::vector<int> where[2];
    double top[2] = {0, 0};
    int ref_step[2] = {0, 0};
    __nv_bfloat16 *dab, *dwb;
    // onehot 1: A[i][q] = (q == i % k), so C[i][j] = W[j][i % k]; 2: W[j][q] = (q == j % k).
    Problem(int m_, int n_, int k_, bool with_bias, int onehot = 0)
        : m(m_), n(n_), k(k_), k16((k_ + 7) / 8 * 8) {
        a = random_floats((size_t)m * k, 1), w = random_floats((size_t)n * k, 1);
        if (onehot == 1)
            for (size_t i = 0; i < a.size(); i++) a[i] = (int)(i % k) == (int)(i / k) % k;
        if (onehot == 2)
            for (size_t i = 0; i < w.size(); i++) w[i] = (int)(i % k) == (int)(i / k) % k;
        if (with_bias) bias = random_floats(n, 1);
        ab = a, wb = w;
        std::vector<__nv_bfloat16> hab((size_t)m * k16, __float2bfloat16(NAN)), hwb((size_t)n * k16, __float2bfloat16(NAN));
        for (size_t i = 0; i < a.size(); i++)  // the padding is NaN: it must never be read
            hab[i / k * k16 + i % k] = __float2bfloat16(a[i]), ab[i] = __bfloat162float(hab[i / k * k16 + i % k]);
        for (size_t i = 0; i < w.size(); i++)
            hwb[i / k * k16 + i % k] = __float2bfloat16(w[i]), wb[i] = __bfloat162float(hwb[i / k * k16 + i % k]);
        da = upload(a), dw = upload(w);
        dbias = with_bias ? upload(bias) : nullptr;
        CK(cudaMalloc(&dab, 2 * hab.size())); CK(cudaMalloc(&dwb, 2 * hwb.size()));
        CK(cudaMemcpy(dab, hab.data(), 2 * hab.size(), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dwb, hwb.data(), 2 * hwb.size(), cudaMemcpyHostToDevice));
        CK(cudaMalloc(&dc, 4 * (size_t)m * n));
    }
    ~Problem() {
        CK(cudaFree(da)); CK(cudaFree(dw)); CK(cudaFree(dc)); CK(cudaFree(dab)); CK(cudaFree(dwb));
        if (dbias) CK(cudaFree(dbias));
    }
};

static CUtensorMap map_of(const void *p, bool bf16, int rows, int k, int ld, int box_rows) {
    CUtensorMap t;
    if (cv_wg_make_map(cuTensorMapEncodeTiled, &t, p, bf16, rows, k, ld, box_rows)) {
        printf("cv_wg_make_map failed (rows %d, k %d)\n", rows, k);
        exit(1);
    }
    return t;
}

static int g_sms;  // multiprocessors: the persistent grid
static std::string g_only;  // "": every kind; else ",name,name,"

// Whether kind `name` (less "wg " and " P") is to run.
static bool want(std::string name) {
    for (const char *pre : {"wg "})
        if (name.rfind(pre, 0) == 0) name = name.substr(strlen(pre));
    if (name.size() > 2 && name.compare(name.size() - 2, 2, " P") == 0) name.resize(name.size() - 2);
    return g_only.empty() || g_only.find("," + name + ",") != std::string::npos;
}

// grid_cap > 0: at most that many blocks, each looping over tiles (persistent).
template <int KIND, int BN, int STAGES>
static std::function<void()> wg_launch(Problem &p, int grid_cap = 0) {
    using C = cv_wg_cfg<KIND, BN, STAGES>;
    const bool bf = KIND == CV_WG_BF16;
    const int ld = bf ? p.k16 : p.k;
    const CUtensorMap ta = map_of(bf ? (void *)p.dab : (void *)p.da, bf, p.m, p.k, ld, 128);
    const CUtensorMap tb = map_of(bf ? (void *)p.dwb : (void *)p.dw, bf, p.n, p.k, ld, BN);
    auto kern = wg_kernel<KIND, BN, STAGES>;
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM));
    unsigned grid = (unsigned)(((p.m + 127) / 128) * ((p.n + BN - 1) / BN));
    if (grid_cap > 0 && grid > (unsigned)grid_cap) grid = grid_cap;
    const Store st{p.dc, p.dbias, p.n};
    const int64_t m = p.m, n = p.n, k = p.k;
    return [=] { kern<<<grid, 384, C::SMEM>>>(ta, tb, m, n, k, st); };
}

static std::function<void()> tc_launch(Problem &p) {
    const cv_gpu_term t = {(const char *)p.da, p.k, 1, 0, (const char *)p.dw, 1, p.k, 0, p.k};
    const unsigned grid = (unsigned)(((p.m + 63) / 64) * ((p.n + 127) / 128));
    const Store st{p.dc, p.dbias, p.n};
    const int64_t m = p.m, n = p.n;
    return [=] { tc_kernel<<<grid, 256>>>(t, m, n, st); };
}

#ifndef NO_CUBLAS
static cublasHandle_t g_blas;
// Row-major C[M,N] = A[M,K] W[N,K]^T is column-major C^T[N,M] = W^T(op T on K x N) . A^T.
static std::function<void()> blas_launch(Problem &p, bool bf16) {
    return [&p, bf16] {
        const float one = 1, zero = 0;
        if (bf16)
            cublasGemmEx(g_blas, CUBLAS_OP_T, CUBLAS_OP_N, p.n, p.m, p.k, &one, p.dwb, CUDA_R_16BF, p.k16,
                         p.dab, CUDA_R_16BF, p.k16, &zero, p.dc, CUDA_R_32F, p.n, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT);
        else
            cublasSgemm(g_blas, CUBLAS_OP_T, CUBLAS_OP_N, p.n, p.m, p.k, &one, p.dw, p.k, p.da, p.k,
                        &zero, p.dc, p.n);
    };
}
#endif

// 0, step, 2 step, ... and the last index.
static std::vector<int> samples(int len, int step) {
    std::vector<int> v;
    for (int i = 0; i < len; i += step) v.push_back(i);
    if (v.back() != len - 1) v.push_back(len - 1);
    return v;
}

// Runs `launch` once into a poisoned C and returns max|err| / max|ref| against float64 on
// rows/cols every `step` (1: all), from the bf16-rounded inputs when bf16; `show` > 0 prints
// that many first mismatches (|err| > tol * max|ref|).
static double check(Problem &p, const std::function<void()> &launch, bool bf16, int step,
                    int show = 0, double tol = 0) {
    CK(cudaMemset(p.dc, 0xff, 4 * (size_t)p.m * p.n));  // NaN
    launch();
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> out((size_t)p.m * p.n);
    CK(cudaMemcpy(out.data(), p.dc, 4 * out.size(), cudaMemcpyDeviceToHost));
    const std::vector<float> &a = bf16 ? p.ab : p.a, &w = bf16 ? p.wb : p.w;
    std::vector<double> &ref = p.ref[bf16];  // computed once per problem, operand type, step
    std::vector<int> &where = p.where[bf16];
    double &top = p.top[bf16];
    if (p.ref_step[bf16] != step) {
        ref.clear(), where.clear(), top = 0, p.ref_step[bf16] = step;
        for (int i : samples(p.m, step))
            for (int j : samples(p.n, step)) {
                double acc = p.bias.empty() ? 0 : p.bias[j];
                for (int q = 0; q < p.k; q++) acc += (double)a[(size_t)i * p.k + q] * w[(size_t)j * p.k + q];
                ref.push_back(acc), where.push_back(i * p.n + j);
                top = std::max(top, std::fabs(acc));
            }
    }
    double err = 0;
    int shown = 0;
    for (size_t x = 0; x < ref.size(); x++) {
        const double e = std::fabs(out[where[x]] - ref[x]);
        err = std::isnan(e) ? INFINITY : std::max(err, e);
        if (shown < show && !(e <= tol * top)) {
            printf("    mismatch at (row %d, col %d): got %.7g want %.7g\n", where[x] / p.n,
                   where[x] % p.n, out[where[x]], ref[x]);
            shown++;
        }
    }
    return top > 0 ? err / top : err;
}

static const char *verdict(double rel, double tol) { return rel <= tol ? "ok" : "FAIL"; }

// Where `got` is in the (rows x k) operand v: the nearest element's (row, k).
static void locate(float got, const std::vector<float> &v, int k) {
    size_t best = 0;
    for (size_t i = 1; i < v.size(); i++)
        if (std::fabs(v[i] - got) < std::fabs(v[best] - got)) best = i;
    printf(" = operand (row %d, k %d)%s", (int)(best / k), (int)(best % k),
           std::fabs(v[best] - got) <= 1e-2 * std::fabs(got) ? "" : " (not close)");
}

// With A one-hot (onehot 1) C[i][j] should be W[j][i % k]: the first few wrong outputs and
// which W element each got (onehot 2: the same with W one-hot and A's elements).
template <class L>
static void onehot_dump(Problem &p, L launch, bool bf16, int onehot) {
    CK(cudaMemset(p.dc, 0xff, 4 * (size_t)p.m * p.n));
    launch();
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> out((size_t)p.m * p.n);
    CK(cudaMemcpy(out.data(), p.dc, 4 * out.size(), cudaMemcpyDeviceToHost));
    const std::vector<float> &a = bf16 ? p.ab : p.a, &w = bf16 ? p.wb : p.w;
    int bad = 0, shown = 0;
    for (int i = 0; i < p.m; i++)
        for (int j = 0; j < p.n; j++) {
            const float want = onehot == 1 ? w[(size_t)j * p.k + i % p.k] : a[(size_t)i * p.k + j % p.k];
            const float got = out[(size_t)i * p.n + j];
            if (std::fabs(got - want) <= 2e-3f * std::fabs(want) + 1e-30f) continue;
            bad++;
            if (shown++ < 6) {
                printf("    C(%d, %d) got %.6g want %.6g", i, j, got, want);
                locate(got, onehot == 1 ? w : a, p.k);
                printf("\n");
            }
        }
    printf("    %s one-hot: %d of %d outputs wrong\n", onehot == 1 ? "A" : "B", bad, p.m * p.n);
    if (bf16) return;
    // How the tensor cores made tf32 of a float32 operand: outputs equal to the operand's
    // value truncated to tf32, rounded to nearest, or exact (the 3x kinds).
    int tr = 0, rn = 0, ex = 0;
    for (int i = 0; i < p.m; i++)
        for (int j = 0; j < p.n; j++) {
            const float want = onehot == 1 ? w[(size_t)j * p.k + i % p.k] : a[(size_t)i * p.k + j % p.k];
            const float got = out[(size_t)i * p.n + j];
            uint32_t u;
            memcpy(&u, &want, 4);
            uint32_t t = u & 0xffffe000u, r = (u + 0x1000u) & 0xffffe000u;
            float ft, fr;
            memcpy(&ft, &t, 4), memcpy(&fr, &r, 4);
            ex += got == want, tr += got == ft && ft != want, rn += got == fr && fr != want;
        }
    printf("    outputs equal to the operand: exactly %d, truncated to tf32 %d, rounded %d\n", ex, tr, rn);
}

// Small problems per kind with a mismatch dump (the layout-bug mode).
static void tile_mode() {
    const int sizes[][3] = {{64, 64, 32}, {128, 256, 64}, {77, 200, 100}};
    for (auto &s : sizes) {
        printf("M=%d N=%d K=%d\n", s[0], s[1], s[2]);
        Problem p(s[0], s[1], s[2], false);
        auto one = [&](const char *name, const std::function<void()> &launch, bool bf16, double tol) {
            if (!want(name)) return;
            printf("  %s\n", name);  // printed first: a trap names its kind
            fflush(stdout);
            const double r = check(p, launch, bf16, 1, 6, tol);
            printf("    max|err|/max|ref| %.2e %s\n", r, verdict(r, tol));
        };
        one("wg tf32", wg_launch<TF32_CFG>(p), false, 4e-3);
        one("wg 3xtf32", wg_launch<X3_CFG>(p), false, 1e-6);
        one("wg bf16", wg_launch<BF16_CFG>(p), true, 1e-5);
        for (int oh = 1; oh <= 2; oh++) {
            Problem q(s[0], s[1], s[2], false, oh);
            auto dump = [&](const char *name, const std::function<void()> &launch, bool bf16) {
                if (!want(name)) return;
                printf("  %s\n", name);
                fflush(stdout);
                onehot_dump(q, launch, bf16, oh);
            };
            dump("wg tf32", wg_launch<TF32_CFG>(q), false);
            dump("wg 3xtf32", wg_launch<X3_CFG>(q), false);
            dump("wg bf16", wg_launch<BF16_CFG>(q), true);
            dump("wg 3xtf32f", wg_launch<X3F_CFG>(q), false);
        }
    }
}

// Correctness at odd sizes and few rows, with and without bias.
static int check_mode() {
    int bad = 0;
    auto all = [&](Problem &p, int step) {  // printed as it goes: a trap names its kind
        printf("%5d %5d %5d %4s", p.m, p.n, p.k, p.bias.empty() ? "" : "bias");
        auto one = [&](const char *name, const std::function<void()> &launch, bool bf16, double tol) {
            if (!want(name)) return;
            printf(" | %s ", name);
            fflush(stdout);
            const double r = check(p, launch, bf16, step);
            bad += tol > 0 && !(r <= tol);
            printf("%.1e %-4s", r, tol > 0 ? verdict(r, tol) : "");
        };
        one("tf32", wg_launch<TF32_CFG>(p), false, 4e-3);
        one("3xtf32", wg_launch<X3_CFG>(p), false, 1e-6);
        one("bf16", wg_launch<BF16_CFG>(p), true, 1e-5);
        one("3xtf32f", wg_launch<X3F_CFG>(p), false, 0);
        one("tc", tc_launch(p), false, 0);
        printf("\n%21s", "2 blocks, persistent");  // many tiles per block: the ring across tiles
        one("tf32", wg_launch<TF32_CFG>(p, 2), false, 4e-3);
        one("3xtf32", wg_launch<X3_CFG>(p, 2), false, 1e-6);
        one("bf16", wg_launch<BF16_CFG>(p, 2), true, 1e-5);
        one("3xtf32f", wg_launch<X3F_CFG>(p, 2), false, 0);
        one("bf16-n128", wg_launch<BF16_N128_CFG>(p, 2), true, 1e-5);
        printf("\n");
    };
    printf("    M     N     K      max|err|/max|ref| vs float64 (tol: tf32 4e-3, 3xtf32 1e-6, bf16 1e-5)\n");
    const int odd[][3] = {{64, 64, 32}, {77, 200, 100}, {128, 256, 64}, {300, 520, 1000},
                          {129, 257, 36}, {1000, 1000, 1024}};
    for (auto &s : odd) {
        Problem p(s[0], s[1], s[2], false);
        all(p, 1);
    }
    {
        Problem p(77, 200, 100, true);
        all(p, 1);
    }
    for (int m = 1; m <= 16; m++) {
        Problem p(m, 200, 104, m % 2 == 1);
        all(p, 1);
    }
    return bad;
}

static void time_mode() {
    const int shapes[][3] = {{4096, 4096, 4096}, {4096, 1024, 4096}, {4096, 4096, 1024},
                             {1024, 2304, 768},  {1024, 768, 768},   {1024, 3072, 768},
                             {1024, 768, 3072},  {4096, 2304, 768},  {4096, 768, 768},
                             {4096, 3072, 768},  {4096, 768, 3072}};
    printf("\nTFLOP/s (error vs float64 on sampled rows/cols in brackets)\n");
    printf("(P: persistent, one block per SM; n128: 128 x 128 tiles)\n");
    printf("%-15s", "M N K");
    for (const char *h : {"wg tf32", "wg 3xtf32", "wg bf16", "wg tf32 P", "wg 3xtf32 P", "wg bf16 P",
                          "wg 3xtf32f P", "wg tf32 n128", "wg bf16 n128", "tc 3xtf32", "cublas sgemm",
                          "cublas bf16"})
        printf(" %15s", h);
    printf("\n");
    for (auto &s : shapes) {
        Problem p(s[0], s[1], s[2], false);
        char name[32];
        snprintf(name, sizeof name, "%d %d %d", p.m, p.n, p.k);
        printf("%-15s", name);
        auto one = [&](const char *name, std::function<void()> launch, bool bf16) {
            if (!want(name)) {
                printf(" %15s", "-");
                return;
            }
            const double rel = check(p, launch, bf16, 61);
            for (int i = 0; i < 3; i++) launch();
            const float us = back_to_back_us(launch, 20);
            printf(" %6.1f [%.0e]", 2.0 * p.m * p.n * p.k / us / 1e6, rel);
            fflush(stdout);
        };
        one("tf32", wg_launch<TF32_CFG>(p), false);
        one("3xtf32", wg_launch<X3_CFG>(p), false);
        one("bf16", wg_launch<BF16_CFG>(p), true);
        one("tf32", wg_launch<TF32_CFG>(p, g_sms), false);
        one("3xtf32", wg_launch<X3_CFG>(p, g_sms), false);
        one("bf16", wg_launch<BF16_CFG>(p, g_sms), true);
        one("3xtf32f", wg_launch<X3F_CFG>(p, g_sms), false);
        one("tf32-n128", wg_launch<TF32_N128_CFG>(p, g_sms), false);
        one("bf16-n128", wg_launch<BF16_N128_CFG>(p, g_sms), true);
        one("tc", tc_launch(p), false);
#ifndef NO_CUBLAS
        one("sgemm", blas_launch(p, false), false);
        one("cublas-bf16", blas_launch(p, true), true);
#endif
        printf("\n");
    }
}

int main(int argc, char **argv) {
    srand(5);
    CK(cudaFree(0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs, smem/block optin %zu\n", prop.name, prop.multiProcessorCount,
           prop.sharedMemPerBlockOptin);
    g_sms = prop.multiProcessorCount;
    printf("smem: tf32 %d, 3xtf32 %d, bf16 %d, tf32 n128 %d, bf16 n128 %d bytes\n",
           cv_wg_cfg<TF32_CFG>::SMEM, cv_wg_cfg<X3_CFG>::SMEM, cv_wg_cfg<BF16_CFG>::SMEM,
           cv_wg_cfg<TF32_N128_CFG>::SMEM, cv_wg_cfg<BF16_N128_CFG>::SMEM);
#ifndef NO_CUBLAS
    if (cublasCreate(&g_blas) != CUBLAS_STATUS_SUCCESS) { printf("cublasCreate failed\n"); return 1; }
#endif
    const std::string mode = argc > 1 ? argv[1] : "";
    if (argc > 2) g_only = std::string(",") + argv[2] + ",";
    if (mode == "tile") { tile_mode(); return 0; }
    const int bad = check_mode();
    printf("%d failures\n", bad);
    if (mode == "check") return bad != 0;
    time_mode();
    return 0;
}
