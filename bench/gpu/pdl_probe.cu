// Programmatic dependent launch (sm_90) on a batch-1 chain: does letting each kernel launch
// while the one before it runs (griddepcontrol) take the ~3 us that every small kernel of a
// batch-1 call costs beside its bytes? A 4-layer BERT-base-shaped chain at 8 rows: per layer
// the dot GEMVs q, k, v, o (768 -> 768, cv_gemv_dot_mma on 16 warps, as the host picks for
// 768 columns), a row kernel (residual + LayerNorm), the FFN's up (768 -> 3072, 8 warps,
// tiles of 16) and down (3072 -> 768) and a second row kernel: 32 kernels, each reading the
// one before's output, 113 MB of distinct weights (more than the L2 holds).
//
// Modes: plain launches; launches that allow programmatic serialization with kernels that
// wait (griddepcontrol.wait) before their first read and let the next launch at once
// (griddepcontrol.launch_dependents); the same with each GEMV block's weight rows first
// prefetched into L2 (cp.async.bulk.prefetch.L2: weights are never written by the chain, so
// reading them before the wait is safe). Each as stream launches and as a captured graph.
// Every mode's output is compared with the plain mode's (bit for bit: the same arithmetic).
//   nvcc -O3 -std=c++17 -arch=sm_90 -I../../native/include pdl_probe.cu -o p && ./p
#include <cmath>
#include <cstring>
#include "cuvil_aot/cuda_gemm.h"
#include "probe_util.cuh"

constexpr int M = 8, H = 768, F = 3072, LAYERS = 4;

__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void pdl_launch() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
__device__ __forceinline__ void prefetch_l2(const void *p, uint32_t bytes) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}

struct BiasStore {
    const float *bias;
    float *c;
    int64_t n;
    __device__ void operator()(int64_t, int64_t i, int64_t j, float acc) const {
        c[i * n + j] = acc + bias[j];
    }
};

// MODE 0 plain, 1 wait + launch_dependents, 2 as 1 after prefetching this block's weights.
template <int MODE>
__device__ __forceinline__ void enter(const cv_gpu_term &t, int64_t n, int cols) {
    if (MODE == 2)
        for (int64_t tile = blockIdx.x; tile * cols < n; tile += gridDim.x)
            for (int r = threadIdx.x; r < cols && tile * cols + r < n; r += blockDim.x)
                prefetch_l2(t.b + (tile * cols + r) * t.b_cs * 4, (uint32_t)(t.k * 4));
    if (MODE) {
        pdl_wait();
        pdl_launch();
    }
}

template <int MODE>
__global__ void __launch_bounds__(512, 1) dot_wide(const __grid_constant__ cv_gpu_term t, int64_t n,
                                                   const float *bias, float *c) {
    enter<MODE>(t, n, 8);
    cv_gemv_dot_mma<1, 4>(&t, 1, M, n, 1, cv_gemv_buffer(), BiasStore{bias, c, n});
}

template <int MODE>
__global__ void __launch_bounds__(256, 3) dot16(const __grid_constant__ cv_gpu_term t, int64_t n,
                                                const float *bias, float *c) {
    enter<MODE>(t, n, 16);
    cv_gemv_dot_mma<2, 2>(&t, 1, M, n, 1, cv_gemv_buffer(), BiasStore{bias, c, n});
}

// y = LayerNorm(a + b) over rows of H, a block of 256 per row.
template <int MODE>
__global__ void __launch_bounds__(256) add_norm(const float *a, const float *b, const float *g,
                                                const float *beta, float *y) {
    if (MODE) {
        pdl_wait();
        pdl_launch();
    }
    __shared__ float red[2][8];
    const int row = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float v[3], s = 0, q = 0;
#pragma unroll
    for (int e = 0; e < 3; e++) {
        const int j = threadIdx.x + 256 * e;
        v[e] = a[row * H + j] + b[row * H + j];
        s += v[e];
        q += v[e] * v[e];
    }
    for (int off = 16; off; off >>= 1) s += __shfl_xor_sync(~0u, s, off), q += __shfl_xor_sync(~0u, q, off);
    if (lane == 0) red[0][warp] = s, red[1][warp] = q;
    __syncthreads();
    s = q = 0;
    for (int w = 0; w < 8; w++) s += red[0][w], q += red[1][w];
    const float mean = s / H, rstd = rsqrtf(q / H - mean * mean + 1e-12f);
#pragma unroll
    for (int e = 0; e < 3; e++) {
        const int j = threadIdx.x + 256 * e;
        y[row * H + j] = (v[e] - mean) * rstd * g[j] + beta[j];
    }
}

struct Layer {
    float *wq, *wk, *wv, *wo, *wu, *wd, *bq, *bk, *bv, *bo, *bu, *bd, *g1, *b1, *g2, *b2;
};

struct Bufs {
    float *x, *q, *k, *v, *o, *h, *u, *d;
};

static cudaStream_t stream;

template <class K, class... A>
static void launch(bool pdl, K kernel, unsigned grid, unsigned block, A... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(block);
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = pdl ? 1 : 0;
    CK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

static cv_gpu_term term(const float *x, int k, const float *w) {
    return cv_gpu_term{(const char *)x, k, 1, 0, (const char *)w, 1, k, 0, k};
}

// One chain of LAYERS layers from b.x back into b.x (the first launch plain: it follows
// whatever the stream ran before).
template <int MODE>
static void chain(const std::vector<Layer> &ls, const Bufs &b, int sm) {
    const bool pdl = MODE > 0;
    int count = 0;
    auto gemv = [&](const float *x, int k, const float *w, int n, const float *bias, float *c) {
        const bool p = pdl && count++ > 0;
        if (n <= H)
            launch(p, dot_wide<MODE>, (unsigned)std::min(n / 8, 8 * sm), 512, term(x, k, w), (int64_t)n, bias, c);
        else
            launch(p, dot16<MODE>, (unsigned)std::min(n / 16, 8 * sm), 256, term(x, k, w), (int64_t)n, bias, c);
    };
    auto norm = [&](const float *a, const float *c, const float *g, const float *beta, float *y) {
        launch(pdl && count++ > 0, add_norm<MODE>, M, 256, a, c, g, beta, y);
    };
    for (const Layer &l : ls) {
        gemv(b.x, H, l.wq, H, l.bq, b.q);
        gemv(b.q, H, l.wk, H, l.bk, b.k);
        gemv(b.k, H, l.wv, H, l.bv, b.v);
        gemv(b.v, H, l.wo, H, l.bo, b.o);
        norm(b.o, b.x, l.g1, l.b1, b.h);
        gemv(b.h, H, l.wu, F, l.bu, b.u);
        gemv(b.u, F, l.wd, H, l.bd, b.d);
        norm(b.d, b.h, l.g2, l.b2, b.x);
    }
}

static float *random_dev(size_t n, float k) { return upload(random_floats(n, k)); }

int main() {
    int sm;
    CK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    srand(11);
    std::vector<Layer> ls(LAYERS);
    for (Layer &l : ls) {
        const float s = 1.f / 32;
        l = Layer{random_dev(H * H, s), random_dev(H * H, s), random_dev(H * H, s), random_dev(H * H, s),
                  random_dev((size_t)F * H, s), random_dev((size_t)H * F, s / 2),
                  random_dev(H, .1f), random_dev(H, .1f), random_dev(H, .1f), random_dev(H, .1f),
                  random_dev(F, .1f), random_dev(H, .1f), random_dev(H, 1), random_dev(H, .1f),
                  random_dev(H, 1), random_dev(H, .1f)};
    }
    const std::vector<float> x0 = random_floats(M * H, 1);
    Bufs b;
    float **all[] = {&b.x, &b.q, &b.k, &b.v, &b.o, &b.h, &b.u, &b.d};
    for (float **p : all) CK(cudaMalloc(p, 4 * (size_t)M * F));
    auto reset = [&] { CK(cudaMemcpyAsync(b.x, x0.data(), 4 * x0.size(), cudaMemcpyHostToDevice, stream)); };

    using Run = void (*)(const std::vector<Layer> &, const Bufs &, int);
    const Run runs[3] = {chain<0>, chain<1>, chain<2>};
    const char *names[3] = {"plain", "pdl", "pdl+L2 prefetch"};
    std::vector<float> want(M * H), got(M * H);
    printf("4-layer BERT-base chain at %d rows, 32 kernels, 113 MB of weights; us per chain "
           "(median of 7 runs of 50 chains)\n", M);
    for (int r = 0; r < 3; r++) {
        for (int graph = 0; graph < 2; graph++) {
            cudaGraphExec_t exec = nullptr;
            if (graph) {
                cudaGraph_t g;
                CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
                runs[r](ls, b, sm);
                CK(cudaStreamEndCapture(stream, &g));
                CK(cudaGraphInstantiate(&exec, g, 0));
                CK(cudaGraphDestroy(g));
            }
            auto once = [&] { if (graph) CK(cudaGraphLaunch(exec, stream)); else runs[r](ls, b, sm); };
            reset();
            once();
            CK(cudaMemcpyAsync(got.data(), b.x, 4 * got.size(), cudaMemcpyDeviceToHost, stream));
            CK(cudaStreamSynchronize(stream));
            if (r == 0 && graph == 0) want = got;
            const bool same = memcmp(want.data(), got.data(), 4 * got.size()) == 0;
            bool finite = true;
            for (float v : got) finite = finite && std::isfinite(v);
            std::vector<float> t;
            for (int rep = 0; rep < 7; rep++) {
                cudaEvent_t e0, e1;
                CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
                CK(cudaEventRecord(e0, stream));
                for (int i = 0; i < 50; i++) once();
                CK(cudaEventRecord(e1, stream));
                CK(cudaEventSynchronize(e1));
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                t.push_back(ms * 1e3f / 50);
            }
            printf("  %-16s %-7s %8.1f us  (%s%s)\n", names[r], graph ? "graph" : "stream", med(t),
                   same ? "same output as plain" : "OUTPUT DIFFERS", finite ? "" : ", not finite");
            if (exec) CK(cudaGraphExecDestroy(exec));
        }
    }
    // Each kernel alone, back to back, plain (what a profiler's kernel times add up to).
    const Layer &l = ls[0];
    printf("alone, plain, back to back: q %.2f us, up %.2f, down %.2f, norm %.2f\n",
           back_to_back_us([&] { dot_wide<0><<<96, 512>>>(term(b.x, H, l.wq), H, l.bq, b.q); }),
           back_to_back_us([&] { dot16<0><<<192, 256>>>(term(b.h, H, l.wu), F, l.bu, b.u); }),
           back_to_back_us([&] { dot_wide<0><<<96, 512>>>(term(b.u, F, l.wd), H, l.bd, b.d); }),
           back_to_back_us([&] { add_norm<0><<<M, 256>>>(b.o, b.x, l.g1, l.b1, b.h); }));
    return 0;
}
