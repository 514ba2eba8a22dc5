/* What generated CPU kernels include: the runtime API, vectorizable math with
 * NumPy's semantics (vmath.h) and the few helpers vmath.h does not cover. */
#ifndef CUVIL_AOT_KERNEL_H
#define CUVIL_AOT_KERNEL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuvil_aot/runtime.h"
#include "cuvil_aot/vmath.h"

typedef uint8_t cv_bool;  /* NumPy's bool: one byte holding 0 or 1 */
typedef _Float16 cv_f16;  /* storage only; kernels compute float16 in float */

static inline int64_t cv_min64(int64_t a, int64_t b) { return a < b ? a : b; }

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

#endif
