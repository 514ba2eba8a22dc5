/* CUDA C++, for nvcc only. The fused attention on tensor cores (sm_80+): cv_attention_tc
 * (cuda_attention_bf16.h, which holds the bfloat16 kernel), called by cv_attention
 * (cuda_attention.h) with that kernel's semantics. Two kernels, the operands' element
 * types choosing at compile time: cv_attention_bf16 where Q, K and V are
 * all cv_bf16 (the bf16 policy's heads), cv_attention_tf32 for every other combination.
 *
 * cv_attention_tf32: both products are mma.sync m16n8k8 TF32 with 3xTF32 (cuda_gemm_tc.h:
 * each operand split into big + small TF32 parts, small*big + big*small + big*big, each
 * k-step's sum added to the float32 accumulators with a rounded FADD), so float32
 * accuracy; X3QK / X3PV false: one TF32 product, for operands that are TF32 numbers already
 * (precision="tf32"). Q, K and V are float, cv_bf16 or cv_f16 (TQ, TK, TV), converted to
 * float as they are loaded, into the same float tiles and fragments. bfloat16 and float16
 * values are TF32 numbers, so their Q Kᵀ is exact in one TF32 product (X3QK false, the code
 * generator's choice: cuda_gemm.one_tf32_product); with such V X3PV is false too and P is
 * rounded to TF32 (to nearest, ties away).
 *
 * cv_attention_bf16: both products mma.sync m16n8k16 bf16 with float32 accumulators, K and
 * V tiles kept as bfloat16 (the layout further down). What it rounds: Q Kᵀ's products of
 * bfloat16 values are exact, summed in float32; the scores, the online softmax (max, exp,
 * the running sum l of the unrounded P) are float32 as in the TF32 kernel; P alone is
 * rounded, to bfloat16 (to nearest even), as the P V product's A operand. Each p_j moves by
 * at most 2^-8 p_j, so output c by at most 2^-8 sum_j p_j |v_jc| / sum_j p_j beyond
 * float32's errors: the bound of the unfused kernels, which round the normalized
 * probabilities to bfloat16 (the policy's rounding of a matmul's inputs) before P V.
 *
 * The TF32 kernel's layout (the bf16 kernel's: with it, below). A block: 4 warps, 16 query
 * rows each (CV_ATT_TC_BM = 64 rows of one batch z). Q stays in registers as A fragments
 * (raw floats, split per k-step). Keys in tiles of BN (32 where both head dims are at most
 * 64, else 16) in shared memory, filled by cp.async (16-byte
 * chunks where the operand's rows are contiguous and 16-byte aligned, else 4-byte ones; zero
 * past s and past the head dims; a 2-byte element by plain loads, 8 bytes where rows are
 * contiguous and 8-byte aligned, converted and stored, as cp.async cannot convert): V's tile is loaded while S = Q Kᵀ is computed, the next K
 * tile while O += P V is. K rows are DK + 8 floats apart (the float2 fragment loads hit
 * every bank once per half-warp), V rows DV + 4 (the two 4-byte loads hit 32 banks).
 *
 * Fragments (lane = 4g + t): within a k-step the mma's k-columns (t, t + 4) are taken as
 * the operands' columns (2t, 2t + 1) on both sides (the same permutation of k leaves the
 * sum unchanged): Q's two values and K's two are adjacent, and S's accumulator (rows g,
 * g + 8; keys 2t, 2t + 1 of each 8) is P's A fragment as it stands, the keys (2t, 2t + 1)
 * being V's rows. The online softmax runs on the accumulator: a row's max over its quad
 * (2 shuffles), the sum kept per lane and added over the quad at the end. The output goes
 * out through shared memory, a row at a time from consecutive lanes (one call site of epi).
 */
#ifndef CUVIL_AOT_CUDA_ATTENTION_TC_H
#define CUVIL_AOT_CUDA_ATTENTION_TC_H

#include "cuvil_aot/cuda_gemm_tc.h"

#define CV_ATT_TC_WARPS 4
#define CV_ATT_TC_BM (16 * CV_ATT_TC_WARPS) /* query rows per block */
#define CV_ATT_TC_THREADS (32 * CV_ATT_TC_WARPS)

/* DK, DV: the head dims rounded up to a multiple of 32 (at most 128). */
template <int DK, int DV>
struct cv_att_tc_cfg {
    static_assert(DK % 32 == 0 && DV % 32 == 0 && DK <= 128 && DV <= 128, "head dims");
    static constexpr int BN = DK <= 64 && DV <= 64 ? 32 : 16; /* keys per tile */
    static constexpr int QR = DK < 64 ? DK : 64;                /* Q's columns in registers */
    static constexpr int KS = DK + 8, VS = DV + 4, QS = DK - QR + 8; /* row strides (floats) */
    static constexpr int TILES = BN * (KS + VS);
    /* the keys split in two halves of the block's warps (cv_attention_tf32's split) where
     * both head dims are at most 64: the tiles of both halves, 35.8 KB */
    static constexpr int SPLIT = DK <= 64 && DV <= 64 ? 2 : 1;
    static constexpr int QSM = DK > QR ? CV_ATT_TC_BM * QS : 0; /* Q's other columns */
    static constexpr int STAGE = CV_ATT_TC_WARPS * 16 * VS;     /* the output's staging */
    static constexpr int FLOATS = SPLIT * TILES + QSM > STAGE ? SPLIT * TILES + QSM : STAGE;
};

/* Whether operand x of elements T can be read in chunks of 4 elements (16 bytes of
 * float): contiguous rows, every row of every batch aligned to a chunk. */
template <class T>
CV_DEV bool cv_att_vec(const cv_att_in &x) {
    return x.cs == 1 && (reinterpret_cast<uintptr_t>(x.p) & (4 * sizeof(T) - 1)) == 0 &&
           (x.rs & 3) == 0 && (x.sb & 3) == 0 && (x.nh == 1 || (x.sh & 3) == 0);
}

/* Four elements global -> shared, the first n of them (zero past; src is not read where n
 * is 0): float by a 16-byte cp.async; a 2-byte T by one 8-byte load where n is 4 (src a
 * chunk, cv_att_vec), converted. */
CV_DEV void cv_att_chunk(float *dst, const float *src, int n) { cv_cp_async16(dst, src, 4 * n); }
template <class T>
struct alignas(4 * sizeof(T)) cv_att_quad {
    T v[4];
};
template <class T>
CV_DEV void cv_att_chunk(float *dst, const T *src, int n) {
    if (n == 4) {
        const cv_att_quad<T> x = *reinterpret_cast<const cv_att_quad<T> *>(src);
#pragma unroll
        for (int i = 0; i < 4; i++) dst[i] = (float)x.v[i];
    } else {
#pragma unroll
        for (int i = 0; i < 4; i++) dst[i] = i < n ? (float)src[i] : 0.0f;
    }
}


/* Rows key0 .. key0 + BN of a batch's operand (base: cv_att_batch), columns 0 .. D of
 * which d exist, into dst (rows STRIDE apart) as floats; zero past n keys and d columns. */
template <int D, int STRIDE, int BN, class T>
CV_DEV void cv_att_tc_load(float *dst, const T *base, const cv_att_in &x, int64_t key0,
                           int64_t n, int d, bool vec) {
    const int tid = threadIdx.x;
    if (vec) {
        constexpr int CH = D / 4; /* 16-byte chunks a row */
        static_assert(BN * CH % CV_ATT_TC_THREADS == 0, "whole rounds");
#pragma unroll
        for (int it = 0; it < BN * CH / CV_ATT_TC_THREADS; it++) {
            const int i = tid + it * CV_ATT_TC_THREADS, j = i / CH, c = (i % CH) * 4;
            const int64_t key = key0 + j;
            const int left = d - c;
            const int got = key < n && left > 0 ? (left >= 4 ? 4 : left) : 0;
            cv_att_chunk(dst + j * STRIDE + c, got ? base + key * x.rs + c : base, got);
        }
    } else {
#pragma unroll 4
        for (int it = 0; it < BN * D / CV_ATT_TC_THREADS; it++) {
            const int i = tid + it * CV_ATT_TC_THREADS, j = i / D, c = i % D;
            const int64_t key = key0 + j;
            const bool ok = key < n && c < d;
            cv_att_elem(dst + j * STRIDE + c, ok ? base + key * x.rs + c * x.cs : base, ok);
        }
    }
}

/* big + small TF32 parts of x (X3), or its TF32 rounding alone. */
template <bool X3>
CV_DEV void cv_att_split(float x, uint32_t &big, uint32_t &small) {
    if (X3)
        cv_split_tf32(x, big, small);
    else
        big = cv_tf32(x), small = 0;
}

/* acc += a b (16 x 8 x 8), a and b as split parts: 3xTF32 or one product. */
template <bool X3>
CV_DEV void cv_att_mma(float acc[4], const uint32_t ab[4], const uint32_t as[4],
                       const uint32_t bb[2], const uint32_t bs[2]) {
    float part[4] = {0, 0, 0, 0};
    if (X3) {
        cv_mma_tf32(part, as, bb); /* the small terms first */
        cv_mma_tf32(part, ab, bs);
    }
    cv_mma_tf32(part, ab, bb);
#pragma unroll
    for (int e = 0; e < 4; e++) acc[e] += part[e];
}

/* O / l out (l summed over the quad first) through shared memory, 16 rows of DV + 4
 * floats a warp over the tiles' memory, a row at a time from consecutive lanes (one call
 * site of epi): the warp's rows r0 .. r0 + 16 below t (a split's second half passes t 0:
 * it stores nothing, and a branch around the stores instead took 36 more registers). */
template <int DV, class Epi>
CV_DEV void cv_att_tc_out(const float (&o)[DV / 8][4], float l[2], float *sm, const Epi &epi,
                          int64_t z, int64_t r0, int64_t t, int dv) {
    constexpr int SS = DV + 4;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
    }
    __syncthreads(); /* the last V tile is read */
    float *mine = sm + warp * 16 * SS;
#pragma unroll
    for (int nt = 0; nt < DV / 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            mine[(g + (e >> 1) * 8) * SS + nt * 8 + 2 * tq + (e & 1)] = o[nt][e] / l[e >> 1];
    __syncwarp();
    const auto out = cv_att_bind(epi, z);
#pragma unroll 1
    for (int r = 0; r < 16; r++) {
        const int64_t row = r0 + r;
        if (row >= t) break;
#pragma unroll 1
        for (int c = lane; c < dv; c += 32) out(row, (int64_t)c, mine[r * SS + c]);
    }
}

/* One tile's step of the online softmax on S's accumulators sc (rows rg and rg + 8; keys
 * key0 + 8 nt + 2t and + 1): the scores (-inf past t rows and s keys), each row's max over
 * its quad, m and l (this lane's part) updated; sc becomes P (float32, unnormalized) and
 * alpha the factor O is rescaled by. Rows of only -inf: see cuda_attention.h. */
template <int NT, class Score>
CV_DEV void cv_att_online(float (&sc)[NT][4], float m[2], float l[2], float alpha[2],
                          const Score &score, int64_t z, int64_t rg, int64_t key0, int tq,
                          int64_t t, int64_t s) {
    float mx[2] = {CV_ATT_NEG_INF, CV_ATT_NEG_INF};
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int64_t row = rg + (e >> 1) * 8, key = key0 + nt * 8 + 2 * tq + (e & 1);
            /* called everywhere (at the nearest row and key that exist), so its
             * index arithmetic on z is one computation, not one a branch */
            const float x0 = score(z, row < t ? row : t - 1, key < s ? key : s - 1,
                                   sc[nt][e]);
            const float x = row < t && key < s ? x0 : CV_ATT_NEG_INF;
            sc[nt][e] = x;
            mx[e >> 1] = fmaxf(mx[e >> 1], x);
        }
    float mu[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
        const float mnew = fmaxf(m[h], mx[h]);
        mu[h] = mnew == CV_ATT_NEG_INF ? 0.0f : mnew;
        alpha[h] = m[h] == CV_ATT_NEG_INF ? 0.0f : expf(m[h] - mu[h]);
        m[h] = mnew;
        l[h] *= alpha[h];
    }
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            sc[nt][e] = expf(sc[nt][e] - mu[e >> 1]); /* 0 past s: x is -inf */
            l[e >> 1] += sc[nt][e];
        }
}

/* The partial results of the key halves of a split (cv_attention_tf32) into the first
 * half's warps: each row's max m, the lanes' sums l and O, rescaled to the larger max and
 * added (a row of only -inf in both: l and O stay 0, and O / l is NaN as unsplit). The
 * second half's lanes hand theirs over through shared memory x, a lane's at the same
 * place as its partner's. */
template <int DV>
CV_DEV void cv_att_tc_merge(float (&o)[DV / 8][4], float m[2], float l[2], float *x, int rw,
                            int half) {
    constexpr int PER = DV / 2 + 4; /* floats a lane: O's DV / 8 x 4, m and l */
    float *mine = x + (rw * 32 + (threadIdx.x & 31)) * PER;
    __syncthreads(); /* the last tiles are read */
    if (half == 1) {
#pragma unroll
        for (int nt = 0; nt < DV / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) mine[nt * 4 + e] = o[nt][e];
        mine[DV / 2] = m[0], mine[DV / 2 + 1] = m[1];
        mine[DV / 2 + 2] = l[0], mine[DV / 2 + 3] = l[1];
    }
    __syncthreads();
    if (half == 1) return;
    float a0[2], a1[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const float m1 = mine[DV / 2 + h], mx = fmaxf(m[h], m1);
        a0[h] = m[h] == CV_ATT_NEG_INF ? 0.0f : expf(m[h] - mx);
        a1[h] = m1 == CV_ATT_NEG_INF ? 0.0f : expf(m1 - mx);
        l[h] = l[h] * a0[h] + mine[DV / 2 + 2 + h] * a1[h];
    }
#pragma unroll
    for (int nt = 0; nt < DV / 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            o[nt][e] = o[nt][e] * a0[e >> 1] + mine[nt * 4 + e] * a1[e >> 1];
}

/* The TF32 kernel: float operands, or 2-byte ones other than all three bfloat16.
 * split 2 (the host's, where the blocks would leave most SMs idle: GPT-2 at 1 x 128 ran
 * 24 blocks on 132 SMs, each walking all 128 keys): the block's warps are two halves over
 * the same 32 query rows, half h taking the keys of tile 2 j + h of each pair of tiles
 * (loaded together), their results merged at the end (cv_att_tc_merge). Builds with a head
 * dim over 64 take split 1 whatever the host says (the tiles' shared memory); the grid
 * then has blocks past t, which store nothing. */
template <int DK, int DV, bool X3QK, bool X3PV, int J, class TQ, class TK, class TV,
          class Score, class Epi>
CV_DEV void cv_attention_tf32(const cv_att_in &q, const cv_att_in &k, const cv_att_in &v,
                              int64_t nz, int64_t t, int64_t s, int dk, int dv,
                              const Score &score, const Epi &epi, float *sm) {
    typedef cv_att_tc_cfg<DK, DV> C;
    constexpr int BN = C::BN, KS = C::KS, VS = C::VS, QR = C::QR, QS = C::QS;
    static_assert(J == 1 || C::SPLIT == 2, "a split where both halves' tiles fit");
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, tq = lane & 3;
    const int wr = CV_ATT_TC_WARPS / J, rw = warp % wr, half = warp / wr; /* row warps */
    const int rows = 16 * wr;
    float *const sk = sm + half * BN * KS, *const sv = sm + J * BN * KS + half * BN * VS;
    float *const sq = sm + C::SPLIT * C::TILES;
    const int64_t row0 = (int64_t)blockIdx.x * rows, rg = row0 + rw * 16 + g;
    const bool kvec = cv_att_vec<TK>(k), vvec = cv_att_vec<TV>(v);
    const int64_t steps = (s + J * BN - 1) / (J * BN); /* rounds of J tiles */
    for (int64_t z = blockIdx.y; z < nz; z += gridDim.y) {
        const TQ *qp = cv_att_batch<TQ>(q, z);
        const TK *kp = cv_att_batch<TK>(k, z);
        const TV *vp = cv_att_batch<TV>(v, z);
        /* Q's A fragments: (rg, 2t), (rg + 8, 2t), (rg, 2t + 1), (rg + 8, 2t + 1) of each 8 */
        float qf[QR / 8][4];
#pragma unroll
        for (int ks = 0; ks < QR / 8; ks++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int64_t row = rg + (e & 1) * 8;
                const int c = ks * 8 + 2 * tq + (e >> 1);
                qf[ks][e] = row < t && c < dk ? (float)qp[row * q.rs + c * q.cs] : 0.0f;
            }
        float m[2] = {CV_ATT_NEG_INF, CV_ATT_NEG_INF}, l[2] = {0.0f, 0.0f}, o[DV / 8][4];
#pragma unroll
        for (int nt = 0; nt < DV / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) o[nt][e] = 0.0f;
        __syncthreads(); /* the previous batch's output staging is read */
        constexpr int QX = DK > QR ? DK - QR : 1; /* Q's columns in shared memory */
        if (C::QSM) /* Q's columns QR .. DK, read after the first tile's barrier */
            for (int i = tid; i < CV_ATT_TC_BM * QX; i += CV_ATT_TC_THREADS) {
                const int r = i / QX, c = QR + i % QX;
                const int64_t row = row0 + r;
                sq[r * QS + c - QR] = row < t && c < dk ? (float)qp[row * q.rs + c * q.cs] : 0.0f;
            }
        /* the J tiles of a round, half h's keys from h * BN */
        const auto load_k = [&](int64_t key0) {
            cv_att_tc_load<DK, KS, J * BN>(sm, kp, k, key0, s, dk, kvec);
        };
        const auto load_v = [&](int64_t key0) {
            cv_att_tc_load<DV, VS, J * BN>(sm + J * BN * KS, vp, v, key0, s, dv, vvec);
        };
        load_k(0);
        cv_cp_async_commit();
        for (int64_t jt = 0; jt < steps; jt++) {
            const int64_t round0 = jt * J * BN, key0 = round0 + half * BN;
            __syncthreads(); /* the previous round's V is read */
            load_v(round0);
            cv_cp_async_commit();
            cv_cp_async_wait<1>(); /* K's tiles have landed (this thread's part) */
            __syncthreads();       /* ... everyone's */
            float sc[BN / 8][4];   /* S, then the scores, then P */
#pragma unroll
            for (int nt = 0; nt < BN / 8; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) sc[nt][e] = 0.0f;
#pragma unroll
            for (int ks = 0; ks < DK / 8; ks++) {
                if (ks * 8 >= dk) break; /* zeros past dk (a bucket wider than the dims) */
                float qa[4];
                if (ks < QR / 8) {
#pragma unroll
                    for (int e = 0; e < 4; e++) qa[e] = qf[ks < QR / 8 ? ks : 0][e];
                } else {
                    const float *qr = sq + (rw * 16 + g) * QS + ks * 8 - QR + 2 * tq;
                    const float2 lo = *reinterpret_cast<const float2 *>(qr);
                    const float2 hi = *reinterpret_cast<const float2 *>(qr + 8 * QS);
                    qa[0] = lo.x, qa[1] = hi.x, qa[2] = lo.y, qa[3] = hi.y;
                }
                uint32_t ab[4], as[4];
#pragma unroll
                for (int e = 0; e < 4; e++) cv_att_split<X3QK>(qa[e], ab[e], as[e]);
#pragma unroll
                for (int nt = 0; nt < BN / 8; nt++) {
                    const float2 kv =
                        *reinterpret_cast<const float2 *>(&sk[(nt * 8 + g) * KS + ks * 8 + 2 * tq]);
                    uint32_t bb[2], bs[2];
                    cv_att_split<X3QK>(kv.x, bb[0], bs[0]);
                    cv_att_split<X3QK>(kv.y, bb[1], bs[1]);
                    cv_att_mma<X3QK>(sc[nt], ab, as, bb, bs);
                }
            }
            float alpha[2]; /* a tile past s: all -inf, P 0, m, l and O as they were */
            cv_att_online(sc, m, l, alpha, score, z, rg, key0, tq, t, s);
#pragma unroll
            for (int nt = 0; nt < DV / 8; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) o[nt][e] *= alpha[e >> 1];
            __syncthreads(); /* K's tiles are read */
            if (jt + 1 < steps) load_k(round0 + J * BN);
            cv_cp_async_commit(); /* an empty group at the end keeps the count */
            cv_cp_async_wait<1>(); /* V's tiles have landed */
            __syncthreads();
            /* O += P V: P's A fragment is S's accumulator (keys 2t, 2t + 1 as k t, t + 4) */
#pragma unroll
            for (int kk = 0; kk < BN / 8; kk++) {
                uint32_t ab[4], as[4];
                cv_att_split<X3PV>(sc[kk][0], ab[0], as[0]); /* (g, key 2t) */
                cv_att_split<X3PV>(sc[kk][2], ab[1], as[1]); /* (g + 8, key 2t) */
                cv_att_split<X3PV>(sc[kk][1], ab[2], as[2]); /* (g, key 2t + 1) */
                cv_att_split<X3PV>(sc[kk][3], ab[3], as[3]); /* (g + 8, key 2t + 1) */
                const float *v0 = sv + (kk * 8 + 2 * tq) * VS + g;
#pragma unroll
                for (int nt = 0; nt < DV / 8; nt++) {
                    if (nt * 8 >= dv) break;
                    uint32_t bb[2], bs[2];
                    cv_att_split<X3PV>(v0[nt * 8], bb[0], bs[0]);      /* (key 2t, g) */
                    cv_att_split<X3PV>(v0[nt * 8 + VS], bb[1], bs[1]); /* (key 2t + 1, g) */
                    cv_att_mma<X3PV>(o[nt], ab, as, bb, bs);
                }
            }
        }
        cv_cp_async_wait<0>();
        if constexpr (J == 2) cv_att_tc_merge<DV>(o, m, l, sm, rw, half);
        cv_att_tc_out<DV>(o, l, sm, epi, z, row0 + rw * 16, half == 0 ? t : 0, dv);
    }
}

#endif
