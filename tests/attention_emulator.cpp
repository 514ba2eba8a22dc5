/* The fused attention as sm_80 and later run it (native/include/cuvil_aot/cuda_attention.h:
 * the tensor-core kernel of cuda_attention_tc.h, the FMA kernel's and the decode rows'
 * entries (cuda_attention_decode.h) at few query rows, where the host picks them) on the
 * CPU, for tests/test_cuda_attention.py: a block's 128 threads are fibers (ucontext) run
 * round-robin on one thread, so __syncthreads, the warp shuffles, mma.sync (each lane's
 * fragments gathered, the 16 x 8 x 8 or, bfloat16, 16 x 8 x 16 product computed, each
 * lane's part handed back) and ldmatrix (each lane's row address gathered) are barriers;
 * cp.async is a plain copy. What it checks is the kernel's own logic (fragment layouts,
 * tiles, masks, the online softmax, strides); the TF32 and bfloat16 arithmetic is the
 * hardware's, emulated here by products of the already-rounded values, summed in float.
 *
 *   g++ -std=c++17 -O1 -I native/include tests/attention_emulator.cpp -o emu
 *   ./emu B H T S DK DV mode seed type [split]   (mode: 0 plain, 1 padding mask, 2 causal,
 *       3 strided views, 4 rows of only -inf, 5 rows padded to a whole 16 bytes (the
 *       chunked loads' partial chunks, with a padding mask); type: Q, K and V's elements, 0 float (3xTF32),
 *       1 bfloat16 (the bf16 kernel: mma.sync m16n8k16 and ldmatrix emulated as mma.sync's
 *       m16n8k8), 2 float16 (one TF32 product each, as generated code takes for them);
 *       prints "max_rel_err nan_ok scaled_err": the largest error over the largest output,
 *       and the largest over that output's sum(p |v|) / sum(p), the scale of P's rounding)
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

/* --- the CUDA surface the header uses ------------------------------------------------ */
#define CUVIL_AOT_CUDA_GEMM_TC_H /* its helpers below instead */
#define CV_DEV static inline
#define CV_MEMBER inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define CV_ATT_NEG_INF (-INFINITY)
struct float2 {
    float x, y;
};
#define EMU_THREADS 128
#include "emulated_block.h"
struct alignas(16) float4 {
    float x, y, z, w;
};
static uint32_t __float_as_uint(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}
static float __uint_as_float(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

typedef struct cv_att_in {
    const char *p;
    int64_t nh, sb, sh, rs, cs;
} cv_att_in;
/* the 2-byte elements: bfloat16 and float16 rounded to nearest even (finite values) */
struct cv_bf16 {
    uint16_t bits;
    cv_bf16() = default;
    explicit cv_bf16(float f) {
        const uint32_t u = __float_as_uint(f);
        bits = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    operator float() const { return __uint_as_float((uint32_t)bits << 16); }
};
struct cv_f16 {
    _Float16 h;
    cv_f16() = default;
    explicit cv_f16(float f) : h((_Float16)f) {}
    operator float() const { return (float)h; }
};
static void cv_cp_async16(void *smem, const void *gmem, int bytes) { /* the rest zero */
    if ((reinterpret_cast<uintptr_t>(smem) | reinterpret_cast<uintptr_t>(gmem)) & 15) abort();
    memcpy(smem, gmem, (size_t)bytes);
    memset(static_cast<char *>(smem) + bytes, 0, (size_t)(16 - bytes));
}
static void cv_cp_async_commit() {}
template <int N>
static void cv_cp_async_wait() {}
static uint32_t cv_tf32(float x) { return (__float_as_uint(x) + 0x1000u) & 0xffffe000u; }
static void cv_split_tf32(float x, uint32_t &big, uint32_t &small) {
    big = cv_tf32(x);
    small = cv_tf32(x - __uint_as_float(big));
}
static uint32_t mma_a[NT / 32][32][4], mma_b[NT / 32][32][2];
static void cv_mma_tf32(float d[4], const uint32_t a[4], const uint32_t b[2]) {
    const int w = cur / 32, lane = cur % 32, g = lane / 4, t = lane % 4;
    memcpy(mma_a[w][lane], a, 16);
    memcpy(mma_b[w][lane], b, 8);
    __syncwarp();
    for (int e = 0; e < 4; e++) { /* d(row, col) += sum_k A(row, k) B(k, col) */
        const int row = g + (e >> 1) * 8, col = 2 * t + (e & 1);
        float sum = d[e];
        for (int k = 0; k < 8; k++) { /* A(r, k): lane 4(r % 8) + k % 4, reg (r / 8) + 2(k / 4) */
            const float x = __uint_as_float(mma_a[w][4 * (row % 8) + k % 4][row / 8 + 2 * (k / 4)]);
            const float y = __uint_as_float(mma_b[w][4 * col + k % 4][k / 4]); /* B(k, n) */
            sum += x * y;
        }
        d[e] = sum;
    }
    __syncwarp();
}

/* element h (0: the low half) of a register of two bfloat16 values, as a float */
static float bf_half(uint32_t r, int h) { return __uint_as_float(h ? r & 0xffff0000u : r << 16); }
static void cv_mma_bf16(float d[4], const uint32_t a[4], const uint32_t b[2]) { /* m16n8k16 */
    const int w = cur / 32, lane = cur % 32, g = lane / 4, t = lane % 4;
    memcpy(mma_a[w][lane], a, 16);
    memcpy(mma_b[w][lane], b, 8);
    __syncwarp();
    for (int e = 0; e < 4; e++) {
        const int row = g + (e >> 1) * 8, col = 2 * t + (e & 1);
        float sum = d[e];
        for (int k = 0; k < 16; k++) { /* A(r, k): lane 4(r % 8) + (k % 8) / 2, reg r / 8 +
                                        * 2(k / 8), half k % 2; B(k, n): lane 4n + (k % 8) / 2,
                                        * reg k / 8, half k % 2 (PTX ISA, m16n8k16 .bf16) */
            const int al = 4 * (row % 8) + (k % 8) / 2, ar = row / 8 + 2 * (k / 8);
            const float x = bf_half(mma_a[w][al][ar], k % 2);
            const float y = bf_half(mma_b[w][4 * col + (k % 8) / 2][k / 8], k % 2);
            sum += x * y; /* exact: two 8-bit significands */
        }
        d[e] = sum;
    }
    __syncwarp();
}
static const char *ldsm_row[NT / 32][32];
template <bool TRANS>
static void cv_ldsm4(uint32_t r[4], const void *row) { /* ldmatrix .x4 (.trans), b16 */
    const int w = cur / 32, lane = cur % 32, g = lane / 4, t = lane % 4;
    if (reinterpret_cast<uintptr_t>(row) & 15) abort();
    ldsm_row[w][lane] = static_cast<const char *>(row);
    __syncwarp();
    auto at = [&](int i, int rr, int c) { /* matrix i's (rr, c): row rr from lane 8i + rr */
        uint16_t h;
        memcpy(&h, ldsm_row[w][8 * i + rr] + 2 * c, 2);
        return (uint32_t)h;
    };
    for (int i = 0; i < 4; i++)
        r[i] = TRANS ? at(i, 2 * t, g) | at(i, 2 * t + 1, g) << 16
                     : at(i, g, 2 * t) | at(i, g, 2 * t + 1) << 16;
    __syncwarp();
}

#define CUVIL_AOT_CUDA_KERNEL_H /* the surface above instead */
#include "cuvil_aot/cuda_attention.h"

/* --- a problem ------------------------------------------------------------------------ */
struct score_fn { /* dot * c + mask(z / h, i, j) */
    float c;
    const float *mask;
    int64_t mb, mi, mj, h;
    float operator()(int64_t z, int64_t i, int64_t j, float dot) const {
        return dot * c + (mask ? mask[(z / h) * mb + i * mi + j * mj] : 0.0f);
    }
};
struct epi_fn {
    float *o;
    int64_t bs, rs;
    void operator()(int64_t z, int64_t i, int64_t c, float v) const { o[z * bs + i * rs + c] = v; }
};

template <int DK, int DV, class T>
static void run(const cv_att_in &q, const cv_att_in &k, const cv_att_in &v, int64_t nz, int64_t t,
                int64_t s, int dk, int dv, int split, const score_fn &sc, const epi_fn &ep) {
    static const cv_att_in *Q, *K, *V;
    static int64_t NZ, T_, S;
    static int Dk, Dv, Split;
    static const score_fn *SC;
    static const epi_fn *EP;
    Q = &q, K = &k, V = &v, NZ = nz, T_ = t, S = s, Dk = dk, Dv = dv, SC = &sc, EP = &ep;
    Split = split;
    auto body = []() {
        constexpr bool x3 = sizeof(T) == 4; /* 2-byte elements: one TF32 product */
        if constexpr (DK <= 64 && DV <= 64) { /* few rows' entries, as the host picks them */
            if (T_ <= CV_ATT_RW)
                return cv_attention_rows<x3, x3, T, T, T>(*Q, *K, *V, NZ, T_, S, Dk, Dv, Split,
                                                          *SC, *EP);
            if (T_ <= CV_ATT_BM)
                return cv_attention_few<x3, x3, T, T, T>(*Q, *K, *V, NZ, T_, S, Dk, Dv, Split,
                                                         *SC, *EP);
        }
        cv_attention<DK, DV, x3, x3, T, T, T>(*Q, *K, *V, NZ, T_, S, Dk, Dv, Split, *SC, *EP);
    };
    const int64_t rows = split == 2 ? 32 : 64; /* the host's grid (gpu_attention.plan) */
    gridDim = {(unsigned)((t + rows - 1) / rows), (unsigned)(nz < 3 ? nz : 3), 1}; /* z strided */
    run_grid(+body);
}

template <class E>
static int solve(char **argv) {
    const int64_t B = atoll(argv[1]), H = atoll(argv[2]), T = atoll(argv[3]), S = atoll(argv[4]);
    const int dk = atoi(argv[5]), dv = atoi(argv[6]), mode = atoi(argv[7]);
    const int split = argv[10] ? atoi(argv[10]) : 1;
    std::mt19937 rng(atoi(argv[8]));
    std::normal_distribution<float> nd;
    const int64_t Z = B * H;
    /* storage: mode 3 keeps (B, T, H, D) layouts (heads split by strides), padded rows;
     * mode 5 pads each row by 4 to 7 elements, to a multiple of 4 */
    constexpr int64_t CH = 16 / sizeof(E); /* elements a 16-byte chunk */
    auto padded = [&](int64_t d) {
        return d + (mode == 3 ? 3 : mode == 5 ? CH + (-d & (CH - 1)) : 0);
    };
    auto alloc = [&](int64_t n, int64_t d) {
        std::vector<E> x((size_t)(B * n * H * padded(d)) + 1);
        for (auto &e : x) e = E(nd(rng));
        return x;
    };
    std::vector<E> qs = alloc(T, dk), ks = alloc(S, dk), vs = alloc(S, dv);
    auto view = [&](const std::vector<E> &x, int64_t n, int64_t d) {
        if (mode == 3) /* (b, h, i, c) at ((b n + i) H + h) padded(d) + c, one element in */
            return cv_att_in{(const char *)(x.data() + 1), H, n * H * padded(d), padded(d),
                             H * padded(d), 1};
        return cv_att_in{(const char *)x.data(), 1, n * padded(d), 0, padded(d), 1};
    };
    const cv_att_in q = view(qs, T, dk), k = view(ks, S, dk), v = view(vs, S, dv);
    std::vector<float> mask;
    score_fn sc{1.0f / std::sqrt((float)dk), nullptr, 0, 0, 0, H};
    if (mode == 1 || mode == 3 || mode == 4 || mode == 5) { /* (B, 1, 1, S) */
        mask.resize((size_t)(B * S));
        std::uniform_real_distribution<float> u;
        for (auto &e : mask) e = u(rng) < 0.3f ? (mode == 4 ? -INFINITY : -10000.0f) : 0.0f;
        for (int64_t b = 0; b < B; b++) mask[b * S] = 0.0f;
        if (mode == 4) /* batch 0 all -inf (NaN rows); batch 1's first 40 keys -inf */
            for (int64_t j = 0; j < S; j++) {
                mask[j] = -INFINITY;
                if (B > 1) mask[S + j] = j < 40 ? -INFINITY : 0.0f;
            }
        sc.mask = mask.data(), sc.mb = S, sc.mi = 0, sc.mj = 1;
    } else if (mode == 2) { /* (T, S) causal */
        mask.resize((size_t)(T * S));
        for (int64_t i = 0; i < T; i++)
            for (int64_t j = 0; j < S; j++) mask[i * S + j] = j > i ? -1e9f : 0.0f;
        sc.mask = mask.data(), sc.mb = 0, sc.mi = S, sc.mj = 1;
    }
    std::vector<float> out((size_t)(Z * T * dv), NAN);
    epi_fn ep{out.data(), T * dv, dv};
    const int bk = dk <= 32 ? 32 : dk <= 64 ? 64 : dk <= 96 ? 96 : 128;
    const int bv = dv <= 32 ? 32 : dv <= 64 ? 64 : dv <= 96 ? 96 : 128;
#define CASE(a, b) \
    if (bk == a && bv == b) run<a, b, E>(q, k, v, Z, T, S, dk, dv, split, sc, ep);
#define CASES(a) CASE(a, 32) CASE(a, 64) CASE(a, 96) CASE(a, 128)
    CASES(32) CASES(64) CASES(96) CASES(128)
    /* the reference in double */
    double err = 0, big = 0, scaled = 0;
    int nan_ok = 1;
    for (int64_t z = 0; z < Z; z++) {
        const E *qp = cv_att_batch<E>(q, z), *kp = cv_att_batch<E>(k, z), *vp = cv_att_batch<E>(v, z);
        for (int64_t i = 0; i < T; i++) {
            std::vector<double> x(S);
            double m = -INFINITY;
            for (int64_t j = 0; j < S; j++) {
                double d = 0;
                for (int c = 0; c < dk; c++) d += (double)qp[i * q.rs + c] * kp[j * k.rs + c];
                const double mk = sc.mask ? sc.mask[(z / H) * sc.mb + i * sc.mi + j * sc.mj] : 0;
                x[j] = d / std::sqrt((double)dk) + mk;
                m = std::fmax(m, x[j]);
            }
            double l = 0;
            for (int64_t j = 0; j < S; j++) l += x[j] = std::exp(x[j] - m);
            for (int c = 0; c < dv; c++) {
                double o = 0, mag = 0;
                for (int64_t j = 0; j < S; j++)
                    o += x[j] * vp[j * v.rs + c], mag += x[j] * std::fabs((double)vp[j * v.rs + c]);
                o /= l, mag /= l;
                const float got = out[(size_t)(z * T * dv + i * dv + c)];
                if (std::isnan(o) != std::isnan(got)) nan_ok = 0;
                if (std::isnan(o)) continue;
                err = std::fmax(err, std::fabs(got - o)), big = std::fmax(big, std::fabs(o));
                if (mag > 0) scaled = std::fmax(scaled, std::fabs(got - o) / mag);
            }
        }
    }
    printf("%.3g %d %.3g\n", big > 0 ? err / big : err, nan_ok, scaled);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 10 && argc != 11) return 2;
    const int type = atoi(argv[9]);
    return type == 0 ? solve<float>(argv) : type == 1 ? solve<cv_bf16>(argv) : solve<cv_f16>(argv);
}
