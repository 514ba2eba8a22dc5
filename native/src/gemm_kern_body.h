/* The bodies of one ISA's GEMM kernels for one data type (see
 * gemm_kernels.h), written once over a small vector vocabulary. An ISA file
 * defines the vocabulary and the sizes, then includes this file (which
 * undefines the vocabulary, so the next type defines it afresh):
 *
 *   T, V, VL            element type, vector type, lanes per vector
 *   V_LOAD, V_LOADU     aligned / unaligned load; V_LOADU_PART(p, n) loads n
 *                       lanes (0..VL) and zeroes the rest without reading past
 *   V_STORE, V_STOREU   aligned / unaligned store; V_STOREU_PART(p, v, n)
 *                       stores lanes [0, n) only
 *   V_SET1, V_ZERO, V_ADD, V_FMA(a, b, c) = a * b + c, V_HSUM (sum of lanes)
 *   V_ALIGN             optional: the alignment in bytes B loads want; rows
 *                       of B that all start equally misaligned are then read
 *                       from the first aligned column on (a masked lead first)
 *   V_KEEP(v)           optional: keeps a loaded B vector in a register, so
 *                       the compiler does not fold the load into each FMA
 *                       that uses it (one load per row of A instead of one)
 *   CV_TARGET           the target attribute of every function here
 *   MR, NV              packed kernel: MR rows x NV vectors of accumulators
 *   RMAX, RV            rows kernel: up to RMAX (= 4) rows x RV (<= 4) vectors
 *   DJ                  dots kernel: up to 4 rows x DJ (<= 8) columns
 *   MC, NC, KC          block sizes for the driver
 *   TSFX, ISA           type and ISA suffixes: defines cv_kernels_TSFX_ISA
 *
 * Accumulators live in arrays indexed by constants after full unrolling,
 * which GCC and Clang keep in registers (checked: no spills at -O3).
 */

#define CV_GLUE3_(a, b, c) a##_##b##_##c
#define CV_GLUE3(a, b, c) CV_GLUE3_(a, b, c)
#define CV_GLUE2_(a, b) a##_##b
#define CV_GLUE2(a, b) CV_GLUE2_(a, b)
#define packed_kernel CV_GLUE3(packed_kernel, TSFX, ISA)
#define packed_rows CV_GLUE3(packed_rows, TSFX, ISA)
#define packed_short CV_GLUE3(packed_short, TSFX, ISA)
#define rows_update CV_GLUE3(rows_update, TSFX, ISA)
#define rows_pass CV_GLUE3(rows_pass, TSFX, ISA)
#define rows_blocks CV_GLUE3(rows_blocks, TSFX, ISA)
#define rows_wide CV_GLUE3(rows_wide, TSFX, ISA)
#define stream_step CV_GLUE3(stream_step, TSFX, ISA)
#define rows_stream CV_GLUE3(rows_stream, TSFX, ISA)
#define rows_lead CV_GLUE3(rows_lead, TSFX, ISA)
#define rows_kernel CV_GLUE3(rows_kernel, TSFX, ISA)
#define pack_b_full CV_GLUE3(pack_b_full, TSFX, ISA)
#define dots_step CV_GLUE3(dots_step, TSFX, ISA)
#define dots_block CV_GLUE3(dots_block, TSFX, ISA)
#define dots_kernel CV_GLUE3(dots_kernel, TSFX, ISA)
#define dots_pack_a CV_GLUE3(dots_pack_a, TSFX, ISA)

#ifndef V_KEEP
#define V_KEEP(v) ((void)0)
#endif
#define NR (NV * VL)
#ifndef MR_SHORT
#define MR_SHORT (MR / 3 > 0 ? MR / 3 : 1)
#endif
#define RW (RV * VL)
/* Rows of B per block of the rows kernel (measured on Zen 5, m = 1..4: 8 beat
 * 4/16/32 for B streamed from L3 in long rows). While the first row group of A
 * sweeps a block, the next block's rows at the same columns are prefetched
 * into L2: one block's sweep ahead, which the weights of a decode step of
 * several sequences need when they come from memory (Zen 5, 2 threads, GPT-2's
 * four weights in turn after a 48 MiB write: 4 rows 938/767 -> 651/633 us,
 * 8 rows 1,070/931 -> 768/821, against 2 rows ahead into L1; the decode step
 * of 8 sequences 1,554-1,619 -> 1,359-1,479 us). Not for 1 or 2 rows of A in
 * 8-row blocks: there the hardware prefetchers alone stream faster (in-process
 * A/B, 2 threads: 1x768x3072, 1x1024x2048, 1x512x2048, 1x256x4096, 2x768x3072
 * 0.84-0.97x the time). */
#define RG 8
/* Rows of B per block with two or more full row groups of A (m >= 2 RMAX): the
 * groups share each block of B, and the sums are loaded and stored once per block
 * and group, so longer blocks than RG pay (Zen 5, 2 threads, in-process A/B, 32
 * against 8: 16x768x3072 0.80x, 8x3072x768 0.72x the time; 5 and 6 rows 1.10x,
 * 7 rows 0.98x, so not there; bench/cpu_small_m_ab.txt). 16 against 32 (Zen 4, 2
 * threads, three interleaved turns over 6 weights from memory): 8x768x3072 0.78x,
 * 16x768x3072 0.91x, 8x768x2304 0.85x, 8 and 16x3072x768 0.93-0.94x, 32 rows
 * 0.96-1.00x: 32 row streams at once outrun the prefetchers there. */
#define RG_MANY 16
/* Rows per block when B comes from cache (at most RG_CACHED bytes) or, for
 * up to RMAX rows of A, in short runs (at most RG_SHORT bytes per row): the
 * sums' loads and stores and the loop setup once per RG rows then cost more
 * than the extra row streams (Zen 5, in-process A/B: 32x128x64 0.74-0.77x
 * the time, 16x2048x128 0.75x, 1x512x1000 0.76-0.80x, 1x3072x768 on 2
 * threads 0.82-0.89x; 1x768x3072 with 6 KB runs 1.2-1.3x, so not there). */
#define RG_WIDE 64
#define RG_CACHED ((int64_t)1 << 20)
#define RG_SHORT ((int64_t)3 << 10)
/* Rows of B per step of rows_stream, and how far ahead it prefetches. */
#define SR 8
/* The first `rows` rows of the MR x NR tile (rows a constant after inlining). */
CV_TARGET static inline __attribute__((always_inline)) void
packed_rows(int64_t kc, const T *restrict a, const T *restrict b, T *restrict c, int64_t ldc,
            int accumulate, const cv_gemm_pf *pf, const int rows) {
    const char *pf0 = pf[0].p, *pf1 = pf[1].p;
    int64_t n0 = pf[0].lines, n1 = pf[1].lines;
    V acc[MR][NV];
#pragma GCC unroll 16
    for (int i = 0; i < rows; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            acc[i][v] = V_ZERO();
    for (int64_t p = 0; p < kc; p++) {
        if (p < n0)
            __builtin_prefetch(pf0 + 64 * p, 0, 3);
        if (p < n1)
            __builtin_prefetch(pf1 + 64 * p, 0, 3);
        V bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            bv[v] = V_LOAD(b + v * VL);
#pragma GCC unroll 16
        for (int i = 0; i < rows; i++) {
            V ai = V_SET1(a[i]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                acc[i][v] = V_FMA(ai, bv[v], acc[i][v]);
        }
        a += MR;
        b += NR;
    }
#pragma GCC unroll 16
    for (int i = 0; i < rows; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            T *dst = c + i * ldc + v * VL;
            V_STOREU(dst, accumulate ? V_ADD(acc[i][v], V_LOAD(dst)) : acc[i][v]);
        }
}

CV_TARGET static void packed_kernel(int64_t kc, const T *restrict a, const T *restrict b,
                                    T *restrict c, int64_t ldc, int accumulate,
                                    const cv_gemm_pf *pf) {
    packed_rows(kc, a, b, c, ldc, accumulate, pf, MR);
}

/* A last panel of at most MR_SHORT real rows (m = 256 with MR = 12 leaves 4): the
 * full kernel would spend two thirds of its FMAs on padding. */
CV_TARGET static void packed_short(int64_t kc, const T *restrict a, const T *restrict b,
                                   T *restrict c, int64_t ldc, int accumulate,
                                   const cv_gemm_pf *pf) {
    packed_rows(kc, a, b, c, ldc, accumulate, pf, MR_SHORT);
}

/* A full B panel from unit-column-stride B: k rows of NR elements, row
 * stride rs (a vector copy; memcpy per row costs a call each). */
CV_TARGET static void pack_b_full(int64_t k, const T *b, int64_t rs, T *restrict dst) {
    for (int64_t p = 0; p < k; p++, b += rs, dst += NR)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            V_STORE(dst + v * VL, V_LOADU(b + v * VL));
}

/* c[i][0, nv * VL) += sum over g rows p of a[i, p] * b[p][0, nv * VL) for
 * i < r, with r and nv (1 or RV) constants after inlining; `full` says
 * all those columns are real, else only cnt[v] lanes of vector v are (the
 * others load as zeros and are not stored). With pf > 0, the rows pf further
 * down at these columns are prefetched into L2. */
CV_TARGET static inline __attribute__((always_inline)) void
rows_update(int r, int nv, int pf, int full, const int *cnt, int64_t g, int64_t k_left,
            const T *a, int64_t a_rs, int64_t a_cs, const T *b, int64_t b_rs, T *c,
            int64_t ldc) {
    V acc[RMAX][RV];
#pragma GCC unroll 16
    for (int i = 0; i < r; i++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            acc[i][v] = full ? V_LOADU(c + i * ldc + v * VL)
                             : V_LOADU_PART(c + i * ldc + v * VL, cnt[v]);
    for (int64_t p = 0; p < g; p++, b += b_rs, a += a_cs) {
        if (pf && p + pf < k_left)
            for (size_t line = 0; line < nv * VL * sizeof(T); line += 64)
                __builtin_prefetch((const char *)(b + pf * b_rs) + line, 0, 2);
        V bv[RV];
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            bv[v] = full ? V_LOADU(b + v * VL) : V_LOADU_PART(b + v * VL, cnt[v]);
            V_KEEP(bv[v]);
        }
#pragma GCC unroll 16
        for (int i = 0; i < r; i++) {
            V ai = V_SET1(a[i * a_rs]);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++)
                acc[i][v] = V_FMA(ai, bv[v], acc[i][v]);
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < r; i++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            if (full)
                V_STOREU(c + i * ldc + v * VL, acc[i][v]);
            else
                V_STOREU_PART(c + i * ldc + v * VL, acc[i][v], cnt[v]);
        }
}

/* r rows x all columns for g rows of B: the first `lead` (< VL) columns
 * masked, then column groups of RW from there, the last one masked. */
CV_TARGET static inline __attribute__((always_inline)) void
rows_pass(int r, int pf, int64_t g, int64_t k_left, int lead, int64_t ncols, const T *a,
          int64_t a_rs, int64_t a_cs, const T *b, int64_t b_rs, T *c, int64_t ldc) {
    if (lead)
        rows_update(r, 1, pf, 0, &lead, g, k_left, a, a_rs, a_cs, b, b_rs, c, ldc);
    int64_t j = lead;
    for (; j + RW <= ncols; j += RW)
        rows_update(r, RV, pf, 1, NULL, g, k_left, a, a_rs, a_cs, b + j, b_rs, c + j, ldc);
    if (j < ncols) {
        int cnt[RV];
        for (int v = 0; v < RV; v++) {
            int64_t left = ncols - j - v * VL;
            cnt[v] = left <= 0 ? 0 : left >= VL ? VL : (int)left;
        }
        rows_update(r, RV, pf, 0, cnt, g, k_left, a, a_rs, a_cs, b + j, b_rs, c + j, ldc);
    }
}

#define ROWS_CASE(R)                                                                     \
    case R:                                                                              \
        rows_pass(R, i0 == 0 && (R > 2 || rg > RG) ? (int)rg : 0, g, k - p0, lead, ncols, \
                  ai, a_rs, a_cs, bp, b_rs,                                              \
                  c + i0 * ldc, ldc);                                                    \
        break;

/* Blocks of rg rows of B over all of k (rg a constant after inlining, so
 * the block loops unroll; streaming B from L3 needs that). */
CV_TARGET static inline __attribute__((always_inline)) void
rows_blocks(int64_t rg, int64_t m, int64_t k, const T *a, int64_t a_rs, int64_t a_cs,
            const T *b, int64_t b_rs, int lead, int64_t ncols, T *c, int64_t ldc) {
    for (int64_t p0 = 0; p0 < k; p0 += rg) {
        int64_t g = k - p0 < rg ? k - p0 : rg;
        const T *bp = b + p0 * b_rs;
        for (int64_t i0 = 0; i0 < m; i0 += RMAX) {
            const T *ai = a + i0 * a_rs + p0 * a_cs;
            switch (m - i0 < RMAX ? (int)(m - i0) : RMAX) {
                ROWS_CASE(1)
                ROWS_CASE(2)
                ROWS_CASE(3)
                ROWS_CASE(4)
#if RMAX != 4
#error "rows_kernel: cases for 1..RMAX"
#endif
            }
        }
    }
}

/* rows_blocks in blocks of RG_WIDE rows. */
CV_TARGET static __attribute__((noinline)) void
rows_wide(int64_t m, int64_t k, const T *a, int64_t a_rs, int64_t a_cs, const T *b, int64_t b_rs,
          int lead, int64_t ncols, T *c, int64_t ldc) {
    rows_blocks(RG_WIDE, m, k, a, a_rs, a_cs, b, b_rs, lead, ncols, c, ldc);
}

/* c[0, ncols) += sum over g (a constant) rows p of a[p * a_cs] * b[p][..]:
 * per vector of columns (the last `tail` lanes masked), the sum is loaded
 * from c, the g rows added, and stored back, so each row's run of B is
 * read from start to end. With pf, the same columns SR rows further down
 * are prefetched. c stays aligned and B does not: aligning B's loads
 * instead (rows_lead) splits every store to c over two lines: about 1.4x
 * the time for 1x3072x768. */
CV_TARGET static inline __attribute__((always_inline)) void
stream_step(int g, int pf, const T *a, int64_t a_cs, const T *b, int64_t b_rs, int64_t nfull,
            int tail, T *c) {
    V av[SR];
#pragma GCC unroll 8
    for (int i = 0; i < g; i++)
        av[i] = V_SET1(a[i * a_cs]);
    for (int64_t j = 0; j < nfull * VL; j += VL) {
#pragma GCC unroll 8
        for (int i = 0; pf && i < g; i++)
            __builtin_prefetch(b + (i + SR) * b_rs + j, 0, 2); /* into L2: gemm_reuse.h */
        V sum = V_LOAD(c + j);
#pragma GCC unroll 8
        for (int i = 0; i < g; i++)
            sum = V_FMA(av[i], V_LOADU(b + i * b_rs + j), sum);
        V_STORE(c + j, sum);
    }
    if (tail) {
        int64_t j = nfull * VL;
        V sum = V_LOAD(c + j);
#pragma GCC unroll 8
        for (int i = 0; i < g; i++)
            sum = V_FMA(av[i], V_LOADU_PART(b + i * b_rs + j, tail), sum);
        V_STORE(c + j, sum); /* lanes past ncols are scratch */
    }
}

/* The rows kernel for one row of A and B streamed from L3 in short runs:
 * SR rows of B at a time, each row's run read whole (SR streams), and
 * every line prefetched SR rows ahead. rows_wide's RG_WIDE interleaved
 * streams fall behind there (Zen 5, 2 threads, in-process A/B, median):
 * 1x3072x768 71 -> 58 us, 1x2048x1024 71 -> 54, 1x4096x512 57 -> 50, and
 * the FFN's 1x768x3072 then 1x3072x768 149 -> 135 us. For longer runs
 * rows_blocks stays faster (1x768x3072: 57 vs 64 us) unless the rows are
 * contiguous. Contiguous rows are one sequential run that the hardware
 * prefetchers follow alone from the L3: no prefetch there (Zen 4, k split
 * on 2 threads, 1x3072x768 0.72x the time, 1x768x768 0.63x) unless B is
 * `cold` (gemm_reuse.h), out of the L3 since its last use. The prefetches go
 * to L2: into L1 they gained nothing from memory (the decode step 1.02x). */
CV_TARGET static __attribute__((noinline)) void
rows_stream(int64_t k, const T *a, int64_t a_cs, const T *b, int64_t b_rs, int64_t ncols, T *c,
            int cold) {
    int64_t nfull = ncols / VL;
    int tail = (int)(ncols - nfull * VL);
    int64_t p = 0;
    for (; (b_rs != ncols || cold) && p + 2 * SR <= k; p += SR)
        stream_step(SR, 1, a + p * a_cs, a_cs, b + p * b_rs, b_rs, nfull, tail, c);
    for (; p + SR <= k; p += SR)
        stream_step(SR, 0, a + p * a_cs, a_cs, b + p * b_rs, b_rs, nfull, tail, c);
    for (; p < k; p++)
        stream_step(1, 0, a + p * a_cs, a_cs, b + p * b_rs, b_rs, nfull, tail, c);
}

/* Columns before the first V_ALIGN-aligned one when every row of B starts
 * equally misaligned (NumPy puts large arrays 16 bytes past a page start)
 * and the rows are long enough to pay for the extra masked group, else 0. */
static inline int rows_lead(const T *b, int64_t b_rs, int64_t ncols) {
    int lead = 0;
#ifdef V_ALIGN
    uintptr_t mis = (uintptr_t)b % V_ALIGN;
    if (ncols >= 4 * RW && mis % sizeof(T) == 0 && b_rs * (int64_t)sizeof(T) % V_ALIGN == 0)
        lead = (int)((V_ALIGN - mis) % V_ALIGN / sizeof(T));
#endif
    (void)b, (void)b_rs;
    return lead < ncols ? lead : (int)ncols;
}

/* The rows kernel: B is read in blocks of RG (or RG_WIDE) rows, each as
 * that many sequential streams across the columns, so hardware
 * prefetchers see plain streams; the m x ncols sums stay in c (L1/L2)
 * between blocks. One row of A over short runs or contiguous rows takes
 * rows_stream (Zen 4, k split on 2 threads: 1x768x2304 0.80x the time of
 * RG-row blocks, 1x768x3072 0.91x). */
CV_TARGET static void rows_kernel(int64_t m, int64_t k, const T *a, int64_t a_rs, int64_t a_cs,
                                  const T *b, int64_t b_rs, int64_t ncols, T *c, int64_t ldc,
                                  int accumulate, int cold) {
    int64_t width = (ncols + RW - 1) / RW * RW;
    for (int64_t i = 0; i < m && !accumulate; i++)
        memset(c + i * ldc, 0, (size_t)width * sizeof(T));
    int64_t run = ncols * (int64_t)sizeof(T);
    int lead = rows_lead(b, b_rs, ncols);
    if (m == 1 && (run <= RG_SHORT || b_rs == ncols) && k * run > RG_CACHED)
        rows_stream(k, a, a_cs, b, b_rs, ncols, c, cold);
    else if (k * run <= RG_CACHED || (m <= RMAX && run <= RG_SHORT))
        rows_wide(m, k, a, a_rs, a_cs, b, b_rs, lead, ncols, c, ldc);
    else if (m >= 2 * RMAX)
        rows_blocks(RG_MANY, m, k, a, a_rs, a_cs, b, b_rs, lead, ncols, c, ldc);
    else
        rows_blocks(RG, m, k, a, a_rs, a_cs, b, b_rs, lead, ncols, c, ldc);
}

#include "gemm_dots_body.h"

const CV_GLUE2(cv_kernels, TSFX) CV_GLUE3(cv_kernels, TSFX, ISA) = {
    MR, NR, MC, NC, KC, RW, MR_SHORT, packed_kernel, packed_short, pack_b_full, rows_kernel, dots_kernel,
};

#undef packed_kernel
#undef packed_rows
#undef packed_short
#undef MR_SHORT
#undef rows_update
#undef rows_pass
#undef rows_blocks
#undef rows_wide
#undef stream_step
#undef rows_stream
#undef SR
#undef rows_lead
#undef rows_kernel
#undef pack_b_full
#undef dots_step
#undef dots_block
#undef dots_kernel
#undef dots_pack_a
#undef V_DOTS_SUMS
#undef V_KEEP
#undef NR
#undef RW
#undef RG
#undef RG_WIDE
#undef RG_CACHED
#undef RG_SHORT
#undef ROWS_CASE
#undef T
#undef TSFX
#undef V
#undef VL
#undef V_LOAD
#undef V_LOADU
#undef V_LOADU_PART
#undef V_STOREU_PART
#undef V_STOREU
#undef V_STORE
#undef V_SET1
#undef V_ZERO
#undef V_ADD
#undef V_FMA
#undef V_HSUM
