/* CUDA C++, for nvcc only. The Hopper GEMM main loop (cv_gemm_wgmma, sm_90a only):
 * C[M, N] = A[M, K] . B[N, K]^T with both operands K-major (x @ w.T), through
 * warpgroup MMA (wgmma) fed by the tensor copy engine (TMA). See cuda_gemm_tc.h for
 * the mma.sync loop it would replace on sm_90a; cuda_wgmma_ops.h for the PTX.
 *
 * Kinds (CV_WG_*): float32 A/B/C with one TF32 product (precision="tf32"), with
 * 3xTF32 (float32 accuracy; _TF32X3F the same without per-k-block partials), and
 * bfloat16 A/B with float32 accumulation and C.
 *
 * Block: 384 threads = 3 warpgroups, one CTA per SM (__launch_bounds__(384, 1) on
 * the kernel that calls this), looping over work items blockIdx.x, + gridDim.x, ...:
 * (k-chunk, batch, 128 x BN output tile) (cv_wg_run; generated code: cv_gemm_wgmma_job,
 * cuvil_aot/compiler/codegen/cuda_wgmma.py), a grid of one block per item, or
 * persistent (one per SM), where the producer loads the next item's first stages
 * during this one's epilogue.
 * Warpgroup 0 is the producer: one thread issues the TMA copies of each k-block into
 * a ring of STAGES stages (its counter runs on across tiles), the others idle
 * (setmaxnreg.dec to 40 registers). Warpgroups 1 and 2 are the consumers (setmaxnreg.inc
 * to 232): consumer c owns rows 64c .. 64c + 63 of the 128 x BN tile.
 *
 * Shared memory, dynamic, its base rounded up to 1024 bytes; stage s at s * STAGE:
 *   A  128 rows x 128 B (BK = 32 float32 or 64 bfloat16 of k per row)   16 KB
 *   B  BN  rows x 128 B                                                  BN * 128 B
 *   3xTF32 only: A_small, B_small, the same shapes (and the same swizzle)
 * then, at STAGES * STAGE, 8 x 16 x 33 floats for the epilogue (16.5 KB). Every tile is 1024-aligned, in the 128-byte swizzle (chunk c of row r at c ^ (r % 8),
 * see cv_wg_desc). Barriers: full[s] (1 arrival + the TMA's bytes) and empty[s]
 * (one arrival per consumer warp: 8), static shared.
 *
 * Consumer k-loop: wait full[s]; (3xTF32: split the landed fp32 tiles in place into
 * big = tf32(x), written back, and small = tf32(x - big) into the _small tiles: the
 * position of an element is the same in both, so no swizzle arithmetic; consumer c
 * splits its own 64 rows of A and half of B's rows; fence.proxy.async then a named
 * barrier over both consumers, as each reads all of B; done for k-block kb + 1 while
 * the tensor cores work on kb; cuda_wg_split.h). A B that is N-major in memory (x @ w of
 * an (in, out) weight; every term's, the host's cv_gpu_wg_maps_nmajor) lands unswizzled,
 * one TMA box of 32 k x BN/2 n per consumer, and its split writes it K-major and
 * swizzled (cv_wg_split_nmajor): only 3xTF32 splits, so only it reads B so. Then BK/8 (tf32) or BK/16 (bf16) wgmma m64 x BN per
 * k-block (x 3 for 3xTF32), the descriptor start advancing 32 bytes a step.
 *
 * 3xTF32 adds small_a*big_b + big_a*small_b + big_a*big_b of each k-block into a
 * zeroed partial and the partial into the accumulators with a rounded FADD (the
 * tensor cores' own float32 accumulation truncates: see cuda_gemm_tc.h), which waits
 * for each k-block's wgmma (wait_group 0); the other kinds keep one k-block in flight
 * (wait_group 1) and release the stage before it.
 *
 * Edges: TMA zero-fills rows past M / N and k past K, so partial tiles compute on
 * zeros; the epilogue masks. The host's tensor maps need 16-byte aligned bases and
 * row strides (K % 4 == 0 for float32, K % 8 == 0 for bfloat16): cv_wg_make_map
 * refuses others (the caller falls back to cv_gemm_tc).
 *
 * Epilogue as cv_tc_out: each warp's 16 x BN rows go out in bands of 16 x 32 through
 * its own 16 x 33 floats after the stages, out(0, row, col, value) called from one
 * site, one row's 32 columns from 32 lanes (coalesced). */
#ifndef CUVIL_AOT_CUDA_GEMM_WGMMA_H
#define CUVIL_AOT_CUDA_GEMM_WGMMA_H

#include <cuda.h> /* CUtensorMap and its enums (types only: the driver is dlopen'ed) */

#include "cuvil_aot/cuda_gemm_tc.h"
#include "cuvil_aot/cuda_wg_split.h"
#include "cuvil_aot/cuda_wg_work.h"
#include "cuvil_aot/cuda_wgmma_ops.h"

/* The tensor maps in generated code's arguments (gpu_wrap.h declares the same layout
 * for the host). */
typedef CUtensorMap cv_tmap;

/* CV_WG_TF32X3F: 3xTF32 accumulated in the tensor cores across all k (no partial, no
 * FADD): faster, but their truncating accumulation costs accuracy (a host model of it
 * gave 4e-5 of max|ref| at k = 4096, against 5e-7 with per-k-block partials). */
enum { CV_WG_TF32 = 0, CV_WG_TF32X3 = 1, CV_WG_BF16 = 2, CV_WG_TF32X3F = 3 };

template <int KIND, int BN, int STAGES>
struct cv_wg_cfg {
    static_assert(BN == 128 || BN == 256 || (BN == 192 && KIND == CV_WG_BF16),
                  "wgmma N of 128 or 256, or 192 for bfloat16");
    static_assert(STAGES >= 2, "the k-loops overlap one stage with the next");
    static constexpr int ELEM = KIND == CV_WG_BF16 ? 2 : 4;
    static constexpr int BM = 128, BK = 128 / ELEM;
    static constexpr int KSTEP = KIND == CV_WG_BF16 ? 16 : 8; /* k of one wgmma: 32 bytes */
    static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128;
    static constexpr bool X3 = KIND == CV_WG_TF32X3 || KIND == CV_WG_TF32X3F;
    static constexpr bool PARTIAL = KIND == CV_WG_TF32X3;
    static_assert(PARTIAL || !X3 || STAGES >= 3, "2 k-blocks in flight + 1 being split");
    static constexpr int STAGE = (A_BYTES + B_BYTES) * (X3 ? 2 : 1);
    static constexpr int EPI = 8 * 16 * 33 * 4; /* the consumer warps' bands */
    static constexpr int SMEM = STAGES * STAGE + EPI + 1024; /* + the base's alignment slack */
    static_assert(SMEM <= 227 * 1024, "over the H100/H200 shared memory of a block");
};

/* The host's tensor map of a K-major operand: `batches` of `rows` rows of `k` elements,
 * rows `ld` and batches `bs` elements apart (bs 0: one batch that every batch reads), read
 * in boxes of BK x box_rows x 1 with the 128-byte swizzle: always 3-D, so one copy
 * instruction serves batched and plain GEMMs (a third coordinate of 0). encode: the
 * driver's cuTensorMapEncodeTiled (the function itself where the program links libcuda;
 * generated code goes through the runtime's api->gpu->tensor_map, gpu_wrap.h). Returns
 * 0, or -1 when TMA cannot read this operand (alignment) or the driver refuses. */
typedef CUresult (*cv_encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                       const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                       const cuuint32_t *, CUtensorMapInterleave,
                                       CUtensorMapSwizzle, CUtensorMapL2promotion,
                                       CUtensorMapFloatOOBfill);
static inline int cv_wg_make_map(cv_encode_tiled_fn encode, CUtensorMap *map, const void *base,
                                 int bf16, int64_t rows, int64_t k, int64_t ld, int box_rows,
                                 int64_t batches = 1, int64_t bs = 0) {
    const int elem = bf16 ? 2 : 4;
    if (((uintptr_t)base & 15) || ld <= 0 || (ld * elem) % 16 || bs < 0 || (bs * elem) % 16 ||
        rows <= 0 || k <= 0)
        return -1;
    const cuuint64_t dims[3] = {(cuuint64_t)k, (cuuint64_t)rows,
                                (cuuint64_t)(bs ? batches : 1)};
    const cuuint64_t strides[2] = {(cuuint64_t)(ld * elem), /* bytes, dims 1.. */
                                   (cuuint64_t)((bs ? bs : ld * rows) * elem)};
    const cuuint32_t box[3] = {(cuuint32_t)(128 / elem), (cuuint32_t)box_rows, 1};
    const cuuint32_t estr[3] = {1, 1, 1};
    const CUresult r = encode(map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                              3, const_cast<void *>(base), dims, strides, box, estr,
                              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? 0 : -1;
}

#if defined(CV_WGMMA_OK)

template <int BN>
CV_DEV void cv_wg_mma(float (&d)[BN / 2], int bf16, uint64_t da, uint64_t db, int scale_d) {
    if constexpr (BN == 128) {
        if (bf16) cv_wg_mma_bf16_n128(d, da, db, scale_d);
        else cv_wg_mma_tf32_n128(d, da, db, scale_d);
    } else if constexpr (BN == 192) {
        cv_wg_mma_bf16_n192(d, da, db, scale_d); /* bfloat16 only (cv_wg_cfg) */
    } else {
        if (bf16) cv_wg_mma_bf16_n256(d, da, db, scale_d);
        else cv_wg_mma_tf32_n256(d, da, db, scale_d);
    }
}

/* Consumer c's finished 64 x BN rows to the epilogue (see the top). */
template <int BN, class Out>
CV_DEV void cv_wg_out(const float (&acc)[BN / 2], unsigned char *smem, int c, int64_t bat,
                      int64_t m, int64_t n, int64_t row0, int64_t col0, const Out &out) {
    const int w = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    float *band = reinterpret_cast<float *>(smem) + (c * 4 + w) * 16 * 33;
    const int64_t r0 = row0 + c * 64 + w * 16;
#pragma unroll 1
    for (int jb = 0; jb < BN / 32; jb++) {
#pragma unroll
        for (int jj = 0; jj < BN / 32; jj++)
            if (jj == jb) /* acc indexed by constants only: it stays in registers */
#pragma unroll
                for (int q = 0; q < 4; q++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        band[(g + 8 * (e >> 1)) * 33 + q * 8 + 2 * t + (e & 1)] =
                            acc[(jj * 4 + q) * 4 + e];
        __syncwarp();
        const int64_t col = col0 + jb * 32 + lane;
        if (r0 + 16 <= m && col0 + BN <= n) /* the warp's whole band: no bounds */
            out.template rows<16, false>(bat, r0, col, band + lane, 33, 16);
        else if (col < n && r0 < m)
            out.template rows<16, true>(bat, r0, col, band + lane, 33,
                                        m - r0 < 16 ? (int)(m - r0) : 16);
        __syncwarp(); /* the next band overwrites it */
    }
}

/* 3xTF32: the landed stage of k-block `it` (counted across tiles) split into big and
 * small (see the top; B transposed as well where `nmajor`: cv_wg_split_nmajor), made
 * visible to wgmma, and both consumers past it (each reads all of B). */
template <int BN, int STAGES>
CV_DEV void cv_wg_split_stage(unsigned char *smem, uint64_t *full, int c, uint32_t it,
                              int nmajor) {
    using C = cv_wg_cfg<CV_WG_TF32X3, BN, STAGES>; /* the layout of both 3x kinds */
    const int s = it % STAGES, tid = threadIdx.x & 127;
    unsigned char *sa = smem + s * C::STAGE, *sb = sa + C::A_BYTES;
    unsigned char *sas = sb + C::B_BYTES, *sbs = sas + C::A_BYTES;
    cv_mbar_wait(&full[s], (it / STAGES) & 1);
    cv_wg_split(sa + c * 8192, sas + c * 8192, tid, 4); /* its 64 rows of A: 512 chunks */
    if (nmajor) cv_wg_split_nmajor<BN>(sb + c * (C::B_BYTES / 2), sbs + c * (C::B_BYTES / 2), c);
    else cv_wg_split(sb + c * (C::B_BYTES / 2), sbs + c * (C::B_BYTES / 2), tid, BN / 32);
    cv_fence_proxy_async(); /* these writes, before wgmma (the async proxy) reads them */
    cv_bar_sync(1, 256);
}

/* Consumer c (0, 1) of the block, one tile: its 64 x BN accumulators over the nk
 * k-blocks it .. it + nk - 1 (the ring's counter, advanced here), every stage released
 * by the end, then out. */
template <int KIND, int BN, int STAGES, class Out>
CV_DEV void cv_wg_consumer(unsigned char *smem, uint64_t *full, uint64_t *empty, int c,
                           uint32_t &it, int64_t bat, int64_t m, int64_t n, int nk,
                           int64_t row0, int64_t col0, int nmajor, const Out &out) {
    using C = cv_wg_cfg<KIND, BN, STAGES>;
    const int lane = threadIdx.x & 31;
    auto release = [&](uint32_t i) { /* k-block i's stage, once this warp's wgmma are done */
        __syncwarp();
        if (lane == 0) cv_mbar_arrive(&empty[i % STAGES]);
    };
    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++) acc[i] = 0.f;
    if constexpr (C::X3) {
        /* The split of k-block kb + 1 (CUDA cores, shared memory) runs while the
         * tensor cores work on k-block kb. */
        float part[C::PARTIAL ? BN / 2 : 1];
        /* The 3 x BK/8 wgmma of one k-block into d; first: scale_d of the first. */
        auto slab = [&](float (&d)[BN / 2], int s, int first) {
            const uint32_t st = cv_smem_u32(smem + s * C::STAGE); /* A, B, A_small, B_small */
            const uint32_t a = st + c * 64 * 128, b = st + C::A_BYTES;
            const uint32_t as = st + C::A_BYTES + C::B_BYTES + c * 64 * 128;
            const uint32_t bs = st + 2 * C::A_BYTES + C::B_BYTES;
            cv_wg_fence_regs(d);
            cv_wg_arrive();
#pragma unroll
            for (int ks = 0; ks < C::BK / C::KSTEP; ks++) {
                const uint32_t o = ks * 32; /* the small terms first */
                cv_wg_mma<BN>(d, 0, cv_wg_desc(as + o), cv_wg_desc(b + o), ks > 0 || first);
                cv_wg_mma<BN>(d, 0, cv_wg_desc(a + o), cv_wg_desc(bs + o), 1);
                cv_wg_mma<BN>(d, 0, cv_wg_desc(a + o), cv_wg_desc(b + o), 1);
            }
            cv_wg_commit();
        };
        if (nk > 0) cv_wg_split_stage<BN, STAGES>(smem, full, c, it, nmajor);
        for (int kb = 0; kb < nk; kb++, it++) {
            const int s = it % STAGES;
            if constexpr (C::PARTIAL) {
                slab(part, s, 0); /* into a zeroed partial */
                if (kb + 1 < nk) cv_wg_split_stage<BN, STAGES>(smem, full, c, it + 1, nmajor);
                cv_wg_wait<0>();
                cv_wg_fence_regs(part);
                release(it);
#pragma unroll
                for (int i = 0; i < BN / 2; i++) acc[i] += part[i];
            } else { /* wgmma of k-blocks kb - 1 and kb in flight during the split of kb + 1 */
                slab(acc, s, 1);
                if (kb + 1 < nk) cv_wg_split_stage<BN, STAGES>(smem, full, c, it + 1, nmajor);
                cv_wg_wait<1>();
                cv_wg_fence_regs(acc);
                if (kb > 0) release(it - 1);
            }
        }
    } else {
        for (int kb = 0; kb < nk; kb++, it++) {
            const int s = it % STAGES;
            cv_mbar_wait(&full[s], (it / STAGES) & 1);
            const uint32_t a = cv_smem_u32(smem + s * C::STAGE) + c * 64 * 128;
            const uint32_t b = cv_smem_u32(smem + s * C::STAGE) + C::A_BYTES;
            cv_wg_fence_regs(acc);
            cv_wg_arrive();
#pragma unroll
            for (int ks = 0; ks < C::BK / C::KSTEP; ks++)
                cv_wg_mma<BN>(acc, KIND == CV_WG_BF16, cv_wg_desc(a + ks * 32),
                              cv_wg_desc(b + ks * 32), 1);
            cv_wg_commit();
            cv_wg_wait<1>(); /* k-block kb - 1's wgmma are done: its stage is free */
            cv_wg_fence_regs(acc);
            if (kb > 0) release(it - 1);
        }
    }
    cv_wg_wait<0>();
    cv_wg_fence_regs(acc);
    if (nk > 0 && !C::PARTIAL) release(it - 1); /* the last k-block's stage */
    cv_wg_out<BN>(acc, smem + STAGES * C::STAGE, c, bat, m, n, row0, col0, out);
}

#endif /* CV_WGMMA_OK */

/* The main loop over work items blockIdx.x, + gridDim.x, ... (cv_wg_item: split > 1
 * splits the tiles of rows row0 and on, a multiple of 128; row0 0: all); a grid of one
 * block per item, or fewer (persistent: the producer loads the next item's first stages
 * during this one's epilogue). Each item sums its chunk of every term (the terms'
 * k-blocks one after another through the ring); a split item's sums go to part (rows
 * from row0 on: cv_split_epi, cv_gemm_ksum adds them), others' to epi(bat, i, j, v).
 * maps(t, 0) and maps(t, 1): term t's tensor maps of A (boxes of 128 rows) and B (boxes
 * of BN rows), 3-D (cv_wg_make_map), where they are (param space: a copy in local
 * memory would not do); a term with a_bs (b_bs) 0 reads batch 0 of its map. Block: 384
 * threads, __launch_bounds__(384, 1) (for setmaxnreg); dynamic shared memory
 * cv_wg_cfg<KIND, BN, STAGES>::SMEM (the kernel's limit raised: cuFuncSetAttribute).
 * Built for a target without wgmma: traps (the host must not launch it). */
template <int KIND, int BN, int STAGES, class Maps, class Epi>
CV_DEV void cv_wg_run(const Maps &maps, const cv_gpu_term *terms, int nterms, int64_t m,
                      int64_t n, int64_t nb, int split, float *part, const Epi &epi,
                      int64_t row0 = 0) {
#if defined(CV_WGMMA_OK)
    using C = cv_wg_cfg<KIND, BN, STAGES>;
    extern __shared__ unsigned char cv_wg_dyn[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    unsigned char *smem = cv_wg_dyn + ((1024 - (cv_smem_u32(cv_wg_dyn) & 1023)) & 1023);
    const int64_t tiles_n = (n + BN - 1) / BN, tiles = (m + C::BM - 1) / C::BM * tiles_n;
    static_assert(C::BM == 128, "cv_wg_items counts rows of 128");
    int64_t whole;
    const int64_t work = cv_wg_items(tiles, tiles_n, nb, split, row0, whole);
    const int wg = threadIdx.x >> 7;
    /* 3xTF32: every term's B N-major (b_rs != 1; the host's contract, cv_gpu_wg_maps_nmajor:
     * its map boxes of BN / 2 columns x BK rows of k, unswizzled), else all K-major */
    const int nmajor = C::X3 && nterms > 0 && terms[0].b_rs != 1;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            cv_mbar_init(&full[s], 1);
            cv_mbar_init(&empty[s], 8); /* lane 0 of each consumer warp */
        }
        cv_mbar_init_fence();
        for (int t = 0; t < nterms; t++) {
            cv_tma_prefetch_map(maps(t, 0));
            cv_tma_prefetch_map(maps(t, 1));
        }
    }
    __syncthreads();
    uint32_t it = 0; /* k-blocks through the ring so far: stage it % STAGES */
    if (wg == 0) {
        cv_setmaxnreg_dec<40>();
        if (threadIdx.x == 0)
            for (int64_t w = blockIdx.x; w < work; w += gridDim.x) {
                const cv_wg_it item = cv_wg_item(w, tiles, nb, whole, split);
                const int r0 = (int)(item.tile / tiles_n * C::BM);
                const int c0 = (int)(item.tile % tiles_n * BN);
                for (int t = 0; t < nterms; t++) {
                    int64_t k0;
                    int blocks;
                    cv_wg_chunk<C::BK>(terms[t].k, item.s, item.split, k0, blocks);
                    const int za = terms[t].a_bs ? (int)item.bat : 0;
                    const int zb = terms[t].b_bs ? (int)item.bat : 0;
                    for (int kb = 0; kb < blocks; kb++, it++) {
                        const int st = it % STAGES;
                        unsigned char *sa = smem + st * C::STAGE;
                        const int x = (int)(k0 + kb * C::BK);
                        cv_mbar_wait(&empty[st], ((it / STAGES) & 1) ^ 1);
                        cv_mbar_arrive_tx(&full[st], C::A_BYTES + C::B_BYTES);
                        cv_tma_3d(sa, maps(t, 0), x, r0, za, &full[st]);
                        if (nmajor) /* a box for each consumer's half */
                            for (int h = 0; h < 2; h++)
                                cv_tma_3d(sa + C::A_BYTES + h * (C::B_BYTES / 2), maps(t, 1),
                                          c0 + h * (BN / 2), x, zb, &full[st]);
                        else
                            cv_tma_3d(sa + C::A_BYTES, maps(t, 1), x, c0, zb, &full[st]);
                    }
                }
            }
    } else {
        cv_setmaxnreg_inc<232>();
        for (int64_t w = blockIdx.x; w < work; w += gridDim.x) {
            const cv_wg_it item = cv_wg_item(w, tiles, nb, whole, split);
            int nk = 0;
            for (int t = 0; t < nterms; t++) {
                int64_t k0;
                int blocks;
                cv_wg_chunk<C::BK>(terms[t].k, item.s, item.split, k0, blocks);
                nk += blocks;
            }
            const cv_split_epi<float, Epi> out{epi, item.split > 1 ? part : nullptr, m - row0, n,
                                               nb, item.s, row0};
            cv_wg_consumer<KIND, BN, STAGES>(smem, full, empty, wg - 1, it, item.bat, m, n, nk,
                                             item.tile / tiles_n * C::BM,
                                             item.tile % tiles_n * BN, nmajor, out);
        }
    }
#else
    __trap(); /* built for a target without wgmma: the host must not launch this */
#endif
}

/* One term, no batches, no split (the probe, bench/gpu/wgmma_probe.cu): ta, tb from
 * cv_wg_make_map, passed as `const __grid_constant__ CUtensorMap` kernel parameters. */
template <int KIND, int BN, int STAGES, class Out>
CV_DEV void cv_gemm_wgmma(const CUtensorMap &ta, const CUtensorMap &tb, int64_t m, int64_t n,
                          int64_t k, const Out &out) {
    const cv_gpu_term t{nullptr, 0, 1, 0, nullptr, 1, 0, 0, k};
    const CUtensorMap *a = &ta, *b = &tb;
    auto maps = [a, b](int, int side) { return side ? b : a; };
    cv_wg_run<KIND, BN, STAGES>(maps, &t, 1, m, n, 1, 1, nullptr, out);
}

/* A unit's GEMM (cuda_gemm.py's _wg entry): maps[2t], maps[2t + 1] are term t's (the
 * kernel parameter's own array), the rest as cv_gemm_tc. */
template <int KIND, int BN, int STAGES, class Epi>
CV_DEV void cv_gemm_wgmma_job(const CUtensorMap *maps, const cv_gpu_term *terms, int nterms,
                              int64_t m, int64_t n, int64_t nb, int split, float *part,
                              const Epi &epi, int64_t row0 = 0) {
    auto at = [maps](int t, int side) { return &maps[2 * t + side]; };
    cv_wg_run<KIND, BN, STAGES>(at, terms, nterms, m, n, nb, split, part, epi, row0);
}

#endif
