/* The float32 functions of vmath.h; include cuvil_aot/vmath.h, not this file. */
#ifndef CUVIL_AOT_VMATH_F32_H
#define CUVIL_AOT_VMATH_F32_H

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


#endif /* CUVIL_AOT_VMATH_F32_H */
