// What the generated wgmma GEMM's epilogue costs (issues 23 and 24): the entry point as
// codegen/cuda_wgmma.py writes it for `x @ w.T` (its epilogue functor reading the output's
// pointer and strides through a pointer to the kernel's argument struct, for every
// element), against the same main loop with those values read once into the functor, and
// with no store at all (the main loop alone), and with the functor holding a copy of the
// argument struct (what codegen writes since the thirteenth session); beside them cuBLAS
// on the same operands in the same run (bf16: float32 out, as the entry stores; 3xTF32:
// cublasSgemm), and the erf-GELU epilogue of bench/gpu/layer_gemms.py (bias, GELU, bf16
// out) through a pointer and from a copy. Persistent grid, bf16 and 3xTF32 kinds as generated code runs them;
// device time per launch (median of 5 rounds of 20).
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I../../native/include \
//       wg_epi_probe.cu -lcuda -lcublas -o /tmp/we && /tmp/we
#include <cuda.h>
#include <cuda_bf16.h>

#include "cuvil_aot/cuda_gemm.h"
#include "cuvil_aot/cuda_kernel.h"
#include "cuvil_aot/cuda_gemm_wgmma.h"
#include "probe_util.cuh"
#if !defined(NO_CUBLAS) && !__has_include(<cublas_v2.h>)
#define NO_CUBLAS /* a toolkit without cuBLAS (this compiles, the anchor is left out) */
#endif
#ifndef NO_CUBLAS
#include <cublas_v2.h>
#endif

// The generated argument structs of one GEMM kernel (tag 0 only).
typedef struct {
    int64_t n[2];
    char *p[1];
    int64_t s[1][2];
    cv_gpu_term t[1];
    int64_t cols, vec, split;
    char *part;
} g_args;
typedef struct {
    int64_t tag;
    union {
        g_args m0;
    } u;
} u_args;
typedef struct {
    cv_tmap map[2];
    u_args a;
} wg_args;

struct gen_epi0 { // as generated: the arguments read through a pointer, each element
    const g_args *a;
    __device__ __forceinline__ void operator()(int64_t, int64_t i0, int64_t i1, float acc) const {
        float *__restrict__ p0 = (float *)a->p[0];
        const int64_t s0_0 = (int64_t)a->s[0][0];
        const int64_t s0_1 = (int64_t)a->s[0][1];
        p0[i0 * s0_0 + i1 * s0_1] = (float)(acc);
    }
};
struct gen_epi {
    const u_args *a;
    __device__ __forceinline__ void operator()(int64_t b, int64_t i, int64_t j, float acc) const {
        switch (a->tag) {
        case 0: gen_epi0{&a->u.m0}(b, i, j, acc); break;
        }
    }
};
struct copy_epi { // as generated, but the functor holds a copy of the argument struct
    const u_args a;
    __device__ __forceinline__ void operator()(int64_t b, int64_t i, int64_t j, float acc) const {
        switch (a.tag) {
        case 0: gen_epi0{&a.u.m0}(b, i, j, acc); break;
        }
    }
};
struct gelu_args { /* bias, then the bf16 output (bench/gpu/layer_gemms.py's gelu16) */
    char *p[2];
    int64_t s[2][2];
};
struct gelu_epi { // the generated erf-GELU epilogue (bias + GELU, stored as bfloat16)
    const gelu_args *a;
    __device__ __forceinline__ void operator()(int64_t, int64_t i1, int64_t i2, float acc) const {
        const float *__restrict__ p0 = (const float *)a->p[0];
        const int64_t s0_2 = (int64_t)a->s[0][1];
        cv_bf16 *__restrict__ p1 = (cv_bf16 *)a->p[1];
        const int64_t s1_1 = (int64_t)a->s[1][0];
        const int64_t s1_2 = (int64_t)a->s[1][1];
        const float v1 = (acc + p0[i2 * s0_2]);
        const float v2 = (((float)0.5) * v1);
        const float v3 = (v1 / ((float)1.4142135381698608));
        const float v4 = cv_signf(v3);
        const float v5 = fabsf(v3);
        const float v8 = (((float)1.0) / (((float)1.0) + ((float)0.32759109139442444) * v5));
        const float v10 = (((float)1.0614054203033447) * v8) - ((float)1.453152060508728);
        const float v12 = (v10 * v8) + ((float)1.421413779258728);
        const float v14 = (v12 * v8) - ((float)0.2844967246055603);
        const float v16 = (v14 * v8) + ((float)0.2548295855522156);
        const float v17 = (v16 * v8);
        const float v20 = expf((-v5) * v5);
        const float v25 = (v2 * (((float)1.0) + (v4 * (((float)1.0) - (v17 * v20)))));
        p1[i1 * s1_1 + i2 * s1_2] = cv_bf16_store(cv_bf16_round(v25));
    }
};
struct gelu_copy { // the same, the functor holding a copy of its arguments
    const gelu_args a;
    __device__ __forceinline__ void operator()(int64_t b, int64_t i, int64_t j, float acc) const {
        gelu_epi{&a}(b, i, j, acc);
    }
};
struct val_epi { // the same store, its pointer and strides read once
    float *p0;
    int64_t s0, s1;
    __device__ __forceinline__ void operator()(int64_t, int64_t i, int64_t j, float acc) const {
        p0[i * s0 + j * s1] = acc;
    }
};
struct no_epi { // no store (the main loop alone); a sum no input reaches keeps it live
    float *p0;
    __device__ __forceinline__ void operator()(int64_t, int64_t, int64_t, float acc) const {
        if (acc == 1.2345e38f) p0[0] = acc;
    }
};

static __device__ __forceinline__ cv_gemm_job job(const u_args *a) {
    return cv_gemm_job{a->u.m0.t, 1, a->u.m0.n[0], a->u.m0.n[1], 1, (int)a->u.m0.split,
                       a->u.m0.part, (int)a->u.m0.cols, (int)a->u.m0.vec};
}

template <int KIND, int BN, int ST, int V>
__global__ void __launch_bounds__(384, 1) entry(const __grid_constant__ wg_args w_,
                                                const __grid_constant__ gelu_args ga) {
    const cv_gemm_job j = job(&w_.a);
    const g_args &g = w_.a.u.m0;
    float *part = reinterpret_cast<float *>(j.part);
    if constexpr (V == 0)
        cv_gemm_wgmma_job<KIND, BN, ST>(w_.map, j.t, j.nterms, j.m, j.n, j.nb, j.split, part,
                                        gen_epi{&w_.a});
    else if constexpr (V == 3)
        cv_gemm_wgmma_job<KIND, BN, ST>(w_.map, j.t, j.nterms, j.m, j.n, j.nb, j.split, part,
                                        copy_epi{w_.a});
    else if constexpr (V == 4)
        cv_gemm_wgmma_job<KIND, BN, ST>(w_.map, j.t, j.nterms, j.m, j.n, j.nb, j.split, part,
                                        gelu_epi{&ga});
    else if constexpr (V == 5)
        cv_gemm_wgmma_job<KIND, BN, ST>(w_.map, j.t, j.nterms, j.m, j.n, j.nb, j.split, part,
                                        gelu_copy{ga});
    else if constexpr (V == 1)
        cv_gemm_wgmma_job<KIND, BN, ST>(w_.map, j.t, j.nterms, j.m, j.n, j.nb, j.split, part,
                                        val_epi{(float *)g.p[0], g.s[0][0], g.s[0][1]});
    else
        cv_gemm_wgmma_job<KIND, BN, ST>(w_.map, j.t, j.nterms, j.m, j.n, j.nb, j.split, part,
                                        no_epi{(float *)g.p[0]});
}

#ifndef NO_CUBLAS
static cublasHandle_t g_blas;
#endif

template <int KIND, int BN, int ST>
static void run(int m, int n, int k, int sms) {
    using C = cv_wg_cfg<KIND, BN, ST>;
    const bool bf = KIND == CV_WG_BF16;
    const size_t es = bf ? 2 : 4;
    std::vector<float> ha = random_floats((size_t)m * k, 1), hw = random_floats((size_t)n * k, 1);
    std::vector<char> ba(es * ha.size()), bw(es * hw.size());
    for (size_t i = 0; i < ha.size(); i++) {
        if (bf) reinterpret_cast<__nv_bfloat16 *>(ba.data())[i] = __float2bfloat16(ha[i]);
        else reinterpret_cast<float *>(ba.data())[i] = ha[i];
    }
    for (size_t i = 0; i < hw.size(); i++) {
        if (bf) reinterpret_cast<__nv_bfloat16 *>(bw.data())[i] = __float2bfloat16(hw[i]);
        else reinterpret_cast<float *>(bw.data())[i] = hw[i];
    }
    char *da, *dw;
    float *dc[6];
    CK(cudaMalloc(&da, ba.size()));
    CK(cudaMalloc(&dw, bw.size()));
    CK(cudaMemcpy(da, ba.data(), ba.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw, bw.data(), bw.size(), cudaMemcpyHostToDevice));
    wg_args w{};
    if (cv_wg_make_map(cuTensorMapEncodeTiled, &w.map[0], da, bf, m, k, k, C::BM) ||
        cv_wg_make_map(cuTensorMapEncodeTiled, &w.map[1], dw, bf, n, k, k, BN)) {
        printf("maps refused\n");
        exit(1);
    }
    float *bias;
    CK(cudaMalloc(&bias, 4 * (size_t)n));
    CK(cudaMemset(bias, 0, 4 * (size_t)n));
    g_args &g = w.a.u.m0;
    g.n[0] = m, g.n[1] = n, g.s[0][0] = n, g.s[0][1] = 1, g.split = 1;
    g.t[0] = cv_gpu_term{da, k, 1, 0, dw, 1, k, 0, k};
    const int tiles = (m + C::BM - 1) / C::BM * ((n + BN - 1) / BN);
    const int grid = tiles < sms ? tiles : sms;
    float us[6];
    auto kernels = {entry<KIND, BN, ST, 0>, entry<KIND, BN, ST, 1>, entry<KIND, BN, ST, 2>,
                    entry<KIND, BN, ST, 3>, entry<KIND, BN, ST, 4>, entry<KIND, BN, ST, 5>};
    int v = 0;
    for (auto kern : kernels) {
        CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM));
        CK(cudaMalloc(&dc[v], 4 * (size_t)m * n));
        CK(cudaMemset(dc[v], 0xff, 4 * (size_t)m * n));
        g.p[0] = (char *)dc[v];
        gelu_args ga{{(char *)bias, (char *)dc[v]}, {{0, 1}, {n, 1}}};
        auto launch = [&] { kern<<<grid, 384, C::SMEM>>>(w, ga); };
        launch();
        CK(cudaDeviceSynchronize());
        std::vector<float> t;
        for (int r = 0; r < 5; r++) t.push_back(back_to_back_us(launch, 20));
        us[v++] = med(t);
    }
#ifndef NO_CUBLAS
    // Row-major C[M,N] = A[M,K] W[N,K]^T is column-major C^T[N,M] = W^T(op T) . A^T.
    const float one = 1, zero = 0;
    float *dcb;
    CK(cudaMalloc(&dcb, 4 * (size_t)m * n));
    auto blas = [&] {
        if (bf)
            cublasGemmEx(g_blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, dw, CUDA_R_16BF, k, da,
                         CUDA_R_16BF, k, &zero, dcb, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT);
        else
            cublasSgemm(g_blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, (float *)dw, k,
                        (float *)da, k, &zero, dcb, n);
    };
    std::vector<float> tb;
    blas();
    CK(cudaDeviceSynchronize());
    for (int r = 0; r < 5; r++) tb.push_back(back_to_back_us(blas, 20));
    const float blas_us = med(tb);
#else
    const float blas_us = NAN; /* no anchor */
#endif
    std::vector<float> c0((size_t)m * n), c1((size_t)m * n), c3((size_t)m * n);
    CK(cudaMemcpy(c0.data(), dc[0], 4 * c0.size(), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(c1.data(), dc[1], 4 * c1.size(), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(c3.data(), dc[3], 4 * c3.size(), cudaMemcpyDeviceToHost));
    const bool same = memcmp(c0.data(), c1.data(), 4 * c0.size()) == 0 &&
                      memcmp(c0.data(), c3.data(), 4 * c0.size()) == 0;
    double err = 0, top = 0; // sampled against float64 of the operands as stored
    for (int i = 0; i < m; i += 97)
        for (int j = 0; j < n; j += 89) {
            double ref = 0;
            for (int q = 0; q < k; q++) {
                const double a = bf ? (double)__bfloat162float(reinterpret_cast<__nv_bfloat16 *>(ba.data())[(size_t)i * k + q]) : ha[(size_t)i * k + q];
                const double b = bf ? (double)__bfloat162float(reinterpret_cast<__nv_bfloat16 *>(bw.data())[(size_t)j * k + q]) : hw[(size_t)j * k + q];
                ref += a * b;
            }
            err = std::max(err, std::fabs(c0[(size_t)i * n + j] - ref));
            top = std::max(top, std::fabs(ref));
        }
    const double flop = 2.0 * m * n * k;
    printf("%-7s %5d %5d %5d | pointer %7.1f us %6.1f TF | read once %7.1f us %6.1f TF | "
           "copy %7.1f us %6.1f TF | no store %7.1f us %6.1f TF | %s %7.1f us %6.1f TF | "
           "gelu %7.1f us | gelu copy %7.1f us | equal %s, err %.1e\n",
           bf ? "bf16" : "3xtf32", m, n, k, us[0], flop / us[0] / 1e6, us[1], flop / us[1] / 1e6,
           us[3], flop / us[3] / 1e6, us[2], flop / us[2] / 1e6,
           bf ? "cublas bf16" : "cublas sgemm", blas_us, flop / blas_us / 1e6, us[4], us[5],
           same ? "yes" : "NO",
           err / top);
    for (float *p : dc) CK(cudaFree(p));
#ifndef NO_CUBLAS
    CK(cudaFree(dcb));
#endif
    CK(cudaFree(bias));
    CK(cudaFree(da));
    CK(cudaFree(dw));
}

int main() {
    srand(3);
    CK(cudaFree(0));
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
#ifndef NO_CUBLAS
    if (cublasCreate(&g_blas) != CUBLAS_STATUS_SUCCESS) {
        printf("cublasCreate failed\n");
        return 1;
    }
#endif
    run<CV_WG_BF16, 256, 4>(4096, 4096, 4096, sms);
    run<CV_WG_BF16, 256, 4>(4096, 3072, 768, sms);
    run<CV_WG_TF32X3, 128, 3>(4096, 4096, 4096, sms);
    run<CV_WG_TF32X3, 128, 3>(4096, 3072, 768, sms);
    run<CV_WG_TF32X3, 128, 3>(1024, 3072, 768, sms);
    return 0;
}
