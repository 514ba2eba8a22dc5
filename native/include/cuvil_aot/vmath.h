/* Vectorizable elementwise math for generated C kernels.
 *
 * Every function is branch-free straight-line C (range reduction, polynomial,
 * special values by selects), so gcc -O3 vectorizes a plain loop that calls it
 * at every -march level from x86-64 (SSE2) to x86-64-v4; libm calls would keep
 * such a loop scalar. Written for -O3 -fno-math-errno -fno-trapping-math and
 * NOT -ffast-math: NaN, Inf and signed zeros follow NumPy. gcc contracts
 * a*b+c into FMAs at x86-64-v3/v4 and not below; the exactness tricks only
 * rely on products that are exact, so the bounds hold either way.
 *
 * Largest errors measured, in ulps of the result against the correctly
 * rounded value (float32: every one of the 2^32 inputs, at x86-64 and
 * x86-64-v3; float64: dense sweeps, edges and 2M random bit patterns against
 * an extended-precision reference at all four levels):
 *            exp   expm1  log   log1p  tanh  sigmoid  sin   cos   erf
 *   float32  0.89  1.41   0.95  1.56   1.50  2.40     0.50  0.50  1.35
 *   float64  0.84  1.32   1.15  1.67   1.48  1.92     1.45  1.44  1.15
 * Every float32 function holds over the whole float range, subnormals and
 * over/underflow edges included; sin/cos reduce huge arguments exactly, at
 * the price of eight double-precision steps for every input (about 8x the
 * cost of expf). Float64 sin/cos hold for |x| <= CV_TRIG_F64_MAX and return
 * NaN beyond it (a loud failure rather than a wrong number); callers that may
 * see larger arguments patch those elements with cv_sin_big/cv_cos_big,
 * which call libm and do not vectorize (tests/test_vmath.py shows the loop).
 *
 * NumPy semantics helpers, bit-exact against NumPy: maximum/minimum, sign,
 * float floor_divide/remainder (through an exact fmod; float64 remainder is
 * exact while |a/b| < CV_FMOD_F64_EXACT_QUOTIENT and a zero with b's sign
 * beyond), int32/int64 floor_divide/remainder (division by zero gives 0,
 * INT_MIN // -1 gives INT_MIN and INT_MIN % -1 gives 0, as NumPy does).
 */
#ifndef CUVIL_AOT_VMATH_H
#define CUVIL_AOT_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* always_inline: a call left out of line keeps the caller's loop scalar. */
#define CV_VM static inline __attribute__((always_inline))

/* ---- bit casts and exact rounding helpers ---------------------------- */

CV_VM uint32_t cv_vm_f2u(float x) { uint32_t u; memcpy(&u, &x, sizeof u); return u; }
CV_VM float cv_vm_u2f(uint32_t u) { float x; memcpy(&x, &u, sizeof x); return x; }
CV_VM uint64_t cv_vm_d2u(double x) { uint64_t u; memcpy(&u, &x, sizeof u); return u; }
CV_VM double cv_vm_u2d(uint64_t u) { double x; memcpy(&x, &u, sizeof x); return x; }

/* Adding 1.5*2^23 (2^52) rounds to an integer held in the low mantissa bits;
 * this needs no SSE4.1 round instruction and no float->int conversion. */
#define CV_VM_RNDF 0x1.8p23f
#define CV_VM_RNDD 0x1.8p52

/* floor(x) for |x| < 2^51 (callers guarantee it). */
CV_VM double cv_vm_floor_small(double x)
{
    double t = (x + CV_VM_RNDD) - CV_VM_RNDD;
    return t > x ? t - 1.0 : t;
}

/* floor for any value: from 2^23 / 2^52 on every float/double is an
 * integer; below, adding 2^23 / 2^52 to |x| rounds it to an integer. */
CV_VM float cv_vm_floorf(float x)
{
    float t = copysignf((fabsf(x) + 0x1p23f) - 0x1p23f, x);
    t = t > x ? t - 1.0f : t;
    return fabsf(x) < 0x1p23f ? t : x;
}

CV_VM double cv_vm_floor(double x)
{
    double t = copysign((fabs(x) + 0x1p52) - 0x1p52, x);
    t = t > x ? t - 1.0 : t;
    return fabs(x) < 0x1p52 ? t : x;
}


#include "cuvil_aot/vmath_f32.h"
#include "cuvil_aot/vmath_f64.h"
#include "cuvil_aot/vmath_numpy.h"

#endif /* CUVIL_AOT_VMATH_H */
