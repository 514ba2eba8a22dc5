#ifndef CUVIL_AOT_CUDA_DIVIDE_H
#define CUVIL_AOT_CUDA_DIVIDE_H
/* float32 division in generated CUDA (ops_cuda.py lowers every float32 `/` to cv_divf).
 * Device code only but for cv_rcp_approx: tests/divide_emulator.cpp defines CV_DEV and a
 * model of it (CV_RCP_APPROX_MODEL) and runs cv_divf on the CPU against IEEE division. */

#ifndef CV_RCP_APPROX_MODEL
/* 1 / y within an ulp (MUFU.RCP); subnormal y and results flushed to zero. */
CV_DEV float cv_rcp_approx(float y) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(y));
    return r;
}
#endif

/* x / y for float32 with no branch: within one ulp of IEEE division, and equal to it but
 * for a few normal quotients in 10^5 (tests/divide_emulator.cpp, with the reciprocal an ulp
 * off). IEEE division (div.rn) is a fast path plus a call for extreme operands, and that
 * branch cut a GEMM epilogue into one block an element: BERT's erf-GELU FFN up took 88 us,
 * 58 with div.full's 2 ulp (H200, bench/gpu/layer_gemms.py). Here: r, 1 / y by rcp.approx
 * and one Newton step; q = x r; the remainder x - y q by an FMA (exact while it is a normal
 * number); q + rem r, one more FMA, within 0.5 + 2^-22 ulp of x / y (Markstein's
 * correction: the fast path of div.rn itself). Powers of two bring the operands into the
 * range where those steps hold (x from below 2^-100, so that the remainder stays normal; y
 * from beyond 2^+-125, where rcp.approx flushes) and scale the quotient back: a subnormal
 * quotient may round twice there (within one ulp). Where q + rem r is not finite or is
 * zero (x or y zero, inf or NaN; x / y past the range) x r0 is: rcp.approx has 1 / 0,
 * 1 / inf and the signs of zeros right. */
CV_DEV float cv_divf(float x, float y) {
    const float ax = fabsf(x), ay = fabsf(y);
    const bool tiny_x = ax < 0x1p-100f;
    const float sy = ay > 0x1p125f ? 0x1p-64f : ay < 0x1p-125f ? 0x1p64f : 1.f;
    const float xs = tiny_x ? x * 0x1p48f : x, ys = y * sy;
    const float r0 = cv_rcp_approx(ys);
    const float r = fmaf(r0, fmaf(-ys, r0, 1.f), r0);
    const float q = xs * r;
    const float q1 = fmaf(fmaf(-ys, q, xs), r, q);
    const float back = (tiny_x ? 0x1p-48f : 1.f) * sy; /* x / y = (xs / ys) * sy / sx */
    return (fabsf(q1) < INFINITY && q1 != 0.f ? q1 : xs * r0) * back; /* (NaN: false) */
}

#endif
