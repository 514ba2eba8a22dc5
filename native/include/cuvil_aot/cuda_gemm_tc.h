/* CUDA C++, for nvcc only. The tensor-core GEMM main loop (cv_gemm_tc, 3xTF32,
 * sm_80+; cv_gemm_tiled's tiles before). See cuda_gemm.h. */
#ifndef CUVIL_AOT_CUDA_GEMM_TC_H
#define CUVIL_AOT_CUDA_GEMM_TC_H

#include "cuvil_aot/cuda_gemm_tiled.h"

/* Tensor-core main loop, float32 in and out (sm_80+).
 *
 * 3xTF32: each operand x is split into big = tf32(x) and small = tf32(x - big);
 * small_a*big_b + big_a*small_b + big_a*big_b keeps ~22 bits of each product
 * (float32 level) where plain TF32 keeps 11 (~3e-4). The tensor cores' own
 * float32 accumulation truncates: accumulating all of k there gave an error
 * growing with k (7e-6 at k = 1024 on the H200, cuBLAS 5.7e-7), so each
 * k-slab's sum is added to the accumulators with a rounded FADD.
 *
 * Block tile BM x 128 (the host's BM: 64, as fast as 128 or faster at every
 * shape of bench/gpu/tct_probe.cu), k-slabs of 8 in CV_TC_STAGES shared-memory stages filled by cp.async
 * (16-byte chunks, zero-filled past m, n, k), 8 warps of BM/2 x 32, mma.sync
 * m16n8k8. Within a k-slab the fragment's k-columns (t, t+4) are read
 * from smem columns (2t, 2t+1) in A and B alike: the same permutation of k on
 * both sides leaves the sum unchanged and makes A's two values one 8-byte load.
 * Static shared memory only (33 KB at BM = 128: two blocks per SM) because the
 * launch passes no dynamic size. */
#define CV_TC_STAGES 4
#define CV_TC_BPAD 4 /* B rows of 132 floats: the fragment loads hit 32 banks */

/* One 16-byte chunk global -> shared; `bytes` (0..16) are read, the rest of
 * the chunk is zero-filled. */
CV_DEV void cv_cp_async16(void *smem, const void *gmem, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const uint32_t s = (uint32_t)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem),
                 "r"(bytes));
#endif
}
CV_DEV void cv_cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N>
CV_DEV void cv_cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

/* Round to the nearest tf32 (ties away) by integer arithmetic: 2 instructions
 * where cvt.rna.tf32 takes 4-5 on sm_90. Inf stays Inf, NaN stays NaN;
 * finite values within half a tf32 ulp of FLT_MAX round to Inf, as cvt.rna. */
CV_DEV uint32_t cv_tf32(float x) { return (__float_as_uint(x) + 0x1000u) & 0xffffe000u; }
CV_DEV void cv_split_tf32(float x, uint32_t &big, uint32_t &small) {
    big = cv_tf32(x);
    small = cv_tf32(x - __uint_as_float(big)); /* the difference is exact */
}

CV_DEV void cv_mma_tf32(float d[4], const uint32_t a[4], const uint32_t b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/* d += a b, 16 x 8 x 16 in bfloat16 with float32 accumulators (sm_80+). Each register
 * holds two elements adjacent along k, the lower k in its low half (the PTX ISA's
 * m16n8k16 fragments, lane = 4g + t): a = (g, 2t), (g + 8, 2t), (g, 2t + 8), (g + 8, 2t + 8)
 * as (row, k) of each pair's first; b = (2t, g), (2t + 8, g) as (k, column). */
CV_DEV void cv_mma_bf16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/* ldmatrix .x4: four 8 x 8 matrices of 16-bit elements from shared memory, lane l giving
 * the address of row l % 8 of matrix l / 8 (16 bytes, 16-byte aligned). Register i gets
 * matrix i's elements (g, 2t) and (g, 2t + 1), or with TRANS (2t, g) and (2t + 1, g): the
 * pairs of an mma fragment along a row, or down a column. volatile: it reads what other
 * threads stored before a barrier, and must not move above it. */
template <bool TRANS>
CV_DEV void cv_ldsm4(uint32_t r[4], const void *row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const uint32_t s = (uint32_t)__cvta_generic_to_shared(row);
    if (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(s));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(s));
#endif
}

/* Shared-memory stages. A: [row][k] (k contiguous). B: [k][col] when BT is
 * false (n contiguous in memory), [col][k] when BT is true (k contiguous).
 * BM: the tile's rows (128, or 64 where 128-row tiles would leave SMs idle). */
template <bool BT, int BM>
struct cv_tc_smem {
    float a[CV_TC_STAGES][BM][8];
    float b[CV_TC_STAGES][BT ? 128 : 8][BT ? 8 : 128 + CV_TC_BPAD];
};

/* One thread's two chunks per k-slab: A row ar, k ak..ak+3 (the first 2 * BM
 * threads); B likewise (BT) or k-row bk, columns bc..bc+3. */
template <bool BT, int BM>
struct cv_tc_loader {
    const float *pa, *pb;
    int64_t b_step, k, ka, kb;
    int a_on, a_ok, b_cols; /* an A chunk is this thread's; its row exists; B columns
                               (or row, BT) left from bc */
    int ar, ak, bk, bc;

    CV_MEMBER void init(const cv_gpu_term &t, int64_t bat, int64_t m, int64_t n, int64_t row0,
                        int64_t col0) {
        const int tid = threadIdx.x;
        ar = tid >> 1, ak = (tid & 1) * 4;
        k = t.k, ka = ak;
        a_on = ar < BM;
        a_ok = a_on && row0 + ar < m;
        pa = reinterpret_cast<const float *>(t.a) + bat * t.a_bs + (a_ok ? row0 + ar : 0) * t.a_rs +
             ak;
        const float *b = reinterpret_cast<const float *>(t.b) + bat * t.b_bs;
        if (BT) { /* like A: column bc of the tile is a row of k values */
            bc = tid >> 1, bk = (tid & 1) * 4, kb = bk;
            b_cols = col0 + bc < n;
            pb = b + (b_cols ? col0 + bc : 0) * t.b_cs + bk;
            b_step = 8;
        } else {
            bk = tid >> 5, bc = (tid & 31) * 4, kb = bk;
            const int64_t left = n - (col0 + bc);
            b_cols = left <= 0 ? 0 : left >= 4 ? 4 : (int)left;
            pb = b + bk * t.b_rs + (b_cols ? col0 + bc : 0);
            b_step = 8 * t.b_rs;
        }
    }
    /* Chunks of k-slab `s` (this thread's next one) into stage `st`. */
    CV_MEMBER void load(cv_tc_smem<BT, BM> &sm, int st) {
        const int64_t kleft = k - ka;
        const int abytes = a_ok && kleft > 0 ? (kleft >= 4 ? 16 : (int)kleft * 4) : 0;
        if (a_on) cv_cp_async16(&sm.a[st][ar][ak], abytes ? pa : pa - ka, abytes);
        int bbytes;
        if (BT) {
            const int64_t kl = k - kb;
            bbytes = b_cols && kl > 0 ? (kl >= 4 ? 16 : (int)kl * 4) : 0;
            cv_cp_async16(&sm.b[st][bc][bk], bbytes ? pb : pb - kb, bbytes);
        } else {
            bbytes = kb < k ? b_cols * 4 : 0;
            cv_cp_async16(&sm.b[st][bk][bc], bbytes ? pb : pb - kb * (b_step / 8), bbytes);
        }
        pa += 8;
        pb += b_step;
        ka += 8;
        kb += 8;
    }
};

/* Warp (wm, wn) owns rows wm*BM/2 + [0, BM/2) and columns wn*32 + [0, 32) of the
 * tile: BM/32 x 4 mma tiles of 16x8; lane = 4g + t. X3: 3xTF32 (float32 accuracy);
 * else one TF32 product, for operands the function rounded to TF32 itself
 * (precision="tf32"): cv_tf32 of such a value is the value, and its small part 0. */
template <bool BT, int BM, bool X3 = true>
CV_DEV void cv_tc_slab(const cv_tc_smem<BT, BM> &sm, int st, int wm, int wn, int g, int t,
                       float acc[BM / 32][4][4]) {
    uint32_t bb[4][2], bs[4][2];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int c = wn * 32 + j * 8 + g;
        float v0, v1;
        if (BT) {
            const float2 v = *reinterpret_cast<const float2 *>(&sm.b[st][c][2 * t]);
            v0 = v.x, v1 = v.y;
        } else {
            v0 = sm.b[st][2 * t][c], v1 = sm.b[st][2 * t + 1][c];
        }
        cv_split_tf32(v0, bb[j][0], bs[j][0]);
        cv_split_tf32(v1, bb[j][1], bs[j][1]);
    }
#pragma unroll
    for (int i = 0; i < BM / 32; i++) {
        const int r = wm * (BM / 2) + i * 16 + g;
        const float2 lo = *reinterpret_cast<const float2 *>(&sm.a[st][r][2 * t]);
        const float2 hi = *reinterpret_cast<const float2 *>(&sm.a[st][r + 8][2 * t]);
        uint32_t ab[4], as[4];
        cv_split_tf32(lo.x, ab[0], as[0]); /* (g, k t) */
        cv_split_tf32(hi.x, ab[1], as[1]); /* (g + 8, k t) */
        cv_split_tf32(lo.y, ab[2], as[2]); /* (g, k t + 4) */
        cv_split_tf32(hi.y, ab[3], as[3]); /* (g + 8, k t + 4) */
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float part[4] = {0, 0, 0, 0};
            if (X3) {
                cv_mma_tf32(part, as, bb[j]); /* the small terms first */
                cv_mma_tf32(part, ab, bs[j]);
            }
            cv_mma_tf32(part, ab, bb[j]);
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] += part[e];
        }
    }
}

template <bool BT, int BM, bool X3 = true>
CV_DEV void cv_tc_term(const cv_gpu_term &t, int64_t bat, int64_t m, int64_t n, int64_t row0,
                       int64_t col0, cv_tc_smem<BT, BM> &sm, float acc[BM / 32][4][4]) {
    cv_tc_loader<BT, BM> ld;
    ld.init(t, bat, m, n, row0, col0);
    const int64_t slabs = (t.k + 7) / 8;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wm = warp >> 2, wn = warp & 3, g = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int s = 0; s < CV_TC_STAGES - 1; s++) {
        if (s < slabs) ld.load(sm, s);
        cv_cp_async_commit(); /* empty groups keep the count */
    }
    for (int64_t s = 0; s < slabs; s++) {
        cv_cp_async_wait<CV_TC_STAGES - 2>(); /* slab s has landed (this thread's chunks) */
        __syncthreads(); /* ... everyone's; and slab s - 1's stage is free again */
        const int64_t next = s + CV_TC_STAGES - 1;
        if (next < slabs) ld.load(sm, (int)(next % CV_TC_STAGES));
        cv_cp_async_commit();
        cv_tc_slab<BT, BM, X3>(sm, (int)(s % CV_TC_STAGES), wm, wn, g, tq, acc);
    }
    cv_cp_async_wait<0>();
    __syncthreads(); /* the stages are free for the next term or batch */
}

/* The tile at (row0, col0) of batch bat summed over k-chunk s of `split` of every term
 * (cv_term_chunk) into acc; ends with a barrier: the stages are free again. */
template <bool BT, int BM, bool X3>
CV_DEV void cv_tc_tile(const cv_gpu_term *terms, int nterms, int64_t bat, int64_t m, int64_t n,
                       int64_t row0, int64_t col0, int s, int split, cv_tc_smem<BT, BM> &sm,
                       float (&acc)[BM / 32][4][4]) {
#pragma unroll
    for (int i = 0; i < BM / 32; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0;
    for (int t = 0; t < nterms; t++)
        cv_tc_term<BT, BM, X3>(cv_term_chunk<float>(terms[t], s, split), bat, m, n, row0, col0,
                               sm, acc);
}

/* A warp's finished BM/2 x 32 tile (from row r0, column c0) to the epilogue, 16
 * rows at a time through its 16 x 33 floats of `stage` (the k-loop's shared memory,
 * free once it is done): one call site of out, in a loop, where calling it from the
 * fragments would inline it BM/2 times (nvcc's time), and a row's 32 columns go out
 * from 32 lanes at once (coalesced stores). acc[i][j]: rows g, g, g + 8, g + 8;
 * columns 2t, 2t + 1, 2t, 2t + 1. */
template <int BM, class Out>
CV_DEV void cv_tc_out(const float (&acc)[BM / 32][4][4], float *stage, int64_t bat, int64_t m,
                      int64_t n, int64_t r0, int64_t c0, const Out &out) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
    float *mine = stage + warp * 16 * 33;
#pragma unroll 1
    for (int i = 0; i < BM / 32; i++) {
#pragma unroll
        for (int ii = 0; ii < BM / 32; ii++)
            if (ii == i) /* acc indexed by constants only: it stays in registers */
#pragma unroll
                for (int j = 0; j < 4; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        mine[(g + (e >> 1) * 8) * 33 + j * 8 + 2 * tq + (e & 1)] = acc[ii][j][e];
        __syncwarp();
        const int64_t c = c0 + lane;
#pragma unroll 1
        for (int r = 0; r < 16; r++)
            if (r0 + i * 16 + r < m && c < n) out(bat, r0 + i * 16 + r, c, mine[r * 33 + lane]);
        __syncwarp(); /* the next band overwrites it */
    }
    __syncthreads(); /* the stages are the next batch's */
}

/* grid.x: split x row tiles x column tiles of BM x 128, grid.y: batches
 * (grid-strided); block: CV_GEMM_THREADS. With split > 1 the partial sums go to
 * part (cv_term_chunk). */
template <bool BT, int BM, bool X3 = true, class Epi>
CV_DEV void cv_gemm_tc(const cv_gpu_term *terms, int nterms, int64_t m, int64_t n,
                       int64_t nbatch, int split, float *part, const Epi &epi) {
    const int64_t tiles_n = (n + 127) / 128, tiles = (m + BM - 1) / BM * tiles_n;
    const int64_t tile = blockIdx.x % tiles;
    const int s = (int)(blockIdx.x / tiles);
    const int64_t row0 = (tile / tiles_n) * BM, col0 = (tile % tiles_n) * 128;
    const cv_split_epi<float, Epi> out{epi, split > 1 ? part : nullptr, m, n, nbatch, s};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    for (int64_t c = col0; c < col0 + 128 && c < n; c += BM) { /* the tile in SIMT tiles */
        cv_gemm_tile<float, BM>(terms, nterms, m, n, nbatch, row0, c, s, split, out);
        __syncthreads(); /* the next one refills the same shared memory */
    }
#else
    __shared__ __align__(16) cv_tc_smem<BT, BM> sm;
    static_assert(sizeof(sm) >= CV_GEMM_THREADS / 32 * 16 * 33 * sizeof(float),
                  "cv_tc_out stages its bands in the k-loop's shared memory");
    const int warp = threadIdx.x >> 5, wm = warp >> 2, wn = warp & 3;
    for (int64_t bat = blockIdx.y; bat < nbatch; bat += gridDim.y) {
        float acc[BM / 32][4][4];
        cv_tc_tile<BT, BM, X3>(terms, nterms, bat, m, n, row0, col0, s, split, sm, acc);
        cv_tc_out<BM>(acc, reinterpret_cast<float *>(&sm), bat, m, n,
                      row0 + wm * (BM / 2), col0 + wn * 32, out);
    }
#endif
}

/* Split-K in a thread-block cluster (sm_90): the CV_TC_CLUSTER blocks of a cluster each
 * sum one BM x 128 tile (BM 64) over their k-chunk (cv_term_chunk, chunk = cluster rank),
 * then add the chunks up through distributed shared memory, each block the rows of its
 * own share, in chunk order (the same total every run), and hand them to the epilogue.
 * Where the tiles are too few, this replaces the partial sums in global memory and the
 * _ksum kernel that added them: GPT-2 at 1 x 128 ran four such sums, 30.6 of its 147 us
 * of kernels (H100, bench/gpu/h100_2026-12-05c/). The tile goes through in two halves of
 * 32 rows: a half (32 x 132 floats) fits the k-loop's stages, the whole would not. A
 * block's sums load four floats of every chunk before the first add: one scalar load
 * after another took 2-3% longer at GPT-2's 128-row GEMMs (bench/gpu/tcc_probe.cu). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CV_TC_CLUSTER_DIMS __cluster_dims__(CV_TC_CLUSTER, 1, 1)
/* Every thread of every block of the cluster arrives; the shared memory writes before
 * it are seen by the reads after it, in any block of the cluster. */
CV_DEV void cv_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
/* The four floats at p (16-byte aligned) in the shared memory of cluster block `rank`. */
CV_DEV float4 cv_cluster_ld4(const float *p, int rank) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p), r;
    float4 v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(rank));
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(r));
    return v;
}
#else
#define CV_TC_CLUSTER_DIMS /* sm_90 only: the host launches it there alone */
#endif

/* The cluster kernel's main loop: k-slabs of CV_TCC_KS (not cv_tc_term's 8) in
 * CV_TCC_STAGES stages of dynamic shared memory, the same 3xTF32 arithmetic in the same
 * order (the same bits). A block's k-chunk is short (GPT-2's 768 over 8 blocks: 96), and
 * with slabs of 8 its loop waited on a barrier and a cp.async group every 8 k with 24 k
 * of loads in flight; now the whole chunk is in flight at once. Rows of A are KS + 8
 * floats (a fragment's float2 loads hit 32 banks), of B 128 + CV_TC_BPAD. */
struct cv_tcc_slab {
    static constexpr int BM = 64, KS = CV_TCC_KS, LDA = KS + 8, LDB = 128 + CV_TC_BPAD;
    static constexpr int STAGE = BM * LDA + KS * LDB; /* floats a stage */
    static constexpr int NA = BM * KS / 4 / CV_GEMM_THREADS, NB = KS / 8; /* 16-byte chunks a thread */
    static constexpr int AROWS = CV_GEMM_THREADS / (KS / 4); /* A rows between a thread's chunks */
};
static_assert(CV_TCC_SMEM == CV_TCC_STAGES * cv_tcc_slab::STAGE * 4, "cuda_driver.h's size");
static_assert(CV_TCC_KS % 8 == 0 && cv_tcc_slab::NA >= 1, "whole chunks a thread");

/* Term t (one k-chunk) of batch bat added into acc: the tile at (row0, col0), B N-major. */
template <bool X3>
CV_DEV void cv_tcc_term(const cv_gpu_term &t, int64_t bat, int64_t m, int64_t n, int64_t row0,
                        int64_t col0, float *sm, float (&acc)[2][4][4]) {
    using D = cv_tcc_slab;
    const int tid = threadIdx.x;
    const int ar = tid / (D::KS / 4), ak = (tid % (D::KS / 4)) * 4, bk = tid / 32,
              bc = (tid % 32) * 4;
    /* each chunk's next source, advanced a slab at a time (the slabs load in order) */
    const float *a0 = reinterpret_cast<const float *>(t.a) + bat * t.a_bs + ak, *pa[D::NA];
    int a_rows = 0; /* bit u: A chunk u's row exists */
#pragma unroll
    for (int u = 0; u < D::NA; u++) {
        const int64_t r = row0 + ar + u * D::AROWS;
        a_rows |= (r < m) << u;
        pa[u] = r < m ? a0 + r * t.a_rs : a0;
    }
    const int64_t left = n - (col0 + bc);
    const int b_bytes = left <= 0 ? 0 : left >= 4 ? 16 : (int)left * 4;
    const float *pb = reinterpret_cast<const float *>(t.b) + bat * t.b_bs + bk * t.b_rs + bc +
                      (b_bytes ? col0 : 0);
    const int64_t b8 = 8 * t.b_rs, k = t.k, slabs = (k + D::KS - 1) / D::KS;
    int64_t ka = ak, kb = bk; /* the k of this thread's A and first B chunk in the next slab */
    auto load = [&](int st) { /* the next slab into stage st, zeros past m, n, k */
        float *a = sm + st * D::STAGE, *b = a + D::BM * D::LDA;
#pragma unroll
        for (int u = 0; u < D::NA; u++) {
            const int bytes = (a_rows >> u & 1) && ka < k ? (k - ka >= 4 ? 16 : (int)(k - ka) * 4) : 0;
            cv_cp_async16(a + (ar + u * D::AROWS) * D::LDA + ak, bytes ? pa[u] : a0, bytes);
            pa[u] += D::KS;
        }
#pragma unroll
        for (int u = 0; u < D::NB; u++) {
            const int bytes = kb + 8 * u < k ? b_bytes : 0;
            cv_cp_async16(b + (bk + 8 * u) * D::LDB + bc, bytes ? pb + u * b8 : pb, bytes);
        }
        pb += D::KS * t.b_rs;
        ka += D::KS;
        kb += D::KS;
    };
    const int warp = tid >> 5, lane = tid & 31, wm = warp >> 2, wn = warp & 3, g = lane >> 2,
              tq = lane & 3;
#pragma unroll
    for (int s = 0; s < CV_TCC_STAGES - 1; s++) {
        if (s < slabs) load(s);
        cv_cp_async_commit(); /* empty groups keep the count */
    }
    for (int64_t s = 0; s < slabs; s++) {
        cv_cp_async_wait<CV_TCC_STAGES - 2>(); /* slab s has landed (this thread's chunks) */
        __syncthreads(); /* ... everyone's; and slab s - 1's stage is free again */
        const int64_t next = s + CV_TCC_STAGES - 1;
        if (next < slabs) load((int)(next % CV_TCC_STAGES));
        cv_cp_async_commit();
        const float *a = sm + (s % CV_TCC_STAGES) * D::STAGE, *b = a + D::BM * D::LDA;
#pragma unroll 1
        for (int q = 0; q < D::KS / 8; q++) { /* cv_tc_slab's 8 k, at k 8q of the slab */
            uint32_t bb[4][2], bs[4][2];
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int c = wn * 32 + j * 8 + g;
                cv_split_tf32(b[(8 * q + 2 * tq) * D::LDB + c], bb[j][0], bs[j][0]);
                cv_split_tf32(b[(8 * q + 2 * tq + 1) * D::LDB + c], bb[j][1], bs[j][1]);
            }
#pragma unroll
            for (int i = 0; i < 2; i++) {
                const float *ra = a + (wm * 32 + i * 16 + g) * D::LDA + 8 * q + 2 * tq;
                const float2 lo = *reinterpret_cast<const float2 *>(ra);
                const float2 hi = *reinterpret_cast<const float2 *>(ra + 8 * D::LDA);
                uint32_t ab[4], as[4];
                cv_split_tf32(lo.x, ab[0], as[0]);
                cv_split_tf32(hi.x, ab[1], as[1]);
                cv_split_tf32(lo.y, ab[2], as[2]);
                cv_split_tf32(hi.y, ab[3], as[3]);
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    float part[4] = {0, 0, 0, 0};
                    if (X3) {
                        cv_mma_tf32(part, as, bb[j]); /* the small terms first */
                        cv_mma_tf32(part, ab, bs[j]);
                    }
                    cv_mma_tf32(part, ab, bb[j]);
#pragma unroll
                    for (int e = 0; e < 4; e++) acc[i][j][e] += part[e];
                }
            }
        }
    }
    cv_cp_async_wait<0>();
    __syncthreads(); /* the stages are free for the next term, the sums or the next batch */
}

/* grid.x: CV_TC_CLUSTER x tiles of 64 x 128 (clusters along x), grid.y: batches
 * (grid-strided, the same for every block of a cluster); block: CV_GEMM_THREADS; dynamic
 * shared memory: CV_TCC_SMEM bytes. B N-major (unit column stride). */
template <bool X3, class Epi>
CV_DEV void cv_gemm_tc_cluster(const cv_gpu_term *terms, int nterms, int64_t m, int64_t n,
                               int64_t nbatch, const Epi &epi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int BM = 64, C = CV_TC_CLUSTER, W = 128 + 4; /* staged rows: 132 floats */
    constexpr int SHARE = 32 / C; /* rows of a half that each block adds up */
    const int s = (int)(blockIdx.x % C); /* the cluster rank: clusters of C along x */
    const int64_t tiles_n = (n + 127) / 128, tile = blockIdx.x / C;
    const int64_t row0 = (tile / tiles_n) * BM, col0 = (tile % tiles_n) * 128;
    extern __shared__ __align__(16) float stage[];
    static_assert(CV_TCC_SMEM >= 32 * W * sizeof(float), "a half tile fits the stages");
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wm = warp >> 2, wn = warp & 3, g = lane >> 2, tq = lane & 3;
    for (int64_t bat = blockIdx.y; bat < nbatch; bat += gridDim.y) {
        float acc[BM / 32][4][4] = {};
        for (int t = 0; t < nterms; t++)
            cv_tcc_term<X3>(cv_term_chunk<float>(terms[t], s, C), bat, m, n, row0, col0, stage,
                            acc);
#pragma unroll
        for (int half = 0; half < 2; half++) {
            if (wm == half) /* rows i * 16 + g (+ 8), columns wn * 32 + j * 8 + 2 tq (+ 1) */
#pragma unroll
                for (int i = 0; i < BM / 32; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++)
#pragma unroll
                        for (int e = 0; e < 4; e++)
                            stage[(i * 16 + g + (e >> 1) * 8) * W + wn * 32 + j * 8 + 2 * tq +
                                  (e & 1)] = acc[i][j][e];
            cv_cluster_sync();
#pragma unroll 1
            for (int e = threadIdx.x; e < SHARE * 32; e += CV_GEMM_THREADS) {
                const int r = s * SHARE + e / 32, c = (e % 32) * 4;
                float4 part[C]; /* every chunk's four floats loaded before any is added */
#pragma unroll
                for (int q = 0; q < C; q++) part[q] = cv_cluster_ld4(stage + r * W + c, q);
                float v[4] = {0, 0, 0, 0};
#pragma unroll
                for (int q = 0; q < C; q++)
                    v[0] += part[q].x, v[1] += part[q].y, v[2] += part[q].z, v[3] += part[q].w;
                const int64_t i = row0 + half * 32 + r;
#pragma unroll
                for (int u = 0; u < 4; u++)
                    if (i < m && col0 + c + u < n) epi(bat, i, col0 + c + u, v[u]);
            }
            cv_cluster_sync(); /* every block has read this half: the stages are free */
        }
    }
#endif
}

#endif
