// Where the LSTM step's batch-1 device time goes (issue 6), on the device machine: the
// generated one-kernel (gen_models.cuh, the CUDA source of examples/models.py that
// bench/gpu/gen_models.py writes) with %globaltimer stamps per block around its GEMV, its
// grid barrier and its gate math, and with the gates computed in the GEMV's tiles; against a
// gate-aligned hand-written kernel: block b owns hidden units [U*b, U*b + U) and reads their
// four gates' columns (q*H + U*b, q = 0..3) of each weight row, so the gate math runs in the
// GEMV's epilogue with no barrier and no gates buffer. H = 512, I = 512, weights hot in L2
// (the same every call).
//   nvcc -O3 -std=c++17 -arch=sm_90 -I../../native/include lstm_probe.cu -o l && ./l
#include <cmath>
#include "gen_models.cuh"
#include "probe_util.cuh"

constexpr int H = 512, I = 512, N4 = 4 * H;

// The generated one-kernel's body with a grid barrier (runs = 0), with stamps:
// [block][0..3] = start, GEMV done, barrier passed, end.
extern "C" __global__ void __launch_bounds__(1024, 1) one_timed(const __grid_constant__ f1_s0_one_args o,
                                                                unsigned long long *st) {
    unsigned long long t0 = gtime();
    {
        const f1_s0_g0_args *a = &o.a0;
        cv_gemv<float, 1>(a->t, 2, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f1_s0_g0_epi{a});
    }
    unsigned long long t1 = gtime();
    cooperative_groups::this_grid().sync();
    unsigned long long t2 = gtime();
    f1_s0_g1_strided<int32_t>(&o.a1);
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long *s = st + 4 * blockIdx.x;
        s[0] = t0, s[1] = t1, s[2] = t2, s[3] = gtime();
    }
}

struct Lstm {
    const float *x, *h, *c, *wx, *wh, *b;
    float *h2, *c2, *gates;
    cv_gpu_term terms[2];  // x @ wx and h @ wh as the host fills them (RUNTIME)
};

__device__ __forceinline__ float sig(float v) { return 1.f / (1.f + expf(-v)); }

// Gate-aligned: U units per block (U = 4: one float4 per gate per weight row; 8: two).
// Lanes: 4 * U / 4 per weight row; each warp steps through its share of k as cv_gemv does.
// GLOBAL: the gates go through global memory (stored, then loaded back after a barrier of the
// block) as the generated kernel's consumer reads them, instead of shared memory. RUNTIME:
// the terms' sizes and strides come from the arguments, as in the generated kernel, not
// from compile-time constants (is that what makes the generated tile slower?).
template <int U, int THREADS, bool PRELOAD, bool GLOBAL = false, bool RUNTIME = false>
__global__ void __launch_bounds__(THREADS) fused(Lstm p, unsigned long long *st) {
    unsigned long long t0 = gtime();
    constexpr int LANES = U;            // float4 groups per row: 4 gates x U/4
    constexpr int PER_WARP = 32 / LANES, NW = THREADS / 32;
    __shared__ float part[NW][4 * U];
    __shared__ float gate[4 * U];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane % LANES, q = g / (U / 4), sub = g % (U / 4);
    const int u0 = blockIdx.x * U;
    const int col = q * H + u0 + sub * 4;
    const int first = warp * PER_WARP + lane / LANES, step = NW * PER_WARP;
    float acc[4] = {0, 0, 0, 0};
    if (PRELOAD) {  // every load of both terms in flight at once (k = 512: 2 rows per thread each)
        constexpr int R = (512 + NW * PER_WARP - 1) / (NW * PER_WARP);
        float4 w[2][R];
        float xs[2][R];
#pragma unroll
        for (int t = 0; t < 2; t++)
#pragma unroll
            for (int r = 0; r < R; r++) {
                const int k = first + r * step;
                const float4 *wp = reinterpret_cast<const float4 *>((t ? p.wh : p.wx) + (size_t)k * N4 + col);
                w[t][r] = k < 512 ? __ldg(wp) : float4{0, 0, 0, 0};
                xs[t][r] = k < 512 ? __ldg((t ? p.h : p.x) + k) : 0.f;
            }
#pragma unroll
        for (int t = 0; t < 2; t++)
#pragma unroll
            for (int r = 0; r < R; r++) {
                acc[0] = fmaf(xs[t][r], w[t][r].x, acc[0]); acc[1] = fmaf(xs[t][r], w[t][r].y, acc[1]);
                acc[2] = fmaf(xs[t][r], w[t][r].z, acc[2]); acc[3] = fmaf(xs[t][r], w[t][r].w, acc[3]);
            }
    } else {
        const cv_gpu_term tx = RUNTIME ? p.terms[0] : cv_gpu_term{(const char *)p.x, I, 1, 0,
                                                                  (const char *)p.wx, N4, 1, 0, I};
        const cv_gpu_term th = RUNTIME ? p.terms[1] : cv_gpu_term{(const char *)p.h, H, 1, 0,
                                                                  (const char *)p.wh, N4, 1, 0, H};
        cv_gemv_term4(tx, 0, 0, col, first, step, acc);
        cv_gemv_term4(th, 0, 0, col, first, step, acc);
    }
#pragma unroll
    for (int e = 0; e < 4; e++) {
        for (int off = 16; off >= LANES; off >>= 1) acc[e] += __shfl_xor_sync(0xffffffffu, acc[e], off);
        if (lane < LANES) part[warp][lane * 4 + e] = acc[e];
    }
    __syncthreads();
    if (threadIdx.x < 4 * U) {  // gate[q * U + j]: gate q of unit u0 + j
        float s = 0;
        for (int w = 0; w < NW; w++) s += part[w][threadIdx.x];
        const int gq = threadIdx.x / U, j = threadIdx.x % U;
        if (GLOBAL) p.gates[gq * H + u0 + j] = s + p.b[gq * H + u0 + j];
        else gate[threadIdx.x] = s + p.b[gq * H + u0 + j];
    }
    __syncthreads();
    if (GLOBAL && threadIdx.x < 4 * U)
        gate[threadIdx.x] = p.gates[(threadIdx.x / U) * H + u0 + threadIdx.x % U];
    if (GLOBAL) __syncthreads();
    if (threadIdx.x < U) {
        const int j = threadIdx.x, u = u0 + j;
        const float i = sig(gate[j]), f = sig(gate[U + j]), gg = tanhf(gate[2 * U + j]),
                    o = sig(gate[3 * U + j]);
        const float c2 = f * p.c[u] + i * gg;
        p.c2[u] = c2;
        p.h2[u] = o * tanhf(c2);
    }
    if (threadIdx.x == 0) {
        unsigned long long *s = st + 4 * blockIdx.x;
        s[0] = t0, s[1] = s[2] = 0, s[3] = gtime();
    }
}

__global__ void empty() {}

// The generated one-kernel's GEMV with its consumer in the tiles (runs = 4), stamped:
// [block][0..3] = start, tile's epilogue stored, consumer done, end.
struct stamped_after {
    f1_s0_g1_after inner;
    unsigned long long *st;
    __device__ void operator()(int64_t row0, int rows, int64_t col0, int64_t run) const {
        const unsigned long long t = gtime();
        inner(row0, rows, col0, run);
        __syncthreads();
        if (threadIdx.x == 0) st[4 * blockIdx.x + 1] = t, st[4 * blockIdx.x + 2] = gtime();
    }
};

extern "C" __global__ void __launch_bounds__(1024, 1) pair_timed(const __grid_constant__ f1_s0_one_args o,
                                                                 unsigned long long *st) {
    const unsigned long long t0 = gtime();
    const f1_s0_g0_args *a = &o.a0;
    cv_gemv<float, 1>(a->t, 2, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f1_s0_g0_epi{a}, 4,
                      stamped_after{f1_s0_g1_after{&o.a1, o.v[1], 1}, st});
    if (threadIdx.x == 0) st[4 * blockIdx.x] = t0, st[4 * blockIdx.x + 3] = gtime();
}

// Median over launches of: the events' rate of back-to-back launches, the globaltimer span
// (first block start to last block end) and its phases, and launch + synchronize on the host.
template <class L>
static void measure(const char *name, int blocks, L launch, unsigned long long *st, bool phases) {
    for (int i = 0; i < 50; i++) launch();
    CK(cudaDeviceSynchronize());
    const float b2b = back_to_back_us(launch);
    std::vector<float> span, gemv, bar, wall;
    std::vector<unsigned long long> h(4 * blocks);
    for (int it = 0; it < 200; it++) {
        wall.push_back(launch_sync_us(launch));
        CK(cudaMemcpy(h.data(), st, 8 * h.size(), cudaMemcpyDeviceToHost));
        unsigned long long s0 = ~0ull, s1 = 0, s2 = 0, s3 = 0;
        if (!blocks) continue;
        for (int b = 0; b < blocks; b++) {
            s0 = std::min(s0, h[4 * b]); s1 = std::max(s1, h[4 * b + 1]);
            s2 = std::max(s2, h[4 * b + 2]); s3 = std::max(s3, h[4 * b + 3]);
        }
        span.push_back((s3 - s0) * 1e-3f);
        if (phases) gemv.push_back((s1 - s0) * 1e-3f), bar.push_back((s2 - s1) * 1e-3f);
    }
    printf("%-38s back-to-back %6.2f us", name, b2b);
    if (blocks) printf("  span %6.2f us", med(span));
    if (phases) printf(" (GEMV %.2f, barrier %.2f, gates %.2f)", med(gemv), med(bar),
                       med(span) - med(gemv) - med(bar));
    printf("  launch+sync %6.2f us\n", med(wall));
}

int main() {
    int sm;
    CK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0));
    srand(1);
    auto x = random_floats(I, 1), h = random_floats(H, 1), c = random_floats(H, 1);
    auto wx = random_floats((size_t)I * N4, 0.08f), wh = random_floats((size_t)H * N4, 0.08f);
    auto b = random_floats(N4, 0.1f);
    float *dx = upload(x), *dh = upload(h), *dc = upload(c);
    float *dwx = upload(wx), *dwh = upload(wh), *db = upload(b);
    float *gates, *h2, *c2;
    unsigned long long *st;
    CK(cudaMalloc(&gates, 4 * N4)); CK(cudaMalloc(&h2, 4 * H)); CK(cudaMalloc(&c2, 4 * H));
    CK(cudaMalloc(&st, 8 * 4 * 1024));
    // Reference in double.
    std::vector<double> rh(H), rc(H);
    for (int u = 0; u < H; u++) {
        double g[4];
        for (int q = 0; q < 4; q++) {
            double s = b[q * H + u];
            for (int k = 0; k < I; k++) s += (double)x[k] * wx[(size_t)k * N4 + q * H + u];
            for (int k = 0; k < H; k++) s += (double)h[k] * wh[(size_t)k * N4 + q * H + u];
            g[q] = s;
        }
        auto sg = [](double v) { return 1 / (1 + exp(-v)); };
        rc[u] = sg(g[1]) * c[u] + sg(g[0]) * tanh(g[2]);
        rh[u] = sg(g[3]) * tanh(rc[u]);
    }
    auto check = [&](const char *name) {
        std::vector<float> oh(H), oc(H);
        CK(cudaMemset(h2, 0xff, 4 * H)); CK(cudaMemset(c2, 0xff, 4 * H));
        return [&, name, oh, oc]() mutable {
            CK(cudaMemcpy(oh.data(), h2, 4 * H, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(oc.data(), c2, 4 * H, cudaMemcpyDeviceToHost));
            double e = 0;
            for (int u = 0; u < H; u++)
                e = std::max({e, std::fabs(oh[u] - rh[u]), std::fabs(oc[u] - rc[u])});
            if (!(e < 1e-4)) printf("  %s: WRONG, max err %.3g\n", name, e);
        };
    };

    // The generated one-kernel's arguments, as the host wrapper fills them (module.c).
    f1_s0_one_args one;
    memset(&one, 0, sizeof one);
    f1_s0_g0_args &a0 = one.a0;
    a0.n[0] = 1, a0.n[1] = N4;
    a0.p[0] = (char *)db, a0.s[0][1] = 1;
    a0.p[1] = (char *)gates, a0.s[1][0] = N4, a0.s[1][1] = 1;
    a0.t[0] = {(const char *)dx, I, 1, 0, (const char *)dwx, N4, 1, 0, I};
    a0.t[1] = {(const char *)dh, H, 1, 0, (const char *)dwh, N4, 1, 0, H};
    a0.cols = 16, a0.vec = 1;
    f1_s0_g1_args &a1 = one.a1;
    a1.n[0] = 1, a1.n[1] = H;
    float *gp[4] = {gates + H, dc, gates, gates + 2 * H};
    for (int j = 0; j < 4; j++) a1.p[j] = (char *)gp[j];
    a1.p[4] = (char *)c2, a1.p[5] = (char *)(gates + 3 * H), a1.p[6] = (char *)h2;
    for (int j = 0; j < 7; j++) a1.s[j][0] = (j == 1 || j == 4 || j == 6) ? H : N4, a1.s[j][1] = 1;
    one.v[0] = 1, one.v[1] = 1;

    auto coop = [&](const void *fn, void **args) {
        CK(cudaLaunchCooperativeKernel(fn, sm, 1024, args, 0, 0));
    };
    {
        auto done = check("generated one-kernel");
        void *args[] = {&one};
        measure("generated one-kernel (f1_s0_one)", 0, [&] { coop((const void *)f1_s0_one, args); },
                st, false);
        done();
    }
    for (int cols : {16, 32}) {  // runs of 4 and of 8 columns
        auto done = check("generated one-kernel, runs = 4");
        f1_s0_one_args o4 = one;
        o4.runs[0] = 4, o4.a0.cols = cols;
        void *args[] = {&o4};
        char name[80];
        snprintf(name, sizeof name, "generated, gates in GEMV tiles, cols %d", cols);
        measure(name, 0, [&] { coop((const void *)f1_s0_one, args); }, st, false);
        done();
        auto done2 = check("generated one-kernel, runs = 4, plain launch");
        measure("  same, plain launch", 0, [&] { f1_s0_one<<<sm, 1024>>>(o4); }, st, false);
        done2();
        auto done3 = check("generated one-kernel, runs = 4, a block per tile");
        const int tiles = H / (cols / 4);
        measure("  same, a block per tile", 0, [&] { f1_s0_one<<<tiles, 1024>>>(o4); }, st, false);
        done3();
        auto done4 = check("generated, stamped");
        measure("  same, stamped (tile, consumer, rest)", tiles,
                [&] { pair_timed<<<tiles, 1024>>>(o4, st); }, st, true);
        done4();
    }
    {
        auto done = check("one-kernel, stamped");
        void *args[] = {&one, &st};
        measure("  same, stamped", sm, [&] { coop((const void *)one_timed, args); }, st, true);
        done();
    }
    {
        f1_s0_g0_args g = a0;
        measure("generated GEMV alone (gemv1)", 0, [&] { f1_s0_g0_gemv1<<<128, 1024>>>(g); }, st, false);
    }
    Lstm p = {dx, dh, dc, dwx, dwh, db, h2, c2, gates, {a0.t[0], a0.t[1]}};
    {
        auto done = check("fused U=8");
        measure("gate-aligned U=8, 1024 thr, preload", H / 8, [&] { fused<8, 1024, true><<<H / 8, 1024>>>(p, st); }, st, false);
        done();
    }
    {
        auto done = check("fused U=8 no preload");
        measure("gate-aligned U=8, 1024 thr", H / 8, [&] { fused<8, 1024, false><<<H / 8, 1024>>>(p, st); }, st, false);
        done();
    }
    {
        auto done = check("fused U=8 runtime terms");
        measure("gate-aligned U=8, terms from the arguments", H / 8,
                [&] { fused<8, 1024, false, false, true><<<H / 8, 1024>>>(p, st); }, st, false);
        done();
    }
    {
        auto done = check("fused U=8 global");
        measure("gate-aligned U=8, preload, gates global", H / 8,
                [&] { fused<8, 1024, true, true><<<H / 8, 1024>>>(p, st); }, st, false);
        done();
    }
    {
        measure("empty kernel, 128 x 1024 threads", 0, [&] { empty<<<128, 1024>>>(); }, st, false);
    }
    return 0;
}
