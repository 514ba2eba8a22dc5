/* Stable sorts of one row, for the CPU SCAN kernels of np.sort / np.argsort
 * (compiler/codegen/c_scan.py): the kernel loads a row's keys, sorts their positions
 * here, then stores the keys or the positions in that order.
 *
 * NumPy's order: NaNs last, equal keys (and NaNs among themselves) in their original
 * order, so the positions are np.argsort(kind="stable")'s. Insertion sort of runs of
 * CV_SORT_RUN, then bottom-up merges through a scratch array of n positions. */
#ifndef CUVIL_AOT_ROWSORT_H
#define CUVIL_AOT_ROWSORT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CV_SORT_RUN 16

/* a strictly before b: a NaN is before nothing, and everything else is before a NaN */
#define CV_BEFORE_FLOAT(a, b) ((a) < (b) || ((b) != (b) && (a) == (a)))
#define CV_BEFORE_INT(a, b) ((a) < (b))

/* cv_argsort_<family>(key, perm, tmp, n): perm[0..n) = the positions of key[0..n) in
 * stable sorted order; tmp holds n positions of scratch. */
#define CV_ARGSORT(T, sfx, BEFORE)                                                         \
    static void cv_argsort_##sfx(const T *key, int64_t *perm, int64_t *tmp, int64_t n) {   \
        for (int64_t i = 0; i < n; i++) perm[i] = i;                                       \
        for (int64_t lo = 0; lo < n; lo += CV_SORT_RUN) {                                  \
            const int64_t hi = lo + CV_SORT_RUN < n ? lo + CV_SORT_RUN : n;                \
            for (int64_t i = lo + 1; i < hi; i++) {                                        \
                const int64_t p = perm[i];                                                 \
                const T v = key[p];                                                        \
                int64_t j = i;                                                             \
                for (; j > lo && BEFORE(v, key[perm[j - 1]]); j--) perm[j] = perm[j - 1];  \
                perm[j] = p;                                                               \
            }                                                                              \
        }                                                                                  \
        int64_t *src = perm, *dst = tmp;                                                   \
        for (int64_t w = CV_SORT_RUN; w < n; w *= 2) {                                     \
            for (int64_t lo = 0; lo < n; lo += 2 * w) {                                    \
                const int64_t mid = lo + w < n ? lo + w : n;                               \
                const int64_t hi = lo + 2 * w < n ? lo + 2 * w : n;                        \
                int64_t i = lo, j = mid, k = lo;                                           \
                while (i < mid && j < hi)                                                  \
                    dst[k++] = BEFORE(key[src[j]], key[src[i]]) ? src[j++] : src[i++];     \
                while (i < mid) dst[k++] = src[i++];                                       \
                while (j < hi) dst[k++] = src[j++];                                        \
            }                                                                              \
            int64_t *t = src;                                                              \
            src = dst;                                                                     \
            dst = t;                                                                       \
        }                                                                                  \
        if (src != perm) memcpy(perm, src, (size_t)n * sizeof *perm);                      \
    }

/* by the dtype families of compiler/codegen/ops_c.py (float16 is computed in float) */
CV_ARGSORT(float, f, CV_BEFORE_FLOAT)
CV_ARGSORT(double, d, CV_BEFORE_FLOAT)
CV_ARGSORT(int8_t, i8, CV_BEFORE_INT)
CV_ARGSORT(int16_t, i16, CV_BEFORE_INT)
CV_ARGSORT(int32_t, i32, CV_BEFORE_INT)
CV_ARGSORT(int64_t, i64, CV_BEFORE_INT)
CV_ARGSORT(uint8_t, u8, CV_BEFORE_INT)
CV_ARGSORT(uint64_t, u64, CV_BEFORE_INT)
CV_ARGSORT(uint8_t, b, CV_BEFORE_INT)
#undef CV_ARGSORT

/* A sort kernel's scratch, once per task: a kernel cannot raise, and a row that fits in
 * memory leaves room for its scratch, so running out is fatal. */
static inline void *cv_row_scratch(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fputs("cuvil_aot: out of memory for a sort's scratch\n", stderr);
        abort();
    }
    return p;
}

#endif
