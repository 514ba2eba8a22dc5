/* What generated CPU kernels include: the runtime API, vectorizable math with
 * NumPy's semantics (vmath.h) and the few helpers vmath.h does not cover. */
#ifndef CUVIL_AOT_KERNEL_H
#define CUVIL_AOT_KERNEL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuvil_aot/rowsum.h"
#include "cuvil_aot/runtime.h"
#include "cuvil_aot/vmath.h"

typedef uint8_t cv_bool;  /* NumPy's bool: one byte holding 0 or 1 */
typedef _Float16 cv_f16;  /* storage only; kernels compute float16 in float */

/* bfloat16 (ml_dtypes.bfloat16): the upper half of a float32's bits, computed in float.
 * A struct, so that no implicit conversion reads or writes it as an integer: values go
 * through cv_bf16_load and cv_bf16_store (compiler/codegen/ops_c.py's load and store). */
typedef struct { uint16_t bits; } cv_bf16;

static inline float cv_bf16_load(cv_bf16 x) {
    uint32_t u = (uint32_t)x.bits << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* To nearest, ties to even, as ml_dtypes (Eigen) rounds; a NaN stays a quiet NaN. */
static inline cv_bf16 cv_bf16_store(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    cv_bf16 r = {(uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
    if ((u & 0x7fffffffu) > 0x7f800000u) r.bits = (uint16_t)((u >> 16) | 0x40u);
    return r;
}

/* A float rounded to the nearest bfloat16 (a cast to bfloat16 computed in float). */
static inline float cv_bf16_round(float f) { return cv_bf16_load(cv_bf16_store(f)); }

/* The bfloat16 of a float that cv_bf16_round made: its upper half, which is what
 * cv_bf16_store would return for it (NaN included), without rounding it again. */
static inline cv_bf16 cv_bf16_exact(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    cv_bf16 r = {(uint16_t)(u >> 16)};
    return r;
}

/* A float rounded to TF32 (10 mantissa bits) to nearest, ties away from zero, as the
 * GPU's cvt.rna.tf32.f32; inf and NaN unchanged (a precision="tf32" matmul's operands). */
static inline float cv_tf32_round(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline int64_t cv_min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Prefetch element i of p into L1 for a later pass. i may lie past the array (the last
 * row's "next row"): integer arithmetic, and a prefetch never faults. */
#define cv_prefetch_at(p, i) \
    __builtin_prefetch((const void *)((uintptr_t)(p) + (uintptr_t)((i) * (int64_t)sizeof(*(p)))))

/* Outputs too large to stay in cache are computed a tile at a time into a buffer on the
 * stack and copied out with non-temporal stores: a plain store first reads each line
 * it writes (read-for-ownership), a third more memory traffic for x -> f(x). */
#define CV_STREAM_TILE 1024
#define CV_STREAM_MIN_BYTES ((int64_t)16 << 20) /* half the L3 of the machines we know */

#if defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>
#if defined(__AVX512F__)
#define CV_STREAM_BODY(T, W)                                                          \
    for (; i + 64 / (int64_t)sizeof(T) <= n; i += 64 / (int64_t)sizeof(T))            \
        _mm512_stream_##W(dst + i, _mm512_loadu_##W(src + i));
#define CV_STREAM_ALIGN 64
#elif defined(__AVX__)
#define CV_STREAM_BODY(T, W)                                                          \
    for (; i + 32 / (int64_t)sizeof(T) <= n; i += 32 / (int64_t)sizeof(T))            \
        _mm256_stream_##W(dst + i, _mm256_loadu_##W(src + i));
#define CV_STREAM_ALIGN 32
#else
#define CV_STREAM_BODY(T, W)                                                          \
    for (; i + 16 / (int64_t)sizeof(T) <= n; i += 16 / (int64_t)sizeof(T))            \
        _mm_stream_##W(dst + i, _mm_loadu_##W(src + i));
#define CV_STREAM_ALIGN 16
#endif
#define CV_STREAM(T, sfx, W)                                                          \
    static inline void cv_stream_##sfx(T *dst, const T *src, int64_t n) {             \
        int64_t i = 0;                                                                \
        for (; i < n && ((uintptr_t)(dst + i) & (CV_STREAM_ALIGN - 1)); i++) dst[i] = src[i]; \
        CV_STREAM_BODY(T, W)                                                          \
        for (; i < n; i++) dst[i] = src[i];                                           \
    }
CV_STREAM(float, f32, ps)
CV_STREAM(double, f64, pd)
#undef CV_STREAM
#undef CV_STREAM_BODY
/* Non-temporal stores are weakly ordered: fence them before the task ends. */
static inline void cv_stream_fence(void) { _mm_sfence(); }
#else
static inline void cv_stream_f32(float *dst, const float *src, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof *dst);
}
static inline void cv_stream_f64(double *dst, const double *src, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof *dst);
}
static inline void cv_stream_fence(void) {}
#endif

/* Integer ** as NumPy computes it (by squaring, wrapping on overflow); NumPy
 * raises for negative exponents, which kernels cannot: they give the truncated
 * value (1, -1 or 0). */
#define CV_NP_INTPOW(T, sfx)                                                       \
    static inline T cv_power_##sfx(T a, T b) {                                     \
        if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;           \
        uint64_t r = 1, base = (uint64_t)a;                                        \
        for (; b; b >>= 1, base *= base)                                           \
            if (b & 1) r *= base;                                                  \
        return (T)r;                                                               \
    }
CV_NP_INTPOW(int32_t, i32)
CV_NP_INTPOW(int64_t, i64)
#undef CV_NP_INTPOW
/* int8, int16 and uint8 use the int32 helpers: exact on their values, and the
 * kernel's typed local wraps the result (ops_c.py). uint64 has its own. */
static inline uint64_t cv_power_u64(uint64_t a, uint64_t b) {
    uint64_t r = 1;
    for (; b; b >>= 1, a *= a)
        if (b & 1) r *= a;
    return r;
}
/* NumPy: a zero divisor gives 0 */
static inline uint64_t cv_floor_divide_u64(uint64_t a, uint64_t b) { return b ? a / b : 0; }
static inline uint64_t cv_remainder_u64(uint64_t a, uint64_t b) { return b ? a % b : 0; }

#endif
