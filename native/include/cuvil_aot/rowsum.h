/* Sums of short contiguous float rows (a global average pool: 131,072 rows of 49).
 * One row at a time, each row ends in a horizontal sum (~4 shuffles) that costs as
 * much as its loads; CV_SUM_ROWS rows at a time, each row's vector partial goes into
 * a transpose-and-add tree that gives all sums in one vector (15 adds, 30 shuffles for
 * 16 rows). ResNet head b256 pool, 2 threads: 450 -> 270 us; reading alone ~200 us. */
#ifndef CUVIL_AOT_ROWSUM_H
#define CUVIL_AOT_ROWSUM_H

#include <stdint.h>

#define CV_SUM_ROWS 16

static inline float cv_sum_row_f32(const float *row, int64_t len) {
    float acc = 0;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < len; i++)
        acc += row[i];
    return acc;
}

#if defined(__AVX512F__)
#include <immintrin.h>

/* One row's 16 lane partials (len elements from row; a masked load for the tail). */
static inline __m512 cv_row_partial_f32(const float *row, int64_t len) {
    __m512 acc = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= len; i += 16)
        acc = _mm512_add_ps(acc, _mm512_loadu_ps(row + i));
    const __mmask16 tail = (__mmask16)((1u << (len - i)) - 1);
    return _mm512_add_ps(acc, _mm512_maskz_loadu_ps(tail, row + i));
}

/* Pairwise: lanes of a and b folded by half at one level of the tree. */
#define CV_FOLD(a, b, shuf, lo, hi) _mm512_add_ps(shuf(a, b, lo), shuf(a, b, hi))

/* sums[r] = sum of rows[r][0 .. len) for r < n (n <= CV_SUM_ROWS). */
static inline void cv_sum_rows_f32(const float *const *rows, int64_t n, int64_t len,
                                   float *sums) {
    if (n < CV_SUM_ROWS) {
        for (int64_t r = 0; r < n; r++)
            sums[r] = cv_sum_row_f32(rows[r], len);
        return;
    }
    /* The tree leaves slot s's sum in lane order[s]; order is its own inverse, so
     * loading row order[s] into slot s puts row r's sum in lane r. */
    static const int order[16] = {0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15};
    __m512 v[16];
    for (int s = 0; s < 16; s++)
        v[s] = cv_row_partial_f32(rows[order[s]], len);
    for (int s = 0; s < 8; s++)
        v[s] = CV_FOLD(v[s], v[s + 8], _mm512_shuffle_f32x4, 0x44, 0xEE);
    for (int s = 0; s < 4; s++)
        v[s] = CV_FOLD(v[s], v[s + 4], _mm512_shuffle_f32x4, 0x88, 0xDD);
    for (int s = 0; s < 2; s++)
        v[s] = CV_FOLD(v[s], v[s + 2], _mm512_shuffle_ps, 0x44, 0xEE);
    _mm512_storeu_ps(sums, CV_FOLD(v[0], v[1], _mm512_shuffle_ps, 0x88, 0xDD));
}
#undef CV_FOLD

#else

static inline void cv_sum_rows_f32(const float *const *rows, int64_t n, int64_t len,
                                   float *sums) {
    for (int64_t r = 0; r < n; r++)
        sums[r] = cv_sum_row_f32(rows[r], len);
}

#endif
#endif
