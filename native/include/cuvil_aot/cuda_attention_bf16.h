/* CUDA C++, for nvcc only. The fused attention's bfloat16 kernel (cv_attention_bf16, the
 * semantics in cuda_attention_tc.h's comment) and cv_attention_tc, which picks it or the
 * TF32 kernel by the operands' element types. */
#ifndef CUVIL_AOT_CUDA_ATTENTION_BF16_H
#define CUVIL_AOT_CUDA_ATTENTION_BF16_H

#include "cuvil_aot/cuda_attention_tc.h"

/* --- the bfloat16 kernel ------------------------------------------------------------- */
/* As the TF32 kernel (the same block, tiles of keys, pipeline, online softmax and output),
 * with bfloat16 tiles: K's rows DK + 8 elements apart and V's DV + 8, filled by 16-byte
 * cp.async (8 elements) where the operand's rows are contiguous and 16-byte aligned, else
 * element by element; keys per tile 64 where both head dims are at most 64, else 32.
 * Fragments, the PTX ISA's m16n8k16 ones (lane = 4g + t, two elements adjacent along k a
 * register): Q's A fragment (rows g, g + 8; dims 2t, 2t + 8 of each 16) built once from
 * global memory; K's B fragment (dims 2t, 2t + 8; key g) is its row pair as stored, read
 * by ldmatrix; V's (keys 2t, 2t + 8; dim g) is a column pair, read by ldmatrix .trans; S's
 * accumulators (rows g, g + 8; keys 2t, 2t + 1 of each 8) of two key tiles are P's A
 * fragment for their 16 keys (FlashAttention-2's register reuse), rounded in pairs. */

/* Its tiles: keys per tile (a multiple of 16, P V's k-step) and row strides in elements,
 * 16 bytes of padding a row, so that ldmatrix's eight rows of a matrix hit distinct banks
 * and stay 16-byte aligned for cp.async. The output's staging (DV + 4 floats a row, as the
 * TF32 kernel's) reuses the tiles' memory: at most 33.8 KB (DV 128). */
template <int DK, int DV>
struct cv_att_bf_cfg {
    static_assert(DK % 32 == 0 && DV % 32 == 0 && DK <= 128 && DV <= 128, "head dims");
    static constexpr int BN = DK <= 64 && DV <= 64 ? 64 : 32;
    static constexpr int KS = DK + 8, VS = DV + 8;
    static constexpr int TILES = BN * (KS + VS);                   /* bfloat16 elements */
    static constexpr int STAGE = CV_ATT_TC_WARPS * 16 * (DV + 4); /* floats */
    static constexpr int FLOATS = TILES / 2 > STAGE ? TILES / 2 : STAGE;
};

/* Whether bfloat16 operand x can be read in 16-byte chunks (8 elements): contiguous rows,
 * every row of every batch aligned to a chunk. */
CV_DEV bool cv_att_vec8(const cv_att_in &x) {
    return x.cs == 1 && (reinterpret_cast<uintptr_t>(x.p) & 15) == 0 && (x.rs & 7) == 0 &&
           (x.sb & 7) == 0 && (x.nh == 1 || (x.sh & 7) == 0);
}

/* Rows key0 .. key0 + BN of a batch's bfloat16 operand (base: cv_att_batch), columns
 * 0 .. D of which d exist, into dst (rows STRIDE apart) as they are; zero past n keys and
 * d columns: by cp.async of 8 elements where vec (cv_att_vec8), else element by element. */
template <int D, int STRIDE, int BN>
CV_DEV void cv_att_bf_load(cv_bf16 *dst, const cv_bf16 *base, const cv_att_in &x,
                           int64_t key0, int64_t n, int d, bool vec) {
    const int tid = threadIdx.x;
    if (vec) {
        constexpr int CH = D / 8; /* 16-byte chunks a row */
        static_assert(BN * CH % CV_ATT_TC_THREADS == 0, "whole rounds");
#pragma unroll
        for (int it = 0; it < BN * CH / CV_ATT_TC_THREADS; it++) {
            const int i = tid + it * CV_ATT_TC_THREADS, j = i / CH, c = (i % CH) * 8;
            const int64_t key = key0 + j;
            const int left = d - c;
            const int got = key < n && left > 0 ? (left >= 8 ? 8 : left) : 0;
            cv_cp_async16(dst + j * STRIDE + c, got ? base + key * x.rs + c : base, 2 * got);
        }
    } else {
#pragma unroll 4
        for (int it = 0; it < BN * D / CV_ATT_TC_THREADS; it++) {
            const int i = tid + it * CV_ATT_TC_THREADS, j = i / D, c = i % D;
            const int64_t key = key0 + j;
            dst[j * STRIDE + c] =
                key < n && c < d ? base[key * x.rs + c * x.cs] : cv_bf16(0.0f);
        }
    }
}

/* lo and hi rounded to bfloat16 (to nearest, ties to even), packed with lo in the low half:
 * an mma register of two elements adjacent along k. */
CV_DEV uint32_t cv_att_bf2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
#else
    return (uint32_t)cv_bf16(lo).bits | (uint32_t)cv_bf16(hi).bits << 16;
#endif
}

/* Q's elements (row, c) and (row, c + 1) packed as bfloat16 bits, zero outside t rows and
 * d columns. */
CV_DEV uint32_t cv_att_bf_q(const cv_bf16 *qp, const cv_att_in &q, int64_t row, int c,
                            int64_t t, int d) {
    const uint32_t lo = row < t && c < d ? qp[row * q.rs + c * q.cs].bits : 0u;
    const uint32_t hi = row < t && c + 1 < d ? qp[row * q.rs + (c + 1) * q.cs].bits : 0u;
    return lo | hi << 16;
}

/* Q, K and V all bfloat16: both products mma.sync m16n8k16 bf16 with float32 accumulators.
 * Q stays in registers as A fragments; K and V tiles as bfloat16 in shared memory, their B
 * fragments read by ldmatrix (K's as it is stored, [key][dim]; V's transposed); S's
 * accumulators of key tiles 2kk and 2kk + 1 are, rounded to bfloat16 in pairs, P's A
 * fragment for keys 16kk .. 16kk + 16 (the C layout's (g, 2t), (g, 2t + 1) being A's). */
template <int DK, int DV, class Score, class Epi>
CV_DEV void cv_attention_bf16(const cv_att_in &q, const cv_att_in &k, const cv_att_in &v,
                              int64_t nz, int64_t t, int64_t s, int dk, int dv,
                              const Score &score, const Epi &epi) {
    typedef cv_att_bf_cfg<DK, DV> C;
    constexpr int BN = C::BN, KS = C::KS, VS = C::VS;
    __shared__ __align__(16) float sm[C::FLOATS];
    cv_bf16 *const sk = reinterpret_cast<cv_bf16 *>(sm), *const sv = sk + BN * KS;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, tq = lane & 3;
    const int64_t row0 = (int64_t)blockIdx.x * CV_ATT_TC_BM, rg = row0 + warp * 16 + (lane >> 2);
    const bool kvec = cv_att_vec8(k), vvec = cv_att_vec8(v);
    const int64_t ntiles = (s + BN - 1) / BN;
    /* ldmatrix's row addresses, lane l giving row l % 8 of matrix l / 8: K's matrices are
     * (keys +0, dims +0), (+0, +8), (+8, +0), (+8, +8), so registers 0, 1 are key tile
     * 2np's B fragment and 2, 3 tile 2np + 1's; V's (keys +0, dims +0), (+8, +0), (+0, +8),
     * (+8, +8), so 0, 1 are dim tile nt's and 2, 3 dim tile nt + 1's */
    const int krow = ((lane >> 4) * 8 + (lane & 7)) * KS + ((lane >> 3) & 1) * 8;
    const int vrow = (((lane >> 3) & 1) * 8 + (lane & 7)) * VS + (lane >> 4) * 8;
    for (int64_t z = blockIdx.y; z < nz; z += gridDim.y) {
        const cv_bf16 *qp = cv_att_batch<cv_bf16>(q, z);
        const cv_bf16 *kp = cv_att_batch<cv_bf16>(k, z);
        const cv_bf16 *vp = cv_att_batch<cv_bf16>(v, z);
        /* Q's A fragments: (rg, 2t), (rg + 8, 2t), (rg, 2t + 8), (rg + 8, 2t + 8) of each 16 */
        uint32_t qf[DK / 16][4];
#pragma unroll
        for (int ks = 0; ks < DK / 16; ks++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                qf[ks][e] = cv_att_bf_q(qp, q, rg + (e & 1) * 8, ks * 16 + (e >> 1) * 8 + 2 * tq,
                                        t, dk);
        float m[2] = {CV_ATT_NEG_INF, CV_ATT_NEG_INF}, l[2] = {0.0f, 0.0f}, o[DV / 8][4];
#pragma unroll
        for (int nt = 0; nt < DV / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) o[nt][e] = 0.0f;
        __syncthreads(); /* the previous batch's output staging is read */
        cv_att_bf_load<DK, KS, BN>(sk, kp, k, 0, s, dk, kvec);
        cv_cp_async_commit();
        for (int64_t jt = 0; jt < ntiles; jt++) {
            const int64_t key0 = jt * BN;
            __syncthreads(); /* the previous tile's V is read */
            cv_att_bf_load<DV, VS, BN>(sv, vp, v, key0, s, dv, vvec);
            cv_cp_async_commit();
            cv_cp_async_wait<1>(); /* K's tile has landed (this thread's part) */
            __syncthreads();       /* ... everyone's */
            float sc[BN / 8][4];   /* S, then the scores, then P */
#pragma unroll
            for (int nt = 0; nt < BN / 8; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) sc[nt][e] = 0.0f;
#pragma unroll
            for (int ks = 0; ks < DK / 16; ks++) {
                if (ks * 16 >= dk) break; /* zeros past dk (a bucket wider than the dims) */
#pragma unroll
                for (int np = 0; np < BN / 16; np++) {
                    uint32_t b[4];
                    cv_ldsm4<false>(b, sk + np * 16 * KS + ks * 16 + krow);
                    cv_mma_bf16(sc[2 * np], qf[ks], b);
                    cv_mma_bf16(sc[2 * np + 1], qf[ks], b + 2);
                }
            }
            float alpha[2];
            cv_att_online(sc, m, l, alpha, score, z, rg, key0, tq, t, s);
#pragma unroll
            for (int nt = 0; nt < DV / 8; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) o[nt][e] *= alpha[e >> 1];
            __syncthreads(); /* K's tile is read */
            if (jt + 1 < ntiles) cv_att_bf_load<DK, KS, BN>(sk, kp, k, key0 + BN, s, dk, kvec);
            cv_cp_async_commit(); /* an empty group at the end keeps the count */
            cv_cp_async_wait<1>(); /* V's tile has landed */
            __syncthreads();
            /* O += P V, 16 keys a step: P's A fragment from S's accumulators */
#pragma unroll
            for (int kk = 0; kk < BN / 16; kk++) {
                const float(&lo)[4] = sc[2 * kk], (&hi)[4] = sc[2 * kk + 1]; /* keys +0, +8 */
                const uint32_t pa[4] = {cv_att_bf2(lo[0], lo[1]), cv_att_bf2(lo[2], lo[3]),
                                        cv_att_bf2(hi[0], hi[1]), cv_att_bf2(hi[2], hi[3])};
#pragma unroll
                for (int nt = 0; nt < DV / 8; nt += 2) {
                    if (nt * 8 >= dv) break;
                    uint32_t b[4];
                    cv_ldsm4<true>(b, sv + kk * 16 * VS + nt * 8 + vrow);
                    cv_mma_bf16(o[nt], pa, b);
                    cv_mma_bf16(o[nt + 1], pa, b + 2);
                }
            }
        }
        cv_cp_async_wait<0>();
        cv_att_tc_out<DV>(o, l, sm, epi, z, row0 + (threadIdx.x >> 5) * 16, t, dv);
    }
}

/* Whether T is bfloat16: the three operands' elements choose the kernel at compile time. */
template <class T>
struct cv_att_is_bf16 {
    static constexpr bool value = false;
};
template <>
struct cv_att_is_bf16<cv_bf16> {
    static constexpr bool value = true;
};

template <int DK, int DV, bool X3QK, bool X3PV, class TQ = float, class TK = float,
          class TV = float, class Score, class Epi>
CV_DEV void cv_attention_tc(const cv_att_in &q, const cv_att_in &k, const cv_att_in &v,
                            int64_t nz, int64_t t, int64_t s, int dk, int dv, int split,
                            const Score &score, const Epi &epi, float *smem) {
    if constexpr (cv_att_is_bf16<TQ>::value && cv_att_is_bf16<TK>::value &&
                  cv_att_is_bf16<TV>::value)
        cv_attention_bf16<DK, DV>(q, k, v, nz, t, s, dk, dv, score, epi);
    else if (cv_att_tc_cfg<DK, DV>::SPLIT == 2 && split == 2)
        cv_attention_tf32<DK, DV, X3QK, X3PV, cv_att_tc_cfg<DK, DV>::SPLIT, TQ, TK, TV>(
            q, k, v, nz, t, s, dk, dv, score, epi, smem); /* FLOATS of them */
    else
        cv_attention_tf32<DK, DV, X3QK, X3PV, 1, TQ, TK, TV>(q, k, v, nz, t, s, dk, dv, score, epi,
                                                             smem);
}

#endif
