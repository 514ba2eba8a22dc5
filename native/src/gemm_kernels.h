/* The GEMM kernels of one ISA level and data type, and the block sizes the
 * driver (gemm.c) uses with them.
 *
 * kern: the register-blocked micro-kernel of the packed path,
 *   c[i * ldc + j] (+)= sum_p a[p * mr + i] * b[p * nr + j]   i < mr, j < nr
 *   over packed panels (A p-major mr wide, B p-major nr wide, both zero
 *   padded); c is a 64-byte aligned accumulator tile, ldc a multiple of nr.
 *   pf[0] and pf[1] name memory that later calls read: kern prefetches one
 *   64-byte line of each per k step (lines <= kc), so panels arrive from L3
 *   while this call computes.
 * kern_short: kern for the first mr_short rows of the tile only (a last panel
 *   with few real rows); the other rows of c are left as they are.
 * pack_b: a full-width B panel (nr columns, k rows) from B with unit column
 *   stride and row stride rs; dst is 64-byte aligned.
 * rows: the small-m kernel, used without packing when B's columns are
 *   contiguous,
 *   c[i * ldc + j] (+)= sum_p a[i * a_rs + p * a_cs] * b[p * b_rs + j]
 *   for i < m, j < ncols; c is 64-byte aligned, ldc a multiple of rw, and
 *   c's columns up to ncols rounded up to rw are scratch. B is read once from
 *   memory; c should fit in L1/L2.
 * dots: the small-m kernel for B with unit row stride and A with unit
 *   column stride (x @ W.T), same result with B's column stride b_cs; writes
 *   exactly the ncols columns of c.
 * accumulate = 0 stores the sums, 1 adds them to c.
 */
#ifndef CUVIL_AOT_GEMM_KERNELS_H
#define CUVIL_AOT_GEMM_KERNELS_H

#include <stdint.h>

/* The dots kernel's per-thread scratch (its packed rows of A), 64-byte aligned. */
#define CV_DOTS_WS ((int64_t)256 << 10)
void *cv_dots_ws(void);

/* A run of memory to prefetch: `lines` 64-byte lines from p. */
typedef struct {
    const char *p;
    int64_t lines;
} cv_gemm_pf;

#define CV_DECLARE_KERNELS(T, SFX)                                                        \
    typedef struct {                                                                      \
        int mr, nr;     /* register tile of kern */                                       \
        int mc, nc, kc; /* unit rows, unit columns (the epilogue tile), k block */        \
        int rw;         /* column granularity of rows() */                                \
        int mr_short;   /* rows of kern_short */                                          \
        void (*kern)(int64_t kc, const T *a, const T *b, T *c, int64_t ldc, int accumulate, \
                     const cv_gemm_pf *pf);                                               \
        void (*kern_short)(int64_t kc, const T *a, const T *b, T *c, int64_t ldc,         \
                           int accumulate, const cv_gemm_pf *pf);                         \
        void (*pack_b)(int64_t k, const T *b, int64_t rs, T *dst);                        \
        void (*rows)(int64_t m, int64_t k, const T *a, int64_t a_rs, int64_t a_cs,       \
                     const T *b, int64_t b_rs, int64_t ncols, T *c, int64_t ldc,         \
                     int accumulate, int cold);                                           \
        void (*dots)(int64_t m, int64_t k, const T *a, int64_t a_rs, const T *b,          \
                     int64_t b_cs, int64_t ncols, T *c, int64_t ldc, int accumulate);     \
    } cv_kernels_##SFX;                                                                   \
    extern const cv_kernels_##SFX cv_kernels_##SFX##_avx512, cv_kernels_##SFX##_avx2,     \
        cv_kernels_##SFX##_generic;

CV_DECLARE_KERNELS(float, f32)
CV_DECLARE_KERNELS(double, f64)

#endif
