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

/* ======================================================================
 * float32
 * ==================================================================== */

#define CV_VM_LN2_HI_F 0x1.62e4p-1f       /* 15 bits: n * hi is exact for |n| < 512 */
#define CV_VM_LN2_LO_F 0x1.7f7d1cp-20f
#define CV_VM_LOG2E_F 0x1.715476p+0f
#define CV_VM_SQRT_HALF_BITS_F 0x3f3504f3u /* sqrt(1/2) */

/* x = n ln2 + r + dr, |r| <= ln2/2, n returned as an integer; dr is the
 * rounding error of r, which the linear terms of the polynomials use. */
CV_VM float cv_vm_reduce_ln2f(float x, int32_t *ni, float *dr)
{
    float k = x * CV_VM_LOG2E_F + CV_VM_RNDF;
    float n = k - CV_VM_RNDF;
    *ni = (int32_t)(cv_vm_f2u(k) - cv_vm_f2u(CV_VM_RNDF));
    float r1 = x - n * CV_VM_LN2_HI_F; /* exact */
    float r = r1 - n * CV_VM_LN2_LO_F;
    *dr = (r1 - r) - n * CV_VM_LN2_LO_F;
    return r;
}

/* e^(r + dr) - 1 for |r| <= ln2/2, relative error 5e-10. */
CV_VM float cv_vm_expm1f_poly(float r, float dr)
{
    float q = 0x1.555554p-3f + r * (0x1.5554eap-5f + r * (0x1.1113acp-7f
              + r * (0x1.6d4caep-10f + r * 0x1.9c5f2cp-13f)));
    float r2 = r * r;
    return r + (dr + (r2 * 0.5f + r2 * r * q));
}

/* 2^n for integer n in [-126, 127]. */
CV_VM float cv_vm_pow2f(int32_t n)
{
    return cv_vm_u2f((uint32_t)(n + 127) << 23);
}

CV_VM float cv_expf(float x)
{
    /* Clamped so that n lies in [-150, 128]; the result then over- or
     * underflows by itself. NaN passes the clamps and the polynomial. */
    float xc = x > 89.0f ? 89.0f : x;
    xc = xc < -104.0f ? -104.0f : xc;
    int32_t ni;
    float dr;
    float r = cv_vm_reduce_ln2f(xc, &ni, &dr);
    float p = 1.0f + (r + (dr + r * r * (0x1.fffffcp-2f + r * (0x1.55548cp-3f + r * (0x1.555858p-5f
              + r * (0x1.123de0p-7f + r * 0x1.6ac74ep-10f))))));
    /* 2^n as two normal factors: p * s1 is exact, the second product rounds
     * once, also into the subnormal range or to infinity. */
    int32_t n1 = ni >> 1;
    return p * cv_vm_pow2f(n1) * cv_vm_pow2f(ni - n1);
}

/* expm1 without the -0.0 fix-up, for x in [-30, 89] or NaN. */
CV_VM float cv_vm_expm1f_core(float x)
{
    int32_t ni;
    float dr;
    float r = cv_vm_reduce_ln2f(x, &ni, &dr);
    float em = cv_vm_expm1f_poly(r, dr);
    /* 2^n em + (2^n - 1) = 2 (s em + (s - 1/2)), s = 2^(n-1): finite for
     * n = 128 and s - 1/2 exact for the n where it matters. */
    float s = cv_vm_pow2f(ni - 1);
    return 2.0f * (s * em + (s - 0.5f));
}

CV_VM float cv_expm1f(float x)
{
    float xc = x > 89.0f ? 89.0f : x;
    xc = xc < -30.0f ? -30.0f : xc; /* expm1 rounds to -1 below -17.4 */
    float r = cv_vm_expm1f_core(xc);
    return fabsf(x) < 0x1p-25f ? x : r; /* keeps -0.0 and subnormals exact */
}

/* log(1 + f) for f in [sqrt(1/2) - 1, sqrt(2) - 1] (a little beyond is fine):
 * with s = f / (2 + f), log(1 + f) = 2 atanh(s) = f - s (f - T(s^2)). */
CV_VM float cv_vm_log1pf_red(float f)
{
    float s = f / (2.0f + f);
    float z = s * s;
    float t = z * (0x1.55557cp-1f + z * (0x1.995ca6p-2f + z * 0x1.3220eep-2f));
    return f - s * (f - t);
}

/* Splits positive finite u (normal, or subnormal pre-scaled by the caller)
 * into u = 2^e m, m in [sqrt(1/2), sqrt(2)); returns m - 1 and e. */
CV_VM float cv_vm_split_logf(float u, int32_t *e)
{
    uint32_t iu = cv_vm_f2u(u);
    *e = (int32_t)(iu - CV_VM_SQRT_HALF_BITS_F) >> 23;
    return cv_vm_u2f(iu - ((uint32_t)*e << 23)) - 1.0f;
}

CV_VM float cv_logf(float x)
{
    int sub = x < 0x1p-126f; /* subnormals (and 0, < 0: fixed below) */
    int32_t ei;
    float f = cv_vm_split_logf(sub ? x * 0x1p23f : x, &ei);
    float e = sub ? (float)ei - 23.0f : (float)ei;
    float r = e * CV_VM_LN2_HI_F + (cv_vm_log1pf_red(f) + e * CV_VM_LN2_LO_F);
    r = x < __builtin_inff() ? r : x; /* +inf, NaN */
    r = x < 0.0f ? __builtin_nanf("") : r;
    return x == 0.0f ? -__builtin_inff() : r;
}

CV_VM float cv_log1pf(float x)
{
    float u = 1.0f + x;
    /* c = (1 + x) - u exactly (Fast2Sum, larger magnitude first). */
    int xbig = fabsf(x) > 1.0f;
    float big = xbig ? x : 1.0f, small = xbig ? 1.0f : x;
    float c = small - (u - big);
    int32_t ei;
    float f = cv_vm_split_logf(u, &ei);
    /* 1 + x = 2^e (1 + f + c 2^-e); for e = 0 the sum f + c is x itself. c
     * no longer matters once e is large, so 2^-e may stop at 2^-126. */
    f = f + c * cv_vm_pow2f(-(ei < 126 ? ei : 126));
    float e = (float)ei;
    float r = e * CV_VM_LN2_HI_F + (cv_vm_log1pf_red(f) + e * CV_VM_LN2_LO_F);
    r = x < __builtin_inff() ? r : x;
    r = x < -1.0f ? __builtin_nanf("") : r;
    r = x == -1.0f ? -__builtin_inff() : r;
    return x == 0.0f ? x : r;
}

CV_VM float cv_tanhf(float x)
{
    float ax = fabsf(x);
    /* |x| < 0.625: odd polynomial, relative error 5e-9 */
    float x2 = x * x;
    float p = x + x * x2 * (-0x1.555532p-2f + x2 * (0x1.1106f6p-3f + x2 * (-0x1.b835a4p-5f
              + x2 * (0x1.51f8cep-6f + x2 * -0x1.750ce4p-8f))));
    /* else tanh|x| = em / (em + 2), em = expm1(2|x|); tanh rounds to 1 from 9.01 on. */
    float a = ax > 9.5f ? 9.5f : ax;
    float em = cv_vm_expm1f_core(2.0f * a);
    float t = copysignf(em / (em + 2.0f), x);
    t = ax < 0.625f ? p : t;
    return x == 0.0f ? x : t; /* p(-0.0) is +0.0 */
}

/* 1 / (1 + exp(-x)) without overflow: with e = exp(-|x|) in (0, 1], it is
 * 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0. */
CV_VM float cv_sigmoidf(float x)
{
    float e = cv_expf(-fabsf(x));
    return (x < 0.0f ? e : 1.0f) / (1.0f + e);
}

/* 2/pi in 24-bit chunks: x * chunk is exact in double for any float x. */
#define CV_VM_2PI0 0x1.45f3p-1
#define CV_VM_2PI1 0x1.b72722p-23
#define CV_VM_2PI2 0x1.529fcp-52
#define CV_VM_2PI3 0x1.3abe8p-75
#define CV_VM_2PI4 0x1.f534dcp-96
#define CV_VM_2PI5 0x1.c0db6p-120
#define CV_VM_2PI6 0x1.4acc9ep-143
#define CV_VM_2PI7 0x1.0e41p-170

/* Adds x * c (mod 4) to s, then moves the nearest integer of s into the
 * quadrant count q, keeping |s| <= 1/2. x * c is exact; so is x * c mod 4,
 * which is 0 once |x c| >= 2^54 (a multiple of 4: only the first chunks,
 * "huge", get there). Sums are exact while the bits of s are being
 * assembled and round relative to s afterwards, and s is small exactly where
 * x is close to a multiple of pi/2: cancellation stays exact. */
CV_VM double cv_vm_pio2_step(double s, double *q, double x, double c, int huge)
{
    double p = x * c;
    double a = p - 4.0 * ((p * 0.25 + CV_VM_RNDD) - CV_VM_RNDD);
    s += huge && !(fabs(p) < 0x1p54) ? 0.0 : a;
    double k = (s + CV_VM_RNDD) - CV_VM_RNDD;
    *q += k;
    return s - k;
}

/* Reduces float x exactly: x = (q + t) pi/2 with q mod 4 returned, |t| <=
 * 1/2 (+2^-14); returns r = t pi/2 (double, relative error ~2^-52). */
CV_VM double cv_vm_reduce_pio2f(float x, double *q)
{
    double xd = (double)x, s = 0.0, n = 0.0;
    s = cv_vm_pio2_step(s, &n, xd, CV_VM_2PI0, 1);
    s = cv_vm_pio2_step(s, &n, xd, CV_VM_2PI1, 1);
    s = cv_vm_pio2_step(s, &n, xd, CV_VM_2PI2, 1);
    s = cv_vm_pio2_step(s, &n, xd, CV_VM_2PI3, 0);
    s = cv_vm_pio2_step(s, &n, xd, CV_VM_2PI4, 0);
    s = cv_vm_pio2_step(s, &n, xd, CV_VM_2PI5, 0);
    s += xd * CV_VM_2PI6 + xd * CV_VM_2PI7; /* below 2^-14: no reduction */
    *q = n - 4.0 * cv_vm_floor_small(n * 0.25);
    return s * 0x1.921fb54442d18p0;
}

/* sin and cos of |r| <= pi/4 in double, to ~1e-11 (float needs 6e-8). */
CV_VM double cv_vm_sin_polyf(double r)
{
    double z = r * r;
    return r + r * z * (-0x1.5555554c71cbap-3 + z * (0x1.1111086a5d40dp-7
           + z * (-0x1.a00f7f2566045p-13 + z * 0x1.6cd1f1e0576d9p-19)));
}

CV_VM double cv_vm_cos_polyf(double r)
{
    double z = r * r;
    return 1.0 - 0.5 * z + z * z * (0x1.55554a1155e7cp-5 + z * (-0x1.6c0c33a4b0083p-10
           + z * 0x1.99eb9b485d2cdp-16));
}

CV_VM float cv_sinf(float x)
{
    double q;
    double r = cv_vm_reduce_pio2f(x, &q);
    double s = cv_vm_sin_polyf(r), c = cv_vm_cos_polyf(r);
    /* quadrant q: 0 sin, 1 cos, 2 -sin, 3 -cos */
    double v = (q == 1.0 || q == 3.0) ? c : s;
    v = q >= 2.0 ? -v : v;
    float res = (float)v;
    res = fabsf(x) < __builtin_inff() ? res : x - x; /* inf, NaN -> NaN */
    return x == 0.0f ? x : res;
}

CV_VM float cv_cosf(float x)
{
    double q;
    double r = cv_vm_reduce_pio2f(x, &q);
    double s = cv_vm_sin_polyf(r), c = cv_vm_cos_polyf(r);
    /* quadrant q: 0 cos, 1 -sin, 2 -cos, 3 sin */
    double v = (q == 1.0 || q == 3.0) ? s : c;
    v = (q == 1.0 || q == 2.0) ? -v : v;
    float res = (float)v;
    return fabsf(x) < __builtin_inff() ? res : x - x;
}

CV_VM float cv_erff(float x)
{
    float ax = fabsf(x);
    /* |x| < 0.875: erf = x + x P(x^2); the 2/sqrt(pi) - 1 term keeps the
     * leading coefficient's rounding out of the result. */
    float x2 = x * x;
    float small = x + x * (0x1.06eba6p-3f + x2 * (-0x1.8126ecp-2f + x2 * (0x1.ce1b86p-4f
                  + x2 * (-0x1.b69b8ep-6f + x2 * (0x1.479c18p-8f + x2 * -0x1.3ba5aap-11f)))));
    /* else erf = 1 - exp(L(|x|)), L ~ log(erfc) on [0.875, 3.95]; erf
     * rounds to 1 from 3.9193 on. */
    float a = ax > 3.95f ? 3.95f : ax;
    float l = 0x1.3a6ab6p-12f + a * (-0x1.2151d6p+0f + a * (-0x1.438f70p-1f + a * (-0x1.c26b84p-4f
              + a * (0x1.afdfacp-6f + a * (-0x1.369376p-8f + a * (0x1.36b770p-11f
              + a * (-0x1.7e727ep-15f + a * 0x1.b17beep-20f)))))));
    float big = copysignf(1.0f - cv_expf(l), x);
    return ax < 0.875f ? small : big;
}

/* ======================================================================
 * float64
 *
 * Same methods as float32 with longer polynomials. Only 64-bit integer
 * add/sub/and/or/xor and constant shifts are used: SSE2 and AVX2 lack 64-bit
 * arithmetic right shifts, compares and double<->int64 conversions.
 * ==================================================================== */

#define CV_VM_LN2_HI 0x1.62e42fefa38p-1 /* 42 bits: n * hi is exact for |n| < 2048 */
#define CV_VM_LN2_LO 0x1.ef35793c7673p-45
#define CV_VM_LOG2E 0x1.71547652b82fep+0
#define CV_VM_SQRT_HALF_BITS 0x3fe6a09e667f3bcdull

/* As cv_vm_reduce_ln2f; n is an integer-valued double. */
CV_VM double cv_vm_reduce_ln2(double x, double *n, double *dr)
{
    *n = (x * CV_VM_LOG2E + CV_VM_RNDD) - CV_VM_RNDD;
    double r1 = x - *n * CV_VM_LN2_HI;
    double r = r1 - *n * CV_VM_LN2_LO;
    *dr = (r1 - r) - *n * CV_VM_LN2_LO;
    return r;
}

/* 2^n for integer-valued n in [-1022, 1023]: the low bits of n + 1.5*2^52
 * are n in two's complement, shifted into the exponent field. */
CV_VM double cv_vm_pow2(double n)
{
    return cv_vm_u2d((cv_vm_d2u(n + CV_VM_RNDD) << 52) + ((uint64_t)1023 << 52));
}

CV_VM double cv_exp(double x)
{
    double xc = x > 710.0 ? 710.0 : x; /* n in [-1076, 1024], see cv_expf */
    xc = xc < -746.0 ? -746.0 : xc;
    double n, dr;
    double r = cv_vm_reduce_ln2(xc, &n, &dr);
    double p = 1.0 + (r + (dr + r * r * (0x1.000000000000ap-1 + r * (0x1.5555555555503p-3
               + r * (0x1.5555555550607p-5 + r * (0x1.1111111124d39p-7 + r * (0x1.6c16c184b4b96p-10
               + r * (0x1.a01a013d4d1b3p-13 + r * (0x1.a01998905ff9ap-16 + r * (0x1.71def4334c181p-19
               + r * (0x1.28aed57ab85adp-22 + r * 0x1.add76a38755c8p-26)))))))))));
    double n1 = (n * 0.5 + CV_VM_RNDD) - CV_VM_RNDD;
    return p * cv_vm_pow2(n1) * cv_vm_pow2(n - n1);
}

/* expm1 without the -0.0 fix-up, for x in [-40, 710] or NaN. */
CV_VM double cv_vm_expm1_core(double x)
{
    double n, dr;
    double r = cv_vm_reduce_ln2(x, &n, &dr);
    double r2 = r * r;
    double q = 0x1.5555555555559p-3 + r * (0x1.555555555554bp-5 + r * (0x1.111111110f5b1p-7
               + r * (0x1.6c16c16c083b2p-10 + r * (0x1.a01a01b0bad0bp-13 + r * (0x1.a01a02632be26p-16
               + r * (0x1.71ddf50accca8p-19 + r * (0x1.27e2508db0987p-22 + r * (0x1.af6659238a32dp-26
               + r * 0x1.24b7964ca0d18p-29))))))));
    double em = r + (dr + (r2 * 0.5 + r2 * r * q));
    double s = cv_vm_pow2(n - 1.0);
    return 2.0 * (s * em + (s - 0.5));
}

CV_VM double cv_expm1(double x)
{
    double xc = x > 710.0 ? 710.0 : x;
    xc = xc < -40.0 ? -40.0 : xc; /* expm1 rounds to -1 below -37.5 */
    double r = cv_vm_expm1_core(xc);
    return fabs(x) < 0x1p-54 ? x : r; /* keeps -0.0 and subnormals exact */
}

/* As cv_vm_log1pf_red. */
CV_VM double cv_vm_log1p_red(double f)
{
    double s = f / (2.0 + f);
    double z = s * s;
    double t = z * (0x1.555555555559bp-1 + z * (0x1.999999997cbc3p-2 + z * (0x1.24924944e6568p-2
               + z * (0x1.c71c4f7d11b7ep-3 + z * (0x1.7466cbb64e6cap-3 + z * (0x1.3992e2ba3bb2fp-3
               + z * 0x1.2fa1138c40786p-3))))));
    return f - s * (f - t);
}

/* As cv_vm_split_logf. e sits in the top 12 bits of t in two's complement;
 * flipping bit 11 makes it e + 2048, read back as a double by bit pattern. */
CV_VM double cv_vm_split_log(double u, double *e)
{
    uint64_t iu = cv_vm_d2u(u);
    uint64_t t = iu - CV_VM_SQRT_HALF_BITS;
    *e = cv_vm_u2d(((t >> 52) ^ 0x800u) | 0x4330000000000000ull) - (0x1p52 + 2048.0);
    return cv_vm_u2d(iu - (t & 0xfff0000000000000ull)) - 1.0;
}

CV_VM double cv_log(double x)
{
    int sub = x < 0x1p-1022;
    double e;
    double f = cv_vm_split_log(sub ? x * 0x1p54 : x, &e);
    e = sub ? e - 54.0 : e;
    double r = e * CV_VM_LN2_HI + (cv_vm_log1p_red(f) + e * CV_VM_LN2_LO);
    r = x < __builtin_inf() ? r : x;
    r = x < 0.0 ? __builtin_nan("") : r;
    return x == 0.0 ? -__builtin_inf() : r;
}

CV_VM double cv_log1p(double x)
{
    double u = 1.0 + x;
    int xbig = fabs(x) > 1.0;
    double big = xbig ? x : 1.0, small = xbig ? 1.0 : x;
    double c = small - (u - big);
    double e;
    double f = cv_vm_split_log(u, &e); /* the rest as cv_log1pf */
    f = f + c * cv_vm_pow2(-(e < 1000.0 ? e : 1000.0));
    double r = e * CV_VM_LN2_HI + (cv_vm_log1p_red(f) + e * CV_VM_LN2_LO);
    r = x < __builtin_inf() ? r : x;
    r = x < -1.0 ? __builtin_nan("") : r;
    r = x == -1.0 ? -__builtin_inf() : r;
    return x == 0.0 ? x : r;
}

/* As cv_tanhf, with the polynomial for |x| < 0.4. */
CV_VM double cv_tanh(double x)
{
    double ax = fabs(x);
    double x2 = x * x;
    double p = x + x * x2 * (-0x1.555555555553fp-2 + x2 * (0x1.111111110e51ap-3
               + x2 * (-0x1.ba1ba1b661df1p-5 + x2 * (0x1.664f474567e57p-6 + x2 * (-0x1.226df98397e99p-7
               + x2 * (0x1.d6c621eaeba7bp-9 + x2 * (-0x1.7cab3242a398ep-10 + x2 * (0x1.2a9d8fc1cb05bp-11
               + x2 * -0x1.6e29530f37b33p-13))))))));
    double a = ax > 20.0 ? 20.0 : ax; /* tanh rounds to 1 from 19.07 on */
    double em = cv_vm_expm1_core(2.0 * a);
    double t = copysign(em / (em + 2.0), x);
    t = ax < 0.4 ? p : t;
    return x == 0.0 ? x : t;
}

CV_VM double cv_sigmoid(double x)
{
    double e = cv_exp(-fabs(x));
    return (x < 0.0 ? e : 1.0) / (1.0 + e);
}

CV_VM double cv_erf(double x)
{
    double ax = fabs(x);
    /* |x| < 0.875: erf = x + x P(x^2), as cv_erff */
    double x2 = x * x;
    double small = x + x * (0x1.06eba8214db69p-3
                    + x2 * (-0x1.812746b037a2bp-2
                    + x2 * (0x1.ce2f21a0461d2p-4
                    + x2 * (-0x1.b82ce313934b3p-6
                    + x2 * (0x1.565bcd38acefep-8
                    + x2 * (-0x1.c02dbbcf386b0p-11
                    + x2 * (0x1.f9a40c723f473p-14
                    + x2 * (-0x1.f4e32606fa456p-17
                    + x2 * (0x1.baad8285f0336p-20
                    + x2 * (-0x1.64f17f88390f3p-23
                    + x2 * (0x1.11c9820ace4d6p-26
                    + x2 * (-0x1.63d8fcaa5fde5p-30))))))))))));
    /* else erf = 1 - exp(L(|x|) - x^2), L ~ log(erfc) + x^2 fitted on [0.875, 2]
     * and (weighted by erfc) on [2, 6]: one Horner pass over coefficients
     * selected per element. erf rounds to 1 from 5.93 on. */
    double a = ax > 6.0 ? 6.0 : ax;
    int lo = a < 2.0;
    double l = lo ? 0x1.08f218fa8afacp-28 : 0.0;
    l = l * a + (lo ? -0x1.636418c53bb01p-24 : 0.0);
    l = l * a + (lo ? 0x1.aad9f2df7b064p-21 : -0x1.799876910eabfp-30);
    l = l * a + (lo ? -0x1.22c998c110882p-18 : 0x1.aff3f9af0de5fp-25);
    l = l * a + (lo ? 0x1.b240884110411p-17 : -0x1.bd85346183491p-21);
    l = l * a + (lo ? -0x1.4e106a2e919e1p-18 : 0x1.0d6420e776d75p-17);
    l = l * a + (lo ? -0x1.373c4a5c832ffp-13 : -0x1.9758cf7af3d76p-15);
    l = l * a + (lo ? 0x1.93073d3f1a7d8p-11 : 0x1.5c2944986ccadp-13);
    l = l * a + (lo ? -0x1.ef81c9cf8e216p-10 : -0x1.431e275199eeap-16);
    l = l * a + (lo ? 0x1.81f4c4ba6640fp-12 : -0x1.cf17e3684cfb3p-9);
    l = l * a + (lo ? 0x1.37cee6224d7b1p-6 : 0x1.963110a15bc8cp-6);
    l = l * a + (lo ? -0x1.a4c7a0234f948p-4 : -0x1.bd5a8e71a555bp-4);
    l = l * a + (lo ? 0x1.74167e8111268p-2 : 0x1.78681a802c0d7p-2);
    l = l * a + (lo ? -0x1.20dd4b8f79b94p+0 : -0x1.21536f2aa22f0p+0);
    l = l * a + (lo ? -0x1.cdd9dec6115b6p-23 : 0x1.739e1dfd0540bp-12);
    double big = copysign(1.0 - cv_exp(l - a * a), x);
    return ax < 0.875 ? small : big;
}

/* Largest |x| for which cv_sin/cv_cos reduce exactly (q < 2^32 below). */
#define CV_TRIG_F64_MAX 0x1p32

/* r - t and its rounding error, exactly, in any order of magnitude (TwoSum). */
CV_VM double cv_vm_sub_err(double r, double t, double *err)
{
    double s = r - t;
    double bb = s - r;
    *err += (r - (s - bb)) - (t + bb);
    return s;
}

/* x = q pi/2 + r, |r| <= pi/4 (+ a hair), q mod 4 returned. pi/2 is split
 * into five 21-bit pieces (q * piece exact for q < 2^32) and a sixth full
 * one. Subtracting the pieces in turn is exact while r is small, which is
 * what cancellation needs (no double below 2^60 comes closer than 2^-61 to a
 * multiple of pi/2); the rounding errors of the later steps, which matter
 * when r is large, are collected exactly and added back once. */
CV_VM double cv_vm_reduce_pio2(double x, double *q)
{
    double n = (x * 0x1.45f306dc9c883p-1 + CV_VM_RNDD) - CV_VM_RNDD;
    double r = (x - n * 0x1.921fbp+0) - n * 0x1.5110bp-22;
    double err = 0.0;
    r = cv_vm_sub_err(r, n * 0x1.18469p-44, &err);
    r = cv_vm_sub_err(r, n * 0x1.13198p-65, &err);
    r = cv_vm_sub_err(r, n * 0x1.45c06p-86, &err);
    r = cv_vm_sub_err(r, n * 0x1.c1cd129024e09p-107, &err);
    *q = n - 4.0 * cv_vm_floor_small(n * 0.25); /* n mod 4 */
    return r + err;
}

CV_VM double cv_vm_sin_poly(double r)
{
    double z = r * r;
    return r + r * z * (-0x1.5555555555548p-3 + z * (0x1.111111110f764p-7
           + z * (-0x1.a01a019bf641fp-13 + z * (0x1.71de3564f2978p-19
           + z * (-0x1.ae5e5a663123fp-26 + z * 0x1.5d90313ce67e1p-33)))));
}

CV_VM double cv_vm_cos_poly(double r)
{
    double z = r * r;
    /* w = 1 - z/2 rounded; (1 - w) - z/2 recovers that rounding. */
    double hz = 0.5 * z, w = 1.0 - hz;
    return w + (((1.0 - w) - hz) + z * z * (0x1.555555555554bp-5 + z * (-0x1.6c16c16c15015p-10
           + z * (0x1.a01a019c8f1b8p-16 + z * (-0x1.27e4f7f1814cfp-22
           + z * (0x1.1ee9dbbde8405p-29 + z * -0x1.8fa678994b5ffp-37))))));
}

CV_VM double cv_sin(double x)
{
    double q;
    double r = cv_vm_reduce_pio2(x, &q);
    double s = cv_vm_sin_poly(r), c = cv_vm_cos_poly(r);
    double v = (q == 1.0 || q == 3.0) ? c : s;
    v = q >= 2.0 ? -v : v;
    v = fabs(x) <= CV_TRIG_F64_MAX ? v : __builtin_nan(""); /* also inf, NaN */
    return x == 0.0 ? x : v;
}

CV_VM double cv_cos(double x)
{
    double q;
    double r = cv_vm_reduce_pio2(x, &q);
    double s = cv_vm_sin_poly(r), c = cv_vm_cos_poly(r);
    double v = (q == 1.0 || q == 3.0) ? s : c;
    v = (q == 1.0 || q == 2.0) ? -v : v;
    return fabs(x) <= CV_TRIG_F64_MAX ? v : __builtin_nan("");
}

/* libm fallbacks for |x| > CV_TRIG_F64_MAX; out of line, not vectorizable. */
__attribute__((noinline, unused)) static double cv_sin_big(double x) { return sin(x); }
__attribute__((noinline, unused)) static double cv_cos_big(double x) { return cos(x); }

/* ======================================================================
 * NumPy semantics helpers
 * ==================================================================== */

/* np.maximum / np.minimum: NaN in either operand gives NaN; on ties
 * (-0.0 vs 0.0) the second operand, as NumPy returns. */
CV_VM float cv_fmaxf_np(float a, float b) { return a != a ? a : (a > b ? a : b); }
CV_VM float cv_fminf_np(float a, float b) { return a != a ? a : (a < b ? a : b); }
CV_VM double cv_fmax_np(double a, double b) { return a != a ? a : (a > b ? a : b); }
CV_VM double cv_fmin_np(double a, double b) { return a != a ? a : (a < b ? a : b); }

/* np.sign: NaN stays NaN, both zeros give +0.0. */
CV_VM float cv_signf(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x == 0.0f ? 0.0f : x; }
CV_VM double cv_sign(double x) { return x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : x == 0.0 ? 0.0 : x; }

/* One exact step of fmod(A, B) for float operands held in double (B has
 * 24 bits): q truncated to 29 bits is an integer once q >= 2^28, q * B is
 * exact and close to A, so A - q B is exact and the quotient loses 28 bits. */
CV_VM double cv_vm_fmodf_step(double a, double b, double inv)
{
    double q = a * inv;
    double qt = cv_vm_u2d(cv_vm_d2u(q) & ~((1ull << 24) - 1));
    return fabs(q) >= 0x1p28 ? a - qt * b : a;
}

/* fmod(a, b) for float a, b, exact for all arguments: quotients reach
 * 2^277, nine steps bring them below 2^28 and a last one to the remainder. */
CV_VM float cv_vm_fmodf(float a, float b)
{
    double x = fabs((double)a), y = fabs((double)b), inv = 1.0 / y;
    x = cv_vm_fmodf_step(x, y, inv);
    x = cv_vm_fmodf_step(x, y, inv);
    x = cv_vm_fmodf_step(x, y, inv);
    x = cv_vm_fmodf_step(x, y, inv);
    x = cv_vm_fmodf_step(x, y, inv);
    x = cv_vm_fmodf_step(x, y, inv);
    x = cv_vm_fmodf_step(x, y, inv);
    x = cv_vm_fmodf_step(x, y, inv);
    x = cv_vm_fmodf_step(x, y, inv);
    x -= ((x * inv + CV_VM_RNDD) - CV_VM_RNDD) * y;
    x = x < 0.0 ? x + y : x;
    float m = copysignf((float)x, a);
    m = fabsf(b) == __builtin_inff() ? a : m;
    return fabsf(a) < __builtin_inff() && fabsf(b) > 0.0f ? m : __builtin_nanf("");
}

/* As cv_vm_fmodf_step for double: B = bh + bl (27 + 26 bits) keeps q * bh
 * and q * bl exact for q of 26 bits; the quotient loses 25 bits a step. */
CV_VM double cv_vm_fmod_step(double a, double bh, double bl, double inv)
{
    double q = a * inv;
    double qt = cv_vm_u2d(cv_vm_d2u(q) & ~((1ull << 27) - 1));
    return fabs(q) >= 0x1p26 ? (a - qt * bh) - qt * bl : a;
}

/* Quotients below which the double remainder is exact (two steps). */
#define CV_FMOD_F64_EXACT_QUOTIENT 0x1p76

/* fmod(a, b) for double, exact while |a / b| < 2^76; beyond, some value in
 * [0, |b|) with the sign of a. */
CV_VM double cv_vm_fmod(double a, double b)
{
    double x = fabs(a), y = fabs(b);
    /* below 2^-1000 scale into the range where 1 / y is finite; the clamp
     * only touches quotients far past the exact range */
    int tiny = y < 0x1p-1000;
    x = tiny ? (x < 0x1p960 ? x * 0x1p60 : 0x1p1020) : x;
    y = tiny ? y * 0x1p60 : y;
    double inv = 1.0 / y;
    double bh = cv_vm_u2d(cv_vm_d2u(y) & ~((1ull << 26) - 1)), bl = y - bh;
    x = cv_vm_fmod_step(x, bh, bl, inv);
    x = cv_vm_fmod_step(x, bh, bl, inv);
    double q = (x * inv + CV_VM_RNDD) - CV_VM_RNDD;
    x = (x - q * bh) - q * bl;
    x = x < 0.0 ? x + y : x;
    x = x >= 0.0 && x < y ? x : 0.0;
    double m = copysign(tiny ? x * 0x1p-60 : x, a);
    m = fabs(b) == __builtin_inf() ? a : m;
    return fabs(a) < __builtin_inf() && fabs(b) > 0.0 ? m : __builtin_nan("");
}

/* np.floor_divide and np.remainder for floats follow NumPy's npy_divmod:
 * mod = fmod(a, b); div = (a - mod) / b; move mod to the sign of b
 * (div - 1); snap div to an integer; zero results take signs as there.
 * "mod and b differ in sign" is one compare, sign(b) * mod < 0: compound
 * conditions over float and double masks stop gcc from vectorizing. */
CV_VM float cv_floor_dividef(float a, float b)
{
    float mod = cv_vm_fmodf(a, b);
    float div = (a - mod) / b;
    div = copysignf(1.0f, b) * mod < 0.0f ? div - 1.0f : div;
    float fl = cv_vm_floorf(div);
    fl = div - fl > 0.5f ? fl + 1.0f : fl;
    fl = div != 0.0f ? fl : copysignf(0.0f, a / b);
    return b != 0.0f ? fl : a / b;
}

CV_VM float cv_remainderf(float a, float b)
{
    float mod = cv_vm_fmodf(a, b);
    float m = copysignf(1.0f, b) * mod < 0.0f ? mod + b : mod;
    return mod != 0.0f ? m : copysignf(0.0f, b);
}

/* Beyond 2^54 NumPy's div is a / b itself: |mod| < |b| is then below half
 * an ulp of a, so a - mod rounds to a. Exact everywhere for that reason. */
CV_VM double cv_floor_divide(double a, double b)
{
    double mod = cv_vm_fmod(a, b);
    double div = (a - mod) / b;
    div = copysign(1.0, b) * mod < 0.0 ? div - 1.0 : div;
    double fl = cv_vm_floor(div);
    fl = div - fl > 0.5 ? fl + 1.0 : fl;
    fl = div != 0.0 ? fl : copysign(0.0, a / b);
    double q = a / b + (mod - mod); /* NaN where mod is (a = +-inf) */
    fl = fabs(q) >= 0x1p54 ? q : fl;
    return b != 0.0 ? fl : a / b;
}

/* Exact while |a / b| < CV_FMOD_F64_EXACT_QUOTIENT. */
CV_VM double cv_remainder(double a, double b)
{
    double mod = cv_vm_fmod(a, b);
    double m = copysign(1.0, b) * mod < 0.0 ? mod + b : mod;
    return mod != 0.0 ? m : copysign(0.0, b);
}

/* Integer floor division and remainder as NumPy: b == 0 gives 0 (NumPy
 * warns), INT_MIN // -1 wraps to INT_MIN and INT_MIN % -1 is 0. x86 has no
 * vector integer division; doubles carry the quotient. */

/* a / b in double, floored, is exactly floor(a / b) for 32-bit operands. */
CV_VM double cv_vm_floordiv_i32(int32_t a, int32_t b)
{
    return cv_vm_floor_small((double)a / (double)b);
}

/* Low 32 bits of an integer-valued double's two's complement. */
CV_VM int32_t cv_vm_f64_to_i32(double v)
{
    return (int32_t)(uint32_t)cv_vm_d2u(v + CV_VM_RNDD);
}

CV_VM int32_t cv_floor_divide_i32(int32_t a, int32_t b)
{
    int32_t q = cv_vm_f64_to_i32(cv_vm_floordiv_i32(a, b));
    return b != 0 ? q : 0;
}

CV_VM int32_t cv_remainder_i32(int32_t a, int32_t b)
{
    /* a - q b is exact in double (|q b| <= 2^32). */
    int32_t r = cv_vm_f64_to_i32((double)a - cv_vm_floordiv_i32(a, b) * (double)b);
    return b != 0 ? r : 0;
}

/* int64 <-> double without AVX-512DQ: the halves go through the mantissa.
 * Rounds to nearest (exact below 2^53). */
CV_VM double cv_vm_i64_to_f64(uint64_t u)
{
    double hi = cv_vm_u2d(((u >> 32) ^ 0x80000000u) | 0x4530000000000000ull) - (0x1p84 + 0x1p63);
    double lo = cv_vm_u2d((u & 0xffffffffu) | 0x4330000000000000ull) - 0x1p52;
    return hi + lo;
}

/* Integer-valued v, |v| <= 2^63, to two's complement (2^63 wraps). */
CV_VM uint64_t cv_vm_f64_to_i64(double v)
{
    double hi = cv_vm_floor_small(v * 0x1p-32);
    double lo = v - hi * 0x1p32;
    return (cv_vm_d2u(hi + CV_VM_RNDD) << 32) + (cv_vm_d2u(lo + 0x1p52) & 0xffffffffu);
}

/* Wrapping 64-bit product from 32-bit halves (vectorizes as pmuludq). */
CV_VM uint64_t cv_vm_mul64(uint64_t a, uint64_t b)
{
    uint64_t al = a & 0xffffffffu, ah = a >> 32, bl = b & 0xffffffffu, bh = b >> 32;
    return al * bl + ((al * bh + ah * bl) << 32);
}

/* 1 if v != 0, else 0, without a 64-bit compare. */
CV_VM uint64_t cv_vm_nz64(uint64_t v) { return (v | (0 - v)) >> 63; }

/* floor(a / b) and a - b floor(a / b) for b != 0: a double quotient is
 * within 2^12 of the answer, a second pass on the remainder within 1, and
 * sign tests on the remainder fix the last step. */
CV_VM uint64_t cv_vm_divmod_i64(uint64_t a, uint64_t b, uint64_t *rem)
{
    double bd = cv_vm_i64_to_f64(b);
    uint64_t q = cv_vm_f64_to_i64(cv_vm_floor(cv_vm_i64_to_f64(a) / bd));
    uint64_t r = a - cv_vm_mul64(q, b);
    double d = cv_vm_floor_small(cv_vm_i64_to_f64(r) / bd);
    uint64_t di = cv_vm_d2u(d + CV_VM_RNDD) - cv_vm_d2u(CV_VM_RNDD);
    q += di;
    r -= cv_vm_mul64(di, b);
    /* now r is in (-|b|, 2|b|) on b's side: one more step either way */
    uint64_t sb = b >> 63, sr = r >> 63, nzr = cv_vm_nz64(r), t = r - b;
    uint64_t under = nzr & (sr ^ sb);
    uint64_t over = nzr & (1 ^ sr ^ sb) & ((1 ^ (t >> 63) ^ sb) | (1 ^ cv_vm_nz64(t)));
    *rem = r + (b & (0 - under)) - (b & (0 - over));
    return q + over - under;
}

CV_VM int64_t cv_floor_divide_i64(int64_t a, int64_t b)
{
    uint64_t r, q = cv_vm_divmod_i64((uint64_t)a, (uint64_t)b, &r);
    return (int64_t)(q & (0 - cv_vm_nz64((uint64_t)b)));
}

CV_VM int64_t cv_remainder_i64(int64_t a, int64_t b)
{
    uint64_t r;
    cv_vm_divmod_i64((uint64_t)a, (uint64_t)b, &r);
    return (int64_t)(r & (0 - cv_vm_nz64((uint64_t)b)));
}

#endif /* CUVIL_AOT_VMATH_H */
