/* The NumPy-semantics helpers of vmath.h; include cuvil_aot/vmath.h, not this file. */
#ifndef CUVIL_AOT_VMATH_NUMPY_H
#define CUVIL_AOT_VMATH_NUMPY_H

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


#endif /* CUVIL_AOT_VMATH_NUMPY_H */
