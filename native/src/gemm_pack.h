/* Packing into the micro-kernel's panels, for one element type T (included
 * by gemm_impl.h with T, TI (the integer of T's size) and FN defined). A panel is p-major: element (i, p)
 * of an A panel sits at p * mr + i, element (p, j) of a B panel at
 * p * nr + j; rows/columns past the matrix are zero so the kernels never
 * need edge cases. Both loops read the source along its unit stride when it
 * has one. */

typedef T FN(v4) __attribute__((vector_size(4 * sizeof(T))));

#if defined(__clang__)
#define CV_SHUFFLE(x, y, a, b, c, d) __builtin_shufflevector(x, y, a, b, c, d)
#else
#define CV_SHUFFLE(x, y, a, b, c, d) __builtin_shuffle(x, y, (FN(idx4)){a, b, c, d})
#endif
typedef TI FN(idx4) __attribute__((vector_size(4 * sizeof(T))));

/* Rows [i, i + 4) x columns [p, p + 4) of row-major A, transposed into the
 * panel: four 4-wide loads, eight shuffles, four 4-wide stores instead of
 * sixteen scalar moves. */
static inline void FN(pack_a_4x4)(const T *a, int64_t rs, int mr, T *dst) {
    FN(v4) r[4], t[4];
    for (int q = 0; q < 4; q++)
        memcpy(&r[q], a + q * rs, sizeof r[q]);
    t[0] = CV_SHUFFLE(r[0], r[1], 0, 4, 1, 5);
    t[1] = CV_SHUFFLE(r[0], r[1], 2, 6, 3, 7);
    t[2] = CV_SHUFFLE(r[2], r[3], 0, 4, 1, 5);
    t[3] = CV_SHUFFLE(r[2], r[3], 2, 6, 3, 7);
    r[0] = CV_SHUFFLE(t[0], t[2], 0, 1, 4, 5);
    r[1] = CV_SHUFFLE(t[0], t[2], 2, 3, 6, 7);
    r[2] = CV_SHUFFLE(t[1], t[3], 0, 1, 4, 5);
    r[3] = CV_SHUFFLE(t[1], t[3], 2, 3, 6, 7);
    for (int q = 0; q < 4; q++)
        memcpy(dst + q * mr, &r[q], sizeof r[q]);
}

/* rows x k of row-major A (unit column stride) into a panel mr wide: 4 x 4
 * blocks by shuffles, the rest element by element. */
static void FN(pack_a_rows)(const T *a, int64_t rs, int64_t rows, int64_t k, int mr,
                            T *restrict dst) {
    int64_t i0 = 0, p0 = k / 4 * 4;
    for (; i0 + 4 <= rows; i0 += 4)
        for (int64_t p = 0; p < p0; p += 4)
            FN(pack_a_4x4)(a + i0 * rs + p, rs, mr, dst + p * mr + i0);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t p = i < i0 ? p0 : 0; p < k; p++)
            dst[p * mr + i] = a[i * rs + p];
}

/* rows x k of A (row stride rs, column stride cs) into a panel mr wide. */
static void FN(pack_a)(const T *a, int64_t rs, int64_t cs, int64_t rows, int64_t k, int mr,
                       T *restrict dst) {
    if (cs == 1) {
        FN(pack_a_rows)(a, rs, rows, k, mr, dst);
    } else {
        for (int64_t p = 0; p < k; p++)
            for (int64_t i = 0; i < rows; i++)
                dst[p * mr + i] = a[i * rs + p * cs];
    }
    for (int64_t p = 0; p < k && rows < mr; p++)
        for (int64_t i = rows; i < mr; i++)
            dst[p * mr + i] = 0;
}

#undef CV_SHUFFLE

/* k x cols of B (row stride rs, column stride cs) into a panel nr wide. B with unit row
 * stride (x @ w.T of a PyTorch Linear weight) is A's layout transposed, so it packs by
 * pack_a_rows' shuffles (element by element, packing took 13% of a BERT layer's CPU time
 * at 8 x 128 tokens; with them 1024 x 768 x {768, 3072} and 1024 x 3072 x 768 0.90x the
 * time, Zen 5, bench/gemm_ab.py --wt). */
static void FN(pack_b)(const T *b, int64_t rs, int64_t cs, int64_t cols, int64_t k, int nr,
                       T *restrict dst) {
    if (cs == 1) {
        for (int64_t p = 0; p < k; p++)
            memcpy(dst + p * nr, b + p * rs, (size_t)cols * sizeof(T));
    } else if (rs == 1) {
        FN(pack_a_rows)(b, cs, cols, k, nr, dst);
    } else {
        for (int64_t j = 0; j < cols; j++)
            for (int64_t p = 0; p < k; p++)
                dst[p * nr + j] = b[p * rs + j * cs];
    }
    for (int64_t p = 0; p < k && cols < nr; p++)
        for (int64_t j = cols; j < nr; j++)
            dst[p * nr + j] = 0;
}
