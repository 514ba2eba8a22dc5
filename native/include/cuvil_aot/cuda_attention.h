/* CUDA C++, for nvcc only. Fused attention (flash-style): out = softmax(score(Q Kᵀ)) V
 * without the scores or the probabilities ever in global memory.
 *
 * cv_attention: a block owns CV_ATT_ROWS (64) query rows of one batch z (batch·head) and
 * walks every key in tiles: S = Q K_tileᵀ, each score through the generated `score`
 * functor (the scale, the mask: any elementwise expression the softmax's ROW group
 * computed from the matmul, loaded as that kernel would), then the online softmax (a
 * running max m and sum l per row; the accumulator rescaled by exp(m_old - m_new)), then
 * O += P V_tile. At the end O / l goes to `epi` (the second matmul's GEMM epilogue
 * functor: its store, strided as its buffer wants). On sm_80 and later both products run
 * on tensor cores in 3xTF32 (cuda_attention_tc.h); before, in float32 FMAs
 * (cv_attention_fma below, four of its 16-row blocks a block). Where a batch has at most
 * 16 query rows and head dims of at most 64, the FMA kernel on every arch, an entry point
 * of its own (cv_attention_few); at most 4 query rows, cv_attention_rows
 * (cuda_attention_decode.h), another.
 *
 * NumPy semantics: a row whose every score is -inf has max -inf, and NumPy's
 * exp(-inf - -inf) is NaN: here its sum stays 0 and 0 / 0 is NaN. Exponents are taken
 * against 0 while the running max is -inf, so a row's leading -inf tiles do not turn a row
 * with finite scores later into NaN. +inf or NaN scores give NaN rows, as NumPy's do.
 *
 * cv_attention_fma: warps: 4, each owning CV_ATT_RW rows; lane j scores key j of the tile,
 * and in the PV
 * product lane l owns output columns l, l + 32, l + 64, l + 96 (head dims up to 128:
 * the host checks both head dims <= CV_ATT_DMAX). Q, K and V are read through their strides
 * (cv_att_in: batch z = (b, h) with a stride each, so the heads split by reshape/transpose
 * of an argument are read in place, never copied). Static
 * shared memory 40.6 KB for head dims up to 128, 20.6 KB up to 64 (beside the tensor-core
 * kernel's 17.9 KB where both are compiled: under the 48 KB of a static allocation). */
#ifndef CUVIL_AOT_CUDA_ATTENTION_H
#define CUVIL_AOT_CUDA_ATTENTION_H

#include "cuvil_aot/cuda_gemm_tc.h" /* cp.async */
#include "cuvil_aot/cuda_kernel.h"

#define CV_ATT_DMAX 128
#define CV_ATT_RW 4                    /* query rows per warp */
#define CV_ATT_WARPS 4
#define CV_ATT_BM (CV_ATT_RW * CV_ATT_WARPS) /* query rows per block */
#define CV_ATT_BN 32                   /* keys per tile */
#define CV_ATT_THREADS (32 * CV_ATT_WARPS)
#ifndef CV_ATT_NEG_INF /* tests/attention_emulator.cpp has its own */
#define CV_ATT_NEG_INF __int_as_float(0xff800000)
#endif
#define CV_ATT_ROWS 64 /* query rows per block of cv_attention (the host's grid) */

/* Batch z of operand x (cv_att_in: cuda_driver.h), whose elements are T (float,
 * cv_bf16 or cv_f16; strides in elements). */
template <class T = float>
CV_DEV const T *cv_att_batch(const cv_att_in &x, int64_t z) {
    return reinterpret_cast<const T *>(x.p) + (z / x.nh) * x.sb + (z % x.nh) * x.sh;
}

/* The store of an output whose heads a permutation merges (cuda_attention.py): element
 * (z, i, c) of the (rows, columns) matrices of `o`, written through its strides; T: its
 * element, to which the value is rounded as the second matmul's epilogue would (the bf16
 * policy's cast: cv_bf16's rounding). */
template <class T>
struct cv_att_store_as {
    const cv_att_in *o;
    CV_MEMBER void operator()(int64_t z, int64_t i, int64_t c, float value) const {
        const T *p = cv_att_batch<T>(*o, z) + i * o->rs + c * o->cs;
        *const_cast<T *>(p) = T(value);
    }
};
typedef cv_att_store_as<float> cv_att_store;

/* The output's store for batch z: epi(z, ...) in general; an overload per store that
 * can do its batch's index arithmetic once (cv_att_store below). */
template <class Epi>
struct cv_att_at {
    const Epi &epi;
    int64_t z;
    CV_MEMBER void operator()(int64_t i, int64_t c, float value) const { epi(z, i, c, value); }
};
template <class Epi>
CV_DEV cv_att_at<Epi> cv_att_bind(const Epi &epi, int64_t z) {
    return cv_att_at<Epi>{epi, z};
}

/* cv_att_store_as with its batch's base found once. */
template <class T>
struct cv_att_store_at {
    T *p;
    int64_t rs, cs;
    CV_MEMBER void operator()(int64_t i, int64_t c, float value) const { p[i * rs + c * cs] = T(value); }
};
template <class T>
CV_DEV cv_att_store_at<T> cv_att_bind(const cv_att_store_as<T> &st, int64_t z) {
    return cv_att_store_at<T>{const_cast<T *>(cv_att_batch<T>(*st.o, z)), st.o->rs, st.o->cs};
}

/* The score: the first matmul's epilogue (Pre, on the dot product), then the softmax
 * group's expression (Score, on that value). */
template <class Pre, class Score>
struct cv_att_then {
    Pre pre;
    Score score;
    CV_MEMBER float operator()(int64_t z, int64_t i, int64_t j, float dot) const {
        return score(z, i, j, pre(z, i, j, dot));
    }
};

/* One 4-byte element global -> shared, zero where bytes is 0 (elsewhere than sm_80+, as a
 * plain copy: tests/attention_emulator.cpp runs this header on the CPU). */
CV_DEV void cv_cp_async4(void *smem, const void *gmem, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const uint32_t s = (uint32_t)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(gmem),
                 "r"(bytes));
#else
    *static_cast<float *>(smem) = bytes ? *static_cast<const float *>(gmem) : 0.0f;
#endif
}

/* One element global -> shared where ok, else zero (src not read): float by cp.async. */
CV_DEV void cv_att_elem(float *dst, const float *src, bool ok) { cv_cp_async4(dst, src, ok ? 4 : 0); }
template <class T>
CV_DEV void cv_att_elem(float *dst, const T *src, bool ok) {
    *dst = ok ? (float)*src : 0.0f;
}

/* The FMA kernel's tiles, DW columns a row (the widest head dim it may see). */
template <int DW>
struct cv_att_smem {
    float q[CV_ATT_BM][DW];
    float k[CV_ATT_BN][DW + 1]; /* a row per lane: +1 spreads them over the banks */
    float v[CV_ATT_BN][DW];
};

CV_DEV float cv_att_warp_max(float x) {
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}
CV_DEV float cv_att_warp_sum(float x) {
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

/* One row's step of the online softmax where lane j holds key j's score x (-inf where
 * the key or row does not exist; `valid`: the key does): its p, the running max m and sum
 * l updated, and the factor alpha the row's output is to be rescaled by. Exponents are
 * taken against 0 while the max is -inf (cuda_attention.h's NumPy semantics above). */
CV_DEV float cv_att_lane_step(float x, bool valid, float &m, float &l, float &alpha) {
    const float mnew = fmaxf(m, cv_att_warp_max(x));
    const float mu = mnew == CV_ATT_NEG_INF ? 0.0f : mnew;
    alpha = m == CV_ATT_NEG_INF ? 0.0f : expf(m - mu);
    const float p = valid ? expf(x - mu) : 0.0f;
    l = l * alpha + cv_att_warp_sum(p);
    m = mnew;
    return p;
}

/* q: (t, dk) per batch, k: (s, dk), v: (s, dv), of elements TQ, TK, TV (read as
 * floats); nz batches; query rows row0 .. row0 + CV_ATT_BM; both head dims at most DW.
 * score(z, i, j, dot) -> the score; epi(z, i, c, value) stores. Its tiles in the shared
 * memory at smem (cv_att_smem<DW>: the caller's, which the tensor-core kernel's share). */
template <class TQ, class TK, class TV, int DW = CV_ATT_DMAX, class Score, class Epi>
CV_DEV void cv_attention_fma(const cv_att_in &q, const cv_att_in &k, const cv_att_in &v,
                             int64_t nz, int64_t t, int64_t s, int64_t dk_, int64_t dv,
                             int64_t row0, const Score &score, const Epi &epi, float *smem) {
    static_assert(DW == 32 || DW == 64 || DW == 128, "a power of two from 32 to 128");
    cv_att_smem<DW> &sm = *reinterpret_cast<cv_att_smem<DW> *>(smem);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int dd = (int)dv, dk = (int)dk_;
    /* columns staged per row: a power of two from 32 to 128 covering both head dims (the
     * dot product reads Q and K in whole float4s, zero past dk); output columns per lane */
    const int wide = dk > dd ? dk : dd;
    const int wshift = wide <= 32 ? 5 : wide <= 64 ? 6 : 7, wmask = (1 << wshift) - 1;
    const int ncol = (dd + 31) >> 5;
    for (int64_t z = blockIdx.y; z < nz; z += gridDim.y) {
        const TQ *qp = cv_att_batch<TQ>(q, z);
        const TK *kp = cv_att_batch<TK>(k, z);
        const TV *vp = cv_att_batch<TV>(v, z);
        __syncthreads(); /* the previous batch's tiles are read */
        /* Q, K and V by cp.async (float): the first tile's wait covers all three, one
         * round trip to memory where the loads of a loop's few unrolled steps took several */
        for (int i = tid; i < (CV_ATT_BM << wshift); i += CV_ATT_THREADS) {
            const int r = i >> wshift, c = i & wmask;
            const int64_t row = row0 + r;
            const bool in = row < t && c < dk;
            cv_att_elem(&sm.q[r][c], in ? qp + row * q.rs + c * q.cs : qp, in);
        }
        float m[CV_ATT_RW], l[CV_ATT_RW], o[CV_ATT_RW][4];
#pragma unroll
        for (int r = 0; r < CV_ATT_RW; r++) {
            m[r] = CV_ATT_NEG_INF, l[r] = 0.0f;
#pragma unroll
            for (int c = 0; c < 4; c++) o[r][c] = 0.0f;
        }
        for (int64_t key0 = 0; key0 < s; key0 += CV_ATT_BN) {
            __syncthreads(); /* the previous tile is read (and Q stored, the first time) */
            for (int i = tid; i < (CV_ATT_BN << wshift); i += CV_ATT_THREADS) {
                const int j = i >> wshift, c = i & wmask;
                const int64_t key = key0 + j;
                const bool ink = key < s && c < dk, inv = key < s && c < dd;
                cv_att_elem(&sm.k[j][c], ink ? kp + key * k.rs + c * k.cs : kp, ink);
                cv_att_elem(&sm.v[j][c], inv ? vp + key * v.rs + c * v.cs : vp, inv);
            }
            cv_cp_async_commit();
            cv_cp_async_wait<0>();
            __syncthreads();
            const int64_t key = key0 + lane;
            const int valid = key < s;
            float dot[CV_ATT_RW];
#pragma unroll
            for (int r = 0; r < CV_ATT_RW; r++) dot[r] = 0.0f;
            for (int c = 0; c < dk; c += 4) { /* Q rows zero past k: whole float4s */
                const float k0 = sm.k[lane][c], k1 = sm.k[lane][c + 1], k2 = sm.k[lane][c + 2],
                            k3 = sm.k[lane][c + 3];
#pragma unroll
                for (int r = 0; r < CV_ATT_RW; r++) {
                    const float4 q4 = *reinterpret_cast<const float4 *>(&sm.q[warp * CV_ATT_RW + r][c]);
                    dot[r] = fmaf(q4.x, k0, dot[r]);
                    dot[r] = fmaf(q4.y, k1, dot[r]);
                    dot[r] = fmaf(q4.z, k2, dot[r]);
                    dot[r] = fmaf(q4.w, k3, dot[r]);
                }
            }
            float p[CV_ATT_RW];
#pragma unroll
            for (int r = 0; r < CV_ATT_RW; r++) {
                const int64_t row = row0 + warp * CV_ATT_RW + r;
                /* called everywhere (at the nearest row and key that exist), so its index
                 * arithmetic on z is computed once, not once a row (cuda_attention_tc.h) */
                const float x0 = score(z, row < t ? row : t - 1, valid ? key : s - 1, dot[r]);
                float alpha;
                p[r] = cv_att_lane_step(valid && row < t ? x0 : CV_ATT_NEG_INF, valid, m[r],
                                        l[r], alpha);
#pragma unroll
                for (int c = 0; c < 4; c++) o[r][c] *= alpha;
            }
            const int64_t left = s - key0;
            const int nj = left < CV_ATT_BN ? (int)left : CV_ATT_BN;
            for (int j = 0; j < nj; j++) {
                float vj[4];
#pragma unroll
                for (int c = 0; c < 4; c++) vj[c] = c < ncol ? sm.v[j][lane + 32 * c] : 0.0f;
#pragma unroll
                for (int r = 0; r < CV_ATT_RW; r++) {
                    const float pj = __shfl_sync(0xffffffffu, p[r], j);
#pragma unroll
                    for (int c = 0; c < 4; c++)
                        if (c < ncol) o[r][c] = fmaf(pj, vj[c], o[r][c]); /* warp-uniform */
                }
            }
        }
        cv_cp_async_commit(); /* no keys (s == 0): Q's copies, committed by no tile */
        cv_cp_async_wait<0>();
        /* the store's batch index math once, as the tensor-core kernel does: through the
         * functor, a 64-bit division by the heads an element (in the module, where the
         * store is cv_att_store, this kernel took 12.5 us at 1 x 16 against the probe's 5.3
         * with a plain store: bench/gpu/attn_small_probe.cu) */
        const auto out = cv_att_bind(epi, z);
#pragma unroll
        for (int r = 0; r < CV_ATT_RW; r++) {
            const int64_t row = row0 + warp * CV_ATT_RW + r;
            if (row >= t) continue;
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const int col = lane + 32 * c;
                if (col < dd) out(row, (int64_t)col, o[r][c] / l[r]);
            }
        }
    }
}

/* Few query rows (batch 1: t <= CV_ATT_BM, both head dims at most 64), an entry point of
 * its own (the host's, on every arch): the FMA kernel's 4 rows a warp, where the
 * tensor-core one puts 16 rows on one warp of its 4 and leaves the others idle (H100, 12
 * heads of 64: 5.3 us against 10.1 at 8 rows, 5.8 against 10.1 at 16;
 * bench/gpu/attn_small_probe.cu). Its float32 FMAs are exact where the tensor cores' TF32
 * products are not. Inlined into cv_attention's entry, the pair spilled on sm_80 and moved
 * ptxas's register choice on sm_90a (GPT-2's causal attention: 168 registers and a spill
 * where it had 175 and none). The template arguments of cv_attention but the head dims. */
template <bool X3QK, bool X3PV, class TQ = float, class TK = float, class TV = float,
          class Score, class Epi>
CV_DEV void cv_attention_few(const cv_att_in &q, const cv_att_in &k, const cv_att_in &v,
                             int64_t nz, int64_t t, int64_t s, int64_t dk, int64_t dv, int,
                             const Score &score, const Epi &epi) {
    __shared__ __align__(16) float smem[sizeof(cv_att_smem<64>) / sizeof(float)];
    cv_attention_fma<TQ, TK, TV, 64>(q, k, v, nz, t, s, dk, dv, 0, score, epi, smem);
}

/* the tensor-core kernel and the decode step's few rows: they use the helpers above */
#include "cuvil_aot/cuda_attention_bf16.h" /* and through it cuda_attention_tc.h */
#include "cuvil_aot/cuda_attention_decode.h" /* its copies: cuda_attention_tc.h's */

/* DK, DV: the head dims dk and dv rounded up to a multiple of 32 where the code generator
 * knows them, else 128; X3QK / X3PV: 3xTF32 for Q Kᵀ / P V (else one TF32 product); TQ,
 * TK, TV: the operands' elements (float, cv_bf16 or cv_f16; cuda_attention_tc.h). A
 * block of CV_ATT_THREADS threads per CV_ATT_ROWS query rows of a batch (grid.x), batches
 * grid-strided along grid.y; split 2: half as many rows a block, the keys split between
 * two halves of its warps (cv_attention_tf32; the host's, where the blocks are few). */
template <int DK, int DV, bool X3QK, bool X3PV, class TQ = float, class TK = float,
          class TV = float, class Score, class Epi>
CV_DEV void cv_attention(const cv_att_in &q, const cv_att_in &k, const cv_att_in &v, int64_t nz,
                         int64_t t, int64_t s, int64_t dk, int64_t dv, int split,
                         const Score &score, const Epi &epi) {
    static_assert(CV_ATT_TC_THREADS == CV_ATT_THREADS && CV_ATT_TC_BM == CV_ATT_ROWS, "grid");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    __shared__ __align__(16) float smem[sizeof(cv_att_smem<CV_ATT_DMAX>) / sizeof(float)];
    const int rows = split == 2 ? CV_ATT_ROWS / 2 : CV_ATT_ROWS; /* the host's blocks */
    for (int b = 0; b < rows / CV_ATT_BM; b++)
        cv_attention_fma<TQ, TK, TV>(q, k, v, nz, t, s, dk, dv,
                         (int64_t)blockIdx.x * rows + b * CV_ATT_BM, score, epi, smem);
#else
    constexpr int NT = cv_att_is_bf16<TQ>::value && cv_att_is_bf16<TK>::value &&
                               cv_att_is_bf16<TV>::value ? 1 : cv_att_tc_cfg<DK, DV>::FLOATS;
    __shared__ __align__(16) float smem[NT];
    cv_attention_tc<DK, DV, X3QK, X3PV, TQ, TK, TV>(q, k, v, nz, t, s, (int)dk, (int)dv, split,
                                                    score, epi, smem);
#endif
}

#endif
