// Where the ResNet-18 head's batch-1 device time goes (issue 6), on the device machine: the
// generated one-kernel f4_s0_one (gen_models.cuh, from bench/gpu/gen_models.py) with
// %globaltimer stamps per block after each phase: 7x7 pooling of 512 channels, grid
// barrier, GEMV 512 x 1000 + bias, grid barrier, softmax over the 1000 logits. Beside it,
// the call's three kernels launched one by one (CUVIL_AOT_CUDA_ONE=0 does that in a call).
//   nvcc -O3 -std=c++17 -arch=sm_90 -I../../native/include resnet_probe.cu -o r && ./r
#include <cmath>
#include "gen_models.cuh"
#include "probe_util.cuh"

constexpr int C = 512, HW = 49, N = 1000, STAMPS = 6;

__device__ __forceinline__ void stamp(unsigned long long *st, int i) {
    __syncthreads();
    if (threadIdx.x == 0) st[STAMPS * blockIdx.x + i] = gtime();
}

// f4_s0_one's body (warp-per-row pooling, GEMV, block-per-row softmax kept in registers,
// or with warp_row a warp per row keeping 32 elements a lane), stamped.
extern "C" __global__ void __launch_bounds__(1024, 1) one_timed(const __grid_constant__ f4_s0_one_args o,
                                                                unsigned long long *st, int warp_row) {
    stamp(st, 0);
    f4_s0_g0_rows<int32_t, 32>(&o.a0);
    stamp(st, 1);
    cooperative_groups::this_grid().sync();
    stamp(st, 2);
    {
        const f4_s0_g1_args *a = &o.a1;
        cv_gemv<float, 1>(a->t, 1, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f4_s0_g1_epi{a});
    }
    stamp(st, 3);
    cooperative_groups::this_grid().sync();
    stamp(st, 4);
    if (warp_row) f4_s0_g2_rows_c<int32_t, 32, 32, false>(&o.a2);
    else f4_s0_g2_rows_c<int32_t, 0, 2, false>(&o.a2);
    stamp(st, 5);
}

// The generated softmax row by one warp, 32 elements a lane in registers: no block-wide
// barrier in its two reductions.
extern "C" __global__ void __launch_bounds__(1024, 1) one_warp_row(const __grid_constant__ f4_s0_one_args o) {
    f4_s0_g0_rows<int32_t, 32>(&o.a0);
    cooperative_groups::this_grid().sync();
    {
        const f4_s0_g1_args *a = &o.a1;
        cv_gemv<float, 1>(a->t, 1, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f4_s0_g1_epi{a});
    }
    cooperative_groups::this_grid().sync();
    f4_s0_g2_rows_c<int32_t, 32, 32, false>(&o.a2);
}

// Alternatives to the one-kernel's grid barriers at batch 1 (not generated yet): the
// softmax row by hand (one block, 2 elements a thread in registers), after a grid
// barrier (tail_barrier) or run by the last GEMV block to finish (tail_last: a fence and
// an atomic count instead of the barrier); and pool_in_tiles: every GEMV block pools
// the 512 channels itself (the same values into the same buffer), so neither barrier is
// left and the launch is plain, a block per GEMV tile.
__device__ void softmax_row(const float *z, float *p, int n) {
    float v[2], m = -INFINITY, s = 0;
    for (int r = 0; r < 2; r++) {
        const int j = threadIdx.x + r * blockDim.x;
        v[r] = j < n ? __ldcg(z + j) : -INFINITY;
        m = fmaxf(m, v[r]);
    }
    m = cv_block_reduce(m, cv_op_max());
    for (int r = 0; r < 2; r++) s += v[r] = expf(v[r] - m);
    s = cv_block_reduce(s, cv_op_sum());
    for (int r = 0; r < 2; r++) {
        const int j = threadIdx.x + r * blockDim.x;
        if (j < n) p[j] = v[r] / s;
    }
}

// The block that finishes last (of gridDim.x) runs the softmax row; true for it.
__device__ bool last_block(unsigned *count) {
    __shared__ bool last;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(count, 1) == gridDim.x - 1;
    }
    __syncthreads();
    return last;
}

__device__ void gemv_phase(const f4_s0_one_args &o) {
    const f4_s0_g1_args *a = &o.a1;
    cv_gemv<float, 1>(a->t, 1, a->n[0], a->n[1], 1, (int)a->cols, (int)a->vec, f4_s0_g1_epi{a});
}

extern "C" __global__ void __launch_bounds__(1024, 1) tail_barrier(const __grid_constant__ f4_s0_one_args o) {
    f4_s0_g0_rows<int32_t, 32>(&o.a0);
    cooperative_groups::this_grid().sync();
    gemv_phase(o);
    cooperative_groups::this_grid().sync();
    if (blockIdx.x == 0) softmax_row((const float *)o.a2.p[0], (float *)o.a2.p[1], N);
}

extern "C" __global__ void __launch_bounds__(1024, 1) tail_last(const __grid_constant__ f4_s0_one_args o,
                                                               unsigned *count) {
    f4_s0_g0_rows<int32_t, 32>(&o.a0);
    cooperative_groups::this_grid().sync();
    gemv_phase(o);
    if (last_block(count)) {
        softmax_row((const float *)o.a2.p[0], (float *)o.a2.p[1], N);
        if (threadIdx.x == 0) *count = 0;
    }
}

extern "C" __global__ void __launch_bounds__(1024, 1) pool_in_tiles(const __grid_constant__ f4_s0_one_args o,
                                                                   unsigned *count) {
    const float *fmap = (const float *)o.a0.p[0];
    float *pooled = (float *)o.a0.p[1];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float sum[C / 32];
#pragma unroll
    for (int i = 0; i < C / 32; i++) {  // warp w: channels w, w + 32, ...; every load in flight
        const float *row = fmap + (warp + 32 * i) * HW;
        sum[i] = __ldg(row + lane) + (lane + 32 < HW ? __ldg(row + lane + 32) : 0.f);
    }
#pragma unroll
    for (int i = 0; i < C / 32; i++) {
        const float t = cv_warp_reduce(sum[i], cv_op_sum());
        if (lane == 0) pooled[warp + 32 * i] = t / HW;
    }
    __threadfence();
    __syncthreads();
    gemv_phase(o);
    if (last_block(count)) {
        softmax_row((const float *)o.a2.p[0], (float *)o.a2.p[1], N);
        if (threadIdx.x == 0) *count = 0;
    }
}

int main() {
    int sm;
    CK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0));
    srand(2);
    auto fmap = random_floats((size_t)C * HW, 2), w = random_floats((size_t)C * N, 0.04f);
    auto b = random_floats(N, 0.1f);
    float *dmap = upload(fmap), *dw = upload(w), *db = upload(b), *pooled, *logits, *probs;
    unsigned long long *st;
    CK(cudaMalloc(&pooled, 4 * C)); CK(cudaMalloc(&logits, 4 * N)); CK(cudaMalloc(&probs, 4 * N));
    CK(cudaMalloc(&st, 8 * STAMPS * 1024));
    std::vector<double> ref(N);
    {
        std::vector<double> p(C), z(N);
        for (int c = 0; c < C; c++) {
            double s = 0;
            for (int i = 0; i < HW; i++) s += fmap[c * HW + i];
            p[c] = s / HW;
        }
        double mx = -1e300, sum = 0;
        for (int j = 0; j < N; j++) {
            z[j] = b[j];
            for (int c = 0; c < C; c++) z[j] += p[c] * w[(size_t)c * N + j];
            mx = std::max(mx, z[j]);
        }
        for (int j = 0; j < N; j++) sum += ref[j] = exp(z[j] - mx);
        for (int j = 0; j < N; j++) ref[j] /= sum;
    }
    // The arguments as the host wrapper fills them (module.c, f4_s0_grun) at batch 1.
    f4_s0_one_args one;
    memset(&one, 0, sizeof one);
    one.a0.n[0] = 1, one.a0.n[1] = C, one.a0.n[2] = HW;
    one.a0.p[0] = (char *)dmap, one.a0.s[0][0] = C * HW, one.a0.s[0][1] = HW, one.a0.s[0][2] = 1;
    one.a0.p[1] = (char *)pooled, one.a0.s[1][0] = C, one.a0.s[1][1] = 1;
    one.a1.n[0] = 1, one.a1.n[1] = N;
    one.a1.p[0] = (char *)db, one.a1.s[0][1] = 1;
    one.a1.p[1] = (char *)logits, one.a1.s[1][0] = N, one.a1.s[1][1] = 1;
    one.a1.t[0] = {(const char *)pooled, C, 1, 0, (const char *)dw, N, 1, 0, C};
    one.a1.cols = 16, one.a1.vec = 1;
    one.a2.n[0] = 1, one.a2.n[1] = N;
    one.a2.p[0] = (char *)logits, one.a2.s[0][0] = N, one.a2.s[0][1] = 1;
    one.a2.p[1] = (char *)probs, one.a2.s[1][0] = N, one.a2.s[1][1] = 1;
    one.v[0] = 0, one.v[1] = 1, one.v[2] = 4;  // a warp per pooled row; GEMV 1 row; a block per row, cached
    auto check = [&](const char *name) {
        std::vector<float> got(N);
        CK(cudaMemcpy(got.data(), probs, 4 * N, cudaMemcpyDeviceToHost));
        double e = 0;
        for (int j = 0; j < N; j++) e = std::max(e, std::fabs(got[j] - ref[j]));
        if (!(e < 1e-5)) printf("  %s: WRONG, max err %.3g\n", name, e);
        CK(cudaMemset(probs, 0xff, 4 * N));
    };
    auto timed = [&](const char *name, auto launch) {
        for (int i = 0; i < 50; i++) launch();
        CK(cudaDeviceSynchronize());
        check(name);
        const float b2b = back_to_back_us(launch);
        std::vector<float> wall;
        for (int i = 0; i < 200; i++) wall.push_back(launch_sync_us(launch));
        printf("%-40s back-to-back %6.2f us  launch+sync %6.2f us\n", name, b2b, med(wall));
    };
    void *args[] = {&one};
    timed("generated one-kernel (f4_s0_one)", [&] {
        CK(cudaLaunchCooperativeKernel((const void *)f4_s0_one, sm, 1024, args, 0, 0));
    });
    {  // the softmax phase over its row three times from memory (v = 1), as before
        f4_s0_one_args o = one;
        o.v[2] = 1;
        void *oargs[] = {&o};
        timed("  softmax phase uncached", [&] {
            CK(cudaLaunchCooperativeKernel((const void *)f4_s0_one, sm, 1024, oargs, 0, 0));
        });
    }
    timed("one-kernel, softmax a warp per row", [&] {
        CK(cudaLaunchCooperativeKernel((const void *)one_warp_row, sm, 1024, args, 0, 0));
    });
    timed("three kernels (w32, gemv1, bcu32)", [&] {
        f4_s0_g0_w32<<<(C + 7) / 8, 256>>>(one.a0);
        f4_s0_g1_gemv1<<<(N + 15) / 16, 1024>>>(one.a1);
        f4_s0_g2_bcu32<<<1, 256>>>(one.a2);
    });
    unsigned *count;
    CK(cudaMalloc(&count, 4));
    CK(cudaMemset(count, 0, 4));
    void *cargs[] = {&one, &count};
    timed("tail after a barrier, softmax by hand", [&] {
        CK(cudaLaunchCooperativeKernel((const void *)tail_barrier, sm, 1024, args, 0, 0));
    });
    timed("tail by the last GEMV block", [&] {
        CK(cudaLaunchCooperativeKernel((const void *)tail_last, sm, 1024, cargs, 0, 0));
    });
    timed("pooling in every GEMV tile, plain launch", [&] {
        pool_in_tiles<<<(N + 15) / 16, 1024>>>(one, count);
    });
    // Phases: median over launches of (latest block at stamp i) - (latest block at stamp i-1).
    for (int warp_row = 0; warp_row < 2; warp_row++) {
    void *sargs[] = {&one, &st, &warp_row};
    const char *names[] = {"pool", "barrier", "GEMV", "barrier", "softmax"};
    std::vector<std::vector<float>> ph(STAMPS);
    std::vector<unsigned long long> h((size_t)STAMPS * sm);
    for (int it = 0; it < 200; it++) {
        CK(cudaLaunchCooperativeKernel((const void *)one_timed, sm, 1024, sargs, 0, 0));
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(h.data(), st, 8 * h.size(), cudaMemcpyDeviceToHost));
        unsigned long long t0 = ~0ull, last[STAMPS] = {0};
        for (int bk = 0; bk < sm; bk++) {
            t0 = std::min(t0, h[STAMPS * bk]);
            for (int i = 0; i < STAMPS; i++) last[i] = std::max(last[i], h[STAMPS * bk + i]);
        }
        ph[0].push_back((last[STAMPS - 1] - t0) * 1e-3f);
        for (int i = 1; i < STAMPS; i++) ph[i].push_back((last[i] - last[i - 1]) * 1e-3f);
    }
    check("stamped");
    printf("stamped one-kernel%s: span %.2f us:", warp_row ? " (softmax a warp per row)" : "",
           med(ph[0]));
    for (int i = 1; i < STAMPS; i++) printf(" %s %.2f", names[i - 1], med(ph[i]));
    printf("\n");
    }
    return 0;
}
