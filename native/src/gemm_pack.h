/* Packing into the micro-kernel's panels, for one element type T (included
 * by gemm_impl.h with T and FN defined). A panel is p-major: element (i, p)
 * of an A panel sits at p * mr + i, element (p, j) of a B panel at
 * p * nr + j; rows/columns past the matrix are zero so the kernels never
 * need edge cases. Both loops read the source along its unit stride when it
 * has one. */

/* rows x k of A (row stride rs, column stride cs) into a panel mr wide. */
static void FN(pack_a)(const T *a, int64_t rs, int64_t cs, int64_t rows, int64_t k, int mr,
                       T *restrict dst) {
    if (cs == 1) {
        for (int64_t i = 0; i < rows; i++)
            for (int64_t p = 0; p < k; p++)
                dst[p * mr + i] = a[i * rs + p];
    } else {
        for (int64_t p = 0; p < k; p++)
            for (int64_t i = 0; i < rows; i++)
                dst[p * mr + i] = a[i * rs + p * cs];
    }
    for (int64_t p = 0; p < k && rows < mr; p++)
        for (int64_t i = rows; i < mr; i++)
            dst[p * mr + i] = 0;
}

/* k x cols of B (row stride rs, column stride cs) into a panel nr wide. */
static void FN(pack_b)(const T *b, int64_t rs, int64_t cs, int64_t cols, int64_t k, int nr,
                       T *restrict dst) {
    if (cs == 1) {
        for (int64_t p = 0; p < k; p++)
            memcpy(dst + p * nr, b + p * rs, (size_t)cols * sizeof(T));
    } else {
        for (int64_t j = 0; j < cols; j++)
            for (int64_t p = 0; p < k; p++)
                dst[p * nr + j] = b[p * rs + j * cs];
    }
    for (int64_t p = 0; p < k && cols < nr; p++)
        for (int64_t j = cols; j < nr; j++)
            dst[p * nr + j] = 0;
}
