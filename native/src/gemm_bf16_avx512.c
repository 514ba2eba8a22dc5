/* The bfloat16 GEMM's micro-kernel on AVX-512 BF16 (gemm_bf16.h): vdpbf16ps multiplies
 * a pair of bfloat16 per float32 lane and adds both products to the lane, 32
 * multiply-adds per instruction where vfmadd231ps does 16. It treats denormal inputs and
 * results as zero (DAZ/FTZ) and rounds to nearest even, as Intel's and AMD's manuals say:
 * only magnitudes below 2^-126 are affected. */
#include <stddef.h>
#include <stdint.h>

#include "gemm_bf16.h"

#define MR 12 /* rows of a register tile: 12 x 2 accumulators, as gemm_avx512.c */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define CV_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

static int usable(void) {
    static int ok = -1; /* checked once: the CPU does not change under us */
    if (ok < 0) {
        __builtin_cpu_init();
        ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
    }
    return ok;
}

/* The A panel q-major (ku = 1): a(q, i) at q * MR + i, broadcast to every lane. */
CV_TARGET static void kern(int64_t kq, const uint32_t *a, const uint32_t *b, float *c,
                           int64_t ldc, int accumulate) {
    __m512 lo[MR], hi[MR];
    for (int i = 0; i < MR; i++)
        lo[i] = hi[i] = _mm512_setzero_ps();
    for (int64_t q = 0; q < kq; q++) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + q * CV_BF16_NR);
        const __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + q * CV_BF16_NR + 16);
        const uint32_t *ap = a + q * MR;
        for (int i = 0; i < MR; i++) {
            const __m512bh ai = (__m512bh)_mm512_set1_epi32((int)ap[i]);
            lo[i] = _mm512_dpbf16_ps(lo[i], ai, b0);
            hi[i] = _mm512_dpbf16_ps(hi[i], ai, b1);
        }
    }
    for (int i = 0; i < MR; i++) {
        float *row = c + i * ldc;
        if (accumulate) {
            lo[i] = _mm512_add_ps(lo[i], _mm512_loadu_ps(row));
            hi[i] = _mm512_add_ps(hi[i], _mm512_loadu_ps(row + 16));
        }
        _mm512_storeu_ps(row, lo[i]);
        _mm512_storeu_ps(row + 16, hi[i]);
    }
}

/* r[t] = column t of the 16 x 16 words r[0..15] (rows): words, then pairs of words
 * within 128-bit lanes, then the lanes as a 4 x 4 transpose. */
CV_TARGET static inline void transpose16(__m512i r[16]) {
    __m512i a[16], b[16];
    for (int i = 0; i < 16; i += 2) {
        a[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        a[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) { /* b[i + c], lane L: rows i..i+3 of column 4L + c */
        b[i] = _mm512_unpacklo_epi64(a[i], a[i + 2]);
        b[i + 1] = _mm512_unpackhi_epi64(a[i], a[i + 2]);
        b[i + 2] = _mm512_unpacklo_epi64(a[i + 1], a[i + 3]);
        b[i + 3] = _mm512_unpackhi_epi64(a[i + 1], a[i + 3]);
    }
    for (int c = 0; c < 4; c++) {
        __m512i s0 = _mm512_shuffle_i32x4(b[c], b[4 + c], 0x44);
        __m512i s1 = _mm512_shuffle_i32x4(b[c], b[4 + c], 0xee);
        __m512i s2 = _mm512_shuffle_i32x4(b[8 + c], b[12 + c], 0x44);
        __m512i s3 = _mm512_shuffle_i32x4(b[8 + c], b[12 + c], 0xee);
        r[c] = _mm512_shuffle_i32x4(s0, s2, 0x88);
        r[4 + c] = _mm512_shuffle_i32x4(s0, s2, 0xdd);
        r[8 + c] = _mm512_shuffle_i32x4(s1, s3, 0x88);
        r[12 + c] = _mm512_shuffle_i32x4(s1, s3, 0xdd);
    }
}

/* 16 pairs of the MR rows at a time: a transpose of words (rows past MR zero), the
 * first MR words of each column stored. The driver's loop moves a word at a time. */
CV_TARGET static int64_t pack_a(const uint16_t *a, int64_t rs, int64_t kq, uint32_t *panel) {
    int64_t q = 0;
    for (; q + 16 <= kq; q += 16) {
        __m512i r[16];
        for (int i = 0; i < 16; i++)
            r[i] = i < MR ? _mm512_loadu_si512(a + i * rs + 2 * q) : _mm512_setzero_si512();
        transpose16(r);
        for (int t = 0; t < 16; t++)
            _mm512_mask_storeu_epi32(panel + (q + t) * MR, (1u << MR) - 1, r[t]);
    }
    return q;
}

/* Two rows' 32 bfloat16 interleaved into 32 pair words by two word permutes. */
CV_TARGET void cv_bf16_pack_b_avx512(const uint16_t *b, int64_t rs, int64_t kq,
                                     uint32_t *panel) {
    __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40,
                                  8, 39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
    __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
    for (int64_t q = 0; q < kq; q++) {
        const uint16_t *row = b + 2 * q * rs;
        __m512i x0 = _mm512_loadu_si512(row), x1 = _mm512_loadu_si512(row + rs);
        _mm512_storeu_si512(panel + q * CV_BF16_NR, _mm512_permutex2var_epi16(x0, lo, x1));
        _mm512_storeu_si512(panel + q * CV_BF16_NR + 16,
                            _mm512_permutex2var_epi16(x0, hi, x1));
    }
}

const cv_bf16_kernel cv_bf16_avx512 = {"avx512", kern,   MR,    1, usable, NULL,
                                       NULL,     pack_a, cv_bf16_pack_b_avx512};
#else
static int usable(void) { return 0; }

const cv_bf16_kernel cv_bf16_avx512 = {"avx512", NULL, MR, 1, usable, NULL, NULL, NULL, NULL};
#endif
