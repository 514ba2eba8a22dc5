/* CUDA C++, for nvcc only (included by cuda_attention.h, whose helpers it uses). The
 * fused attention at a decode step's few query rows (t <= CV_ATT_RW, both head dims at
 * most 64): one block of CV_ATT_WARPS warps per batch·head, each warp taking every
 * CV_ATT_WARPS-th tile of CV_ATT_BN keys for all t rows, so the keys are walked by the
 * four warps at once. The FMA kernel (cuda_attention.h) walks them all in every warp, for
 * its own rows: at one query row three of its warps compute rows that do not exist, and
 * the tiles go by one after another. Unfused, a decode step's attention was two GEMVs and
 * a softmax, each a launch and a round trip of the scores through memory (GPT-2 at 8
 * sequences of 256 keys on an H100: 35 us in its two GEMVs, 2026-12-07c).
 *
 * In a warp's tile lane j scores key j from the warp's own copy of K's tile in shared
 * memory (copied there by cp.async a row at a time across the lanes: coalesced through
 * any strides), then the online softmax of cv_attention_fma; V's rows in registers, lane
 * l holding columns l and l + 32. A tile's K and V rows are in flight at once, so a tile
 * costs one round trip to memory. The warps' running
 * maxima, sums and outputs meet in shared memory at the end; warp r combines row r. A
 * warp that saw no keys has max -inf and sum 0, so it weighs 0; a row whose every score is
 * -inf sums to 0 and its 0 / 0 is NaN, as NumPy's. */
#ifndef CUVIL_AOT_CUDA_ATTENTION_DECODE_H
#define CUVIL_AOT_CUDA_ATTENTION_DECODE_H

#define CV_ATT_DEC_D 64 /* head dims up to 64 */

struct cv_att_dec_smem {
    float q[CV_ATT_RW][CV_ATT_DEC_D];
    union {
        float k[CV_ATT_WARPS][CV_ATT_BN][CV_ATT_DEC_D + 1]; /* +1: lane j's row in its bank */
        struct { /* after the keys: each warp's state per row */
            float m[CV_ATT_WARPS][CV_ATT_RW], l[CV_ATT_WARPS][CV_ATT_RW];
            float o[CV_ATT_WARPS][CV_ATT_RW][CV_ATT_DEC_D];
        } part;
    };
};

template <class TQ, class TK, class TV, class Score, class Epi>
CV_DEV void cv_attention_decode(const cv_att_in &q, const cv_att_in &k, const cv_att_in &v,
                                int64_t nz, int64_t t, int64_t s, int64_t dk_, int64_t dv,
                                const Score &score, const Epi &epi, float *smem) {
    static_assert(CV_ATT_RW == CV_ATT_WARPS, "warp r combines row r");
    constexpr int D = CV_ATT_DEC_D, RW = CV_ATT_RW, BN = CV_ATT_BN;
    cv_att_dec_smem &sm = *reinterpret_cast<cv_att_dec_smem *>(smem);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int dk = (int)dk_, dd = (int)dv;
    for (int64_t z = blockIdx.y; z < nz; z += gridDim.y) {
        const TQ *qp = cv_att_batch<TQ>(q, z);
        const TK *kp = cv_att_batch<TK>(k, z);
        const TV *vp = cv_att_batch<TV>(v, z);
        __syncthreads(); /* the previous batch's parts are read */
        for (int i = tid; i < RW * D; i += CV_ATT_THREADS) {
            const int r = i / D, c = i % D;
            sm.q[r][c] = r < t && c < dk ? (float)qp[r * q.rs + c * q.cs] : 0.0f;
        }
        __syncthreads();
        float m[RW], l[RW], o[RW][2];
#pragma unroll
        for (int r = 0; r < RW; r++) m[r] = CV_ATT_NEG_INF, l[r] = 0.0f, o[r][0] = o[r][1] = 0.0f;
        for (int64_t key0 = (int64_t)warp * BN; key0 < s; key0 += (int64_t)CV_ATT_WARPS * BN) {
            __syncwarp(); /* the warp's previous tile is read */
            const int64_t left = s - key0;
            const int nj = left < BN ? (int)left : BN;
            /* K's tile by cp.async (float; other elements through registers), V's rows
             * into registers, both in flight at once; running row pointers, since 32
             * rows' 64-bit addresses would each hold registers */
            const TK *krow = kp + key0 * k.rs + lane * k.cs;
            const TV *vrow = vp + key0 * v.rs + lane * v.cs;
            const int64_t k32 = 32 * k.cs, v32 = 32 * v.cs;
#pragma unroll 8
            for (int j = 0; j < BN; j++, krow += k.rs)
#pragma unroll
                for (int h = 0; h < D / 32; h++) { /* lanes along a row: coalesced */
                    const bool in = j < nj && lane + 32 * h < dk;
                    cv_att_elem(&sm.k[warp][j][lane + 32 * h], in ? krow + h * k32 : kp, in);
                }
            cv_cp_async_commit();
            float vr[BN][2];
#pragma unroll
            for (int j = 0; j < BN; j++, vrow += v.rs)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    vr[j][h] = j < nj && lane + 32 * h < dd ? (float)vrow[h * v32] : 0.0f;
            cv_cp_async_wait<0>();
            __syncwarp();
            const int valid = lane < nj;
            float dot[RW];
#pragma unroll
            for (int r = 0; r < RW; r++) dot[r] = 0.0f;
            for (int c = 0; c < dk; c += 4) { /* Q rows zero past dk: whole float4s */
                const float k0 = sm.k[warp][lane][c], k1 = sm.k[warp][lane][c + 1],
                            k2 = sm.k[warp][lane][c + 2], k3 = sm.k[warp][lane][c + 3];
#pragma unroll
                for (int r = 0; r < RW; r++) {
                    const float4 q4 = *reinterpret_cast<const float4 *>(&sm.q[r][c]);
                    dot[r] = fmaf(q4.x, k0, fmaf(q4.y, k1, fmaf(q4.z, k2, fmaf(q4.w, k3, dot[r]))));
                }
            }
            float p[RW];
#pragma unroll
            for (int r = 0; r < RW; r++) { /* the score as cv_attention_fma's, which says why */
                const int64_t key = valid ? key0 + lane : s - 1;
                const float x0 = score(z, r < t ? (int64_t)r : t - 1, key, dot[r]);
                float alpha;
                p[r] = cv_att_lane_step(valid && r < t ? x0 : CV_ATT_NEG_INF, valid, m[r], l[r],
                                        alpha);
                o[r][0] *= alpha, o[r][1] *= alpha;
            }
#pragma unroll
            for (int j = 0; j < BN; j++)
#pragma unroll
                for (int r = 0; r < RW; r++) {
                    const float pj = __shfl_sync(0xffffffffu, p[r], j);
                    o[r][0] = fmaf(pj, vr[j][0], o[r][0]);
                    o[r][1] = fmaf(pj, vr[j][1], o[r][1]);
                }
        }
        __syncthreads(); /* every warp's keys are read: the parts take their place */
#pragma unroll
        for (int r = 0; r < RW; r++) {
            if (lane == 0) sm.part.m[warp][r] = m[r], sm.part.l[warp][r] = l[r];
            sm.part.o[warp][r][lane] = o[r][0];
            sm.part.o[warp][r][lane + 32] = o[r][1];
        }
        __syncthreads();
        const int r = warp;
        if (r < t) {
            float mx = CV_ATT_NEG_INF;
            for (int w = 0; w < CV_ATT_WARPS; w++) mx = fmaxf(mx, sm.part.m[w][r]);
            float sum = 0.0f, acc[2] = {0.0f, 0.0f};
            for (int w = 0; w < CV_ATT_WARPS; w++) {
                const float mw = sm.part.m[w][r];
                const float a = mw == CV_ATT_NEG_INF ? 0.0f : expf(mw - mx);
                sum += sm.part.l[w][r] * a;
                acc[0] += sm.part.o[w][r][lane] * a;
                acc[1] += sm.part.o[w][r][lane + 32] * a;
            }
            const auto out = cv_att_bind(epi, z);
#pragma unroll
            for (int h = 0; h < 2; h++)
                if (lane + 32 * h < dd) out((int64_t)r, (int64_t)(lane + 32 * h), acc[h] / sum);
        }
    }
}

/* The decode rows' entry point (the host's, where t <= CV_ATT_RW and both head dims are
 * at most 64, on every arch): an entry of its own, so that its registers are not the
 * other kernels' (inlined into cv_attention's entry, ptxas fit GPT-2's causal attention in
 * 168 registers with a 20-byte spill, where it had 175 and none). The template arguments
 * of cv_attention but the head dims, which are its own. */
template <bool X3QK, bool X3PV, class TQ = float, class TK = float, class TV = float,
          class Score, class Epi>
CV_DEV void cv_attention_rows(const cv_att_in &q, const cv_att_in &k, const cv_att_in &v,
                              int64_t nz, int64_t t, int64_t s, int64_t dk, int64_t dv, int,
                              const Score &score, const Epi &epi) {
    __shared__ __align__(16) float smem[sizeof(cv_att_dec_smem) / sizeof(float)];
    cv_attention_decode<TQ, TK, TV>(q, k, v, nz, t, s, dk, dv, score, epi, smem);
}

#endif
