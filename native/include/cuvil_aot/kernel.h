/* What generated CPU kernels include: the runtime API, vectorizable math and
 * the scalar helpers that give C operators NumPy's exact semantics. */
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

/* np.maximum / np.minimum: a NaN in either operand is the result. */
#define CV_NP_MINMAX(T, sfx)                                                     \
    static inline T cv_maximum##sfx(T a, T b) { return (a != a || a > b) ? a : b; } \
    static inline T cv_minimum##sfx(T a, T b) { return (a != a || a < b) ? a : b; }
CV_NP_MINMAX(float, f)
CV_NP_MINMAX(double, d)
#undef CV_NP_MINMAX

/* np.sign: NaN stays NaN, zero stays zero. */
static inline float cv_signf(float a) { return a != a ? a : (float)((a > 0) - (a < 0)); }
static inline double cv_signd(double a) { return a != a ? a : (double)((a > 0) - (a < 0)); }

/* np.floor_divide and np.remainder for floats: Python's convention (the
 * remainder takes the divisor's sign), the quotient snapped to an integer. */
#define CV_NP_DIVMOD(T, sfx, FMOD, FLOOR, COPYSIGN)                               \
    static inline T cv_divmod##sfx(T a, T b, T *mod) {                             \
        T m = FMOD(a, b);                                                          \
        if (!b) { *mod = m; return a / b; }                                        \
        T div = (a - m) / b;                                                       \
        if (m) {                                                                   \
            if ((b < 0) != (m < 0)) { m += b; div -= 1; }                          \
        } else {                                                                   \
            m = COPYSIGN((T)0, b);                                                 \
        }                                                                          \
        *mod = m;                                                                  \
        if (!div) return COPYSIGN((T)0, a / b);                                    \
        T q = FLOOR(div);                                                          \
        return (div - q > (T)0.5) ? q + 1 : q;                                     \
    }                                                                              \
    static inline T cv_floordiv##sfx(T a, T b) {                                   \
        T m;                                                                       \
        return b ? cv_divmod##sfx(a, b, &m) : a / b;                               \
    }                                                                              \
    static inline T cv_remainder##sfx(T a, T b) {                                  \
        T m;                                                                       \
        if (!b) return FMOD(a, b);                                                 \
        cv_divmod##sfx(a, b, &m);                                                  \
        return m;                                                                  \
    }
CV_NP_DIVMOD(float, f, fmodf, floorf, copysignf)
CV_NP_DIVMOD(double, d, fmod, floor, copysign)
#undef CV_NP_DIVMOD

/* Integer // and % as NumPy computes them: floor semantics, 0 for a zero
 * divisor, and MIN // -1 wrapping to MIN instead of trapping. */
#define CV_NP_INTDIV(T, sfx)                                                       \
    static inline T cv_floordiv##sfx(T a, T b) {                                   \
        if (b == 0) return 0;                                                      \
        if (b == -1) return (T)(0 - (uint64_t)a);                                  \
        T q = a / b;                                                               \
        return ((a % b) != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;                 \
    }                                                                              \
    static inline T cv_remainder##sfx(T a, T b) {                                  \
        if (b == 0 || b == -1) return 0;                                           \
        T r = a % b;                                                               \
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;                       \
    }                                                                              \
    static inline T cv_power##sfx(T a, T b) {                                      \
        if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;           \
        uint64_t r = 1, base = (uint64_t)a;                                        \
        for (; b; b >>= 1, base *= base)                                           \
            if (b & 1) r *= base;                                                  \
        return (T)r;                                                               \
    }
CV_NP_INTDIV(int32_t, i32)
CV_NP_INTDIV(int64_t, i64)
#undef CV_NP_INTDIV

#endif
