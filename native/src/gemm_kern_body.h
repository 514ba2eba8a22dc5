/* The bodies of one ISA's GEMM kernels for one data type (see
 * gemm_kernels.h), written once over a small vector vocabulary. An ISA file
 * defines the vocabulary and the sizes, then includes this file:
 *
 *   T, V, VL            element type, vector type, lanes per vector
 *   V_LOAD, V_LOADU     aligned / unaligned load; V_LOADU_PART(p, n) loads n
 *                       lanes (1..VL) and zeroes the rest without reading past
 *   V_STORE, V_STOREU   aligned / unaligned store
 *   V_SET1, V_ZERO, V_ADD, V_FMA(a, b, c) = a * b + c
 *   CV_TARGET           the target attribute of every function here
 *   MR, NV              packed kernel: MR rows x NV vectors of accumulators
 *   RMAX, RV            rows kernel: up to RMAX (= 4) rows x RV (<= 4) vectors
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
#define rows_update CV_GLUE3(rows_update, TSFX, ISA)
#define rows_pass CV_GLUE3(rows_pass, TSFX, ISA)
#define rows_kernel CV_GLUE3(rows_kernel, TSFX, ISA)

#define NR (NV * VL)
#define RW (RV * VL)
/* Rows of B per block of the rows kernel, and how many rows ahead it
 * prefetches. */
#define RG 8
#define PF_ROWS 8

CV_TARGET static void packed_kernel(int64_t kc, const T *restrict a, const T *restrict b,
                                    T *restrict c, int64_t ldc, int accumulate) {
    V acc[MR][NV];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            acc[i][v] = V_ZERO();
    for (int64_t p = 0; p < kc; p++) {
        V bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            bv[v] = V_LOAD(b + v * VL);
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) {
            V ai = V_SET1(a[i]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                acc[i][v] = V_FMA(ai, bv[v], acc[i][v]);
        }
        a += MR;
        b += NR;
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            T *dst = c + i * ldc + v * VL;
            V_STOREU(dst, accumulate ? V_ADD(acc[i][v], V_LOAD(dst)) : acc[i][v]);
        }
}

/* c[i][0, RW) += sum over g rows p of a[i, p] * b[p][0, RW) for i < r, with
 * r a constant after inlining; `full` says all RW columns of b are real,
 * else cnt[v] lanes of vector v are (the others load as zeros). The next
 * PF_ROWS rows of b at these columns are prefetched. */
CV_TARGET static inline __attribute__((always_inline)) void
rows_update(int r, int full, const int *cnt, int64_t g, int64_t k_left, const T *a, int64_t a_rs,
            int64_t a_cs, const T *b, int64_t b_rs, T *c, int64_t ldc) {
    V acc[RMAX][RV];
#pragma GCC unroll 16
    for (int i = 0; i < r; i++)
#pragma GCC unroll 4
        for (int v = 0; v < RV; v++)
            acc[i][v] = V_LOAD(c + i * ldc + v * VL);
    for (int64_t p = 0; p < g; p++, b += b_rs, a += a_cs) {
        if (p + PF_ROWS < k_left)
            for (size_t line = 0; line < RW * sizeof(T); line += 64)
                __builtin_prefetch((const char *)(b + PF_ROWS * b_rs) + line);
        V bv[RV];
#pragma GCC unroll 4
        for (int v = 0; v < RV; v++)
            bv[v] = full ? V_LOADU(b + v * VL) : V_LOADU_PART(b + v * VL, cnt[v]);
#pragma GCC unroll 16
        for (int i = 0; i < r; i++) {
            V ai = V_SET1(a[i * a_rs]);
#pragma GCC unroll 4
            for (int v = 0; v < RV; v++)
                acc[i][v] = V_FMA(ai, bv[v], acc[i][v]);
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < r; i++)
#pragma GCC unroll 4
        for (int v = 0; v < RV; v++)
            V_STORE(c + i * ldc + v * VL, acc[i][v]);
}

/* r rows x all columns for g rows of B (column groups of RW, the last one
 * masked). */
CV_TARGET static inline __attribute__((always_inline)) void
rows_pass(int r, int64_t g, int64_t k_left, int64_t ncols, const T *a, int64_t a_rs,
          int64_t a_cs, const T *b, int64_t b_rs, T *c, int64_t ldc) {
    int64_t j = 0;
    for (; j + RW <= ncols; j += RW)
        rows_update(r, 1, NULL, g, k_left, a, a_rs, a_cs, b + j, b_rs, c + j, ldc);
    if (j < ncols) {
        int cnt[RV];
        for (int v = 0; v < RV; v++) {
            int64_t left = ncols - j - v * VL;
            cnt[v] = left <= 0 ? 0 : left >= VL ? VL : (int)left;
        }
        rows_update(r, 0, cnt, g, k_left, a, a_rs, a_cs, b + j, b_rs, c + j, ldc);
    }
}

#define ROWS_CASE(R)                                                                     \
    case R:                                                                              \
        rows_pass(R, g, k - p0, ncols, ai, a_rs, a_cs, bp, b_rs, c + i0 * ldc, ldc);     \
        break;

/* The rows kernel: B is read in blocks of RG rows, each as RG sequential
 * streams across the columns, so hardware prefetchers see plain streams;
 * the m x ncols sums stay in c (L1/L2) between blocks. */
CV_TARGET static void rows_kernel(int64_t m, int64_t k, const T *a, int64_t a_rs, int64_t a_cs,
                                  const T *b, int64_t b_rs, int64_t ncols, T *c, int64_t ldc,
                                  int accumulate) {
    int64_t width = (ncols + RW - 1) / RW * RW;
    for (int64_t i = 0; i < m && !accumulate; i++)
        memset(c + i * ldc, 0, (size_t)width * sizeof(T));
    for (int64_t p0 = 0; p0 < k; p0 += RG) {
        int64_t g = k - p0 < RG ? k - p0 : RG;
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

const CV_GLUE2(cv_kernels, TSFX) CV_GLUE3(cv_kernels, TSFX, ISA) = {
    MR, NR, MC, NC, KC, RW, packed_kernel, rows_kernel,
};

#undef packed_kernel
#undef rows_update
#undef rows_pass
#undef rows_kernel
#undef NR
#undef RW
#undef PF_ROWS
#undef RG
#undef ROWS_CASE
