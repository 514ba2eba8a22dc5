/* The dots kernel (see gemm_kernels.h) of one ISA and data type: part of
 * gemm_kern_body.h, which includes it with the vocabulary defined. */

/* The prefetch distance in blocks of DJ columns. */
#define DOTS_PF 2

/* One step of VL (or, when part, n < VL) k indices of the dots kernel: r
 * rows of A (packed: the r vectors at ap, VL apart) against DJ columns of B. */
CV_TARGET static inline __attribute__((always_inline)) void
dots_step(int r, int part, int n, V acc[4][DJ], const T *ap, const T *const *bcol, int64_t p) {
    V bv[DJ];
#pragma GCC unroll 8
    for (int j = 0; j < DJ; j++) {
        bv[j] = part ? V_LOADU_PART(bcol[j] + p, n) : V_LOADU(bcol[j] + p);
        V_KEEP(bv[j]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < r; i++) {
        V av = V_LOAD(ap + i * VL);
        V_KEEP(av);
#pragma GCC unroll 8
        for (int j = 0; j < DJ; j++)
            acc[i][j] = V_FMA(av, bv[j], acc[i][j]);
    }
}

/* c[i][j] (+)= arow[i] . bcol[j] over k for i < r (a constant after
 * inlining) and j < jn; B columns past jn repeat the last one, unused. The
 * lines of the npf (a constant, at most 2) columns pf[] at the same k are
 * prefetched on the way. */
CV_TARGET static inline __attribute__((always_inline)) void
dots_block(int r, int jn, int64_t k, const T *ap, const T *const *bcol,
           const T *const *pf, int npf, T *c, int64_t ldc, int accumulate) {
    V acc[4][DJ];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
#pragma GCC unroll 8
        for (int j = 0; j < DJ; j++)
            acc[i][j] = V_ZERO();
    int64_t p = 0;
    for (; p + VL <= k; p += VL) {
#pragma GCC unroll 3
        for (int j = 0; j < npf; j++)
            __builtin_prefetch(pf[j] + p, 0, 2);
        dots_step(r, 0, VL, acc, ap + 4 * p, bcol, p);
    }
    if (p < k)
        dots_step(r, 1, (int)(k - p), acc, ap + 4 * p, bcol, p);
#ifdef V_DOTS_SUMS
    V_DOTS_SUMS(r, jn, acc, c, ldc, accumulate);
#else
    for (int i = 0; i < r; i++)
        for (int j = 0; j < jn; j++) {
            T sum = V_HSUM(acc[i][j]);
            c[i * ldc + j] = accumulate ? c[i * ldc + j] + sum : sum;
        }
#endif
}

#define DOTS_CASE(R)                                                                     \
    case R:                                                                              \
        if (npf == 0)                                                                    \
            dots_block(R, jn, kb, ai, bcol, pf, 0, ci, ldc, acc);                       \
        else if (npf == 1)                                                               \
            dots_block(R, jn, kb, ai, bcol, pf, 1, ci, ldc, acc);                       \
        else if (npf == 2 || DJ < 3) /* pf[] has DJ entries */                          \
            dots_block(R, jn, kb, ai, bcol, pf, 2, ci, ldc, acc);                       \
        else                                                                             \
            dots_block(R, jn, kb, ai, bcol, pf, 3, ci, ldc, acc);                       \
        break;

/* A's rows [0, m) at k indices [0, kb) into ap: per block of 4 rows, per VL
 * k indices, the rows' vectors one after another (zeros past kb). */
CV_TARGET static void dots_pack_a(int64_t m, int64_t kb, const T *a, int64_t a_rs,
                                  T *restrict ap) {
    int64_t kv = (kb + VL - 1) / VL;
    for (int64_t i = 0; i < m; i++) {
        T *dst = ap + (i / 4 * kv * 4 + i % 4) * VL;
        const T *src = a + i * a_rs;
        int64_t p = 0;
        for (; p + VL <= kb; p += VL, dst += 4 * VL)
            V_STORE(dst, V_LOADU(src + p));
        if (p < kb)
            V_STORE(dst, V_LOADU_PART(src + p, (int)(kb - p)));
    }
}

/* The dots kernel, for B with unit row stride (B = W.T with W row-major)
 * and A with unit column stride: each output is a dot product of two
 * contiguous rows, and B is read as DJ sequential streams, once per 4 rows
 * of A (the DJ columns stay in L1 across the row blocks). A is packed first
 * (dots_pack_a, into the thread's cv_dots_ws) in k blocks of at most
 * CV_DOTS_WS bytes, so a step reads its rows of A from one contiguous run:
 * in place, rows 12 KB apart (k = 3072) all fall into the same L1 sets, as
 * B's columns do. Whole rows of A (16 x 3072 floats, from L2) beat blocks
 * that fit L1: each block is one more pass over B's rows in pieces and one
 * more horizontal sum per output (Zen 4, two threads, bench/gemm_ab.py
 * --wt, the BERT layer's 16 x 768 x 768, 16 x 768 x 3072, 16 x 3072 x 768
 * in turn: 1,078 -> 919 us at DJ = 4; A in blocks of at most 64 KB, so
 * k = 3072 in three, only 1,006 -> 954). With two or more row
 * blocks, the columns DOTS_PF blocks ahead are prefetched, a share in each
 * row block so the loads go out evenly: the hardware prefetchers lose each
 * 3 KB run of B that a 768-long row is, while the row blocks compute (8 x
 * 768 x 16384, B from memory, two threads: 3.2 -> 1.6 ms). Up to 3 a row
 * block, so two row blocks (5 to 8 rows) cover all 6 columns, not 4 of
 * them (8 and 6 rows x BERT's three shapes, B in L3: 0.96x, 0.86x the time;
 * 8 x 768 x 16384 0.93x; bert_stack_1x8 0.985x, memory-bound); with one row
 * block it costs more than it brings (3 and 5 x 768 x 512 from L3, one
 * thread: 0.85x the speed). Into L2 (prefetcht1), not L1: the L1's few miss
 * buffers held the prefetches back (Zen 4, 2 threads, 8 x 768 rows of B,
 * bench/cpu_dots_prefetch_probe.c: 96 MB from memory 25-27 -> 32-35 GB/s,
 * a plain read 33-66; 16 MB in L3 50 -> 52, the FMA bound's side;
 * bench/ab_native.py bert_stack_1x8 --turns 8: 4,579 -> 3,326 us a call,
 * bert_1x16 0.99x). */
CV_TARGET static void dots_kernel(int64_t m, int64_t k, const T *a, int64_t a_rs, const T *b,
                                  int64_t b_cs, int64_t ncols, T *c, int64_t ldc,
                                  int accumulate) {
    T *ap = cv_dots_ws();
    int64_t kmax = CV_DOTS_WS / ((int64_t)sizeof(T) * ((m + 3) / 4 * 4)) / VL * VL;
    int64_t nkb = (k + kmax - 1) / kmax;
    int64_t kb0 = nkb ? ((k + nkb - 1) / nkb + VL - 1) / VL * VL : 0; /* equal blocks */
    int64_t groups = (m + 3) / 4;
    for (int64_t p0 = 0; p0 < k; p0 += kb0, a += kb0, b += kb0) {
        int64_t kb = k - p0 < kb0 ? k - p0 : kb0;
        int acc = accumulate || p0 > 0;
        dots_pack_a(m, kb, a, a_rs, ap);
        for (int64_t j0 = 0; j0 < ncols; j0 += DJ) {
            int jn = ncols - j0 < DJ ? (int)(ncols - j0) : DJ;
            const T *bcol[DJ];
            for (int j = 0; j < DJ; j++)
                bcol[j] = b + (j0 + (j < jn ? j : jn - 1)) * b_cs;
            for (int64_t i0 = 0; i0 < m; i0 += 4) {
                const T *ai = ap + i0 * ((kb + VL - 1) / VL * VL), *pf[DJ];
                int npf = 0; /* row block g prefetches the columns j = g mod groups */
                for (int64_t j = i0 / 4; groups > 1 && j < DJ && npf < 3; j += groups) {
                    int64_t jp = j0 + DOTS_PF * DJ + j;
                    if (jp < ncols)
                        pf[npf++] = b + jp * b_cs;
                }
                T *ci = c + i0 * ldc + j0;
                switch (m - i0 < 4 ? (int)(m - i0) : 4) {
                    DOTS_CASE(1)
                    DOTS_CASE(2)
                    DOTS_CASE(3)
                    DOTS_CASE(4)
                }
            }
        }
    }
}

#undef DOTS_CASE
#undef DOTS_PF
