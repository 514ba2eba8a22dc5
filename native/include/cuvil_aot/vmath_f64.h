/* The float64 functions of vmath.h; include cuvil_aot/vmath.h, not this file. */
#ifndef CUVIL_AOT_VMATH_F64_H
#define CUVIL_AOT_VMATH_F64_H

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


#endif /* CUVIL_AOT_VMATH_F64_H */
