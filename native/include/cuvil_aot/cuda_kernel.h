/* CUDA C++, for nvcc only. What generated CUDA kernels include: storage
 * types, the scalar helpers that give C operators NumPy's semantics (the
 * device twins of kernel.h's), and warp/block reductions for row kernels. */
#ifndef CUVIL_AOT_CUDA_KERNEL_H
#define CUVIL_AOT_CUDA_KERNEL_H

#include <cuda_fp16.h>
#include <stdint.h>

#include "cuvil_aot/cuda_driver.h"

#define CV_DEV static __device__ __forceinline__
#define CV_MEMBER __device__ __forceinline__

#include "cuvil_aot/cuda_divide.h"

typedef uint8_t cv_bool; /* NumPy's bool: one byte holding 0 or 1 */
typedef __half cv_f16;   /* storage only; kernels compute float16 in float */

/* bfloat16 (torch.bfloat16, ml_dtypes.bfloat16): the upper half of a float32's bits,
 * computed in float. kernel.h's cv_bf16 with C++ conversions, so that generated code
 * moves it as any storage type ((cv_bf16)(v), (float)x, cv_vec<cv_bf16, V>); the
 * rounding is kernel.h's bit for bit: to nearest, ties to even, a NaN stays a quiet NaN
 * (not cuda_bf16.h's, whose NaN is canonical). */
struct cv_bf16 {
    uint16_t bits;
    cv_bf16() = default;
    CV_MEMBER cv_bf16(float f) {
        const unsigned u = __float_as_uint(f);
        bits = (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((u >> 16) | 0x40u)
                                               : (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    CV_MEMBER operator float() const { return __uint_as_float((unsigned)bits << 16); }
};
CV_DEV float cv_bf16_load(cv_bf16 x) { return (float)x; }
/* *p through the read-only path (ld.global.nc), for data the kernel does not write: ptxas
 * then issues such loads ahead of earlier stores, which it must otherwise assume alias
 * them (a GEMM epilogue's band of rows: one load's latency, not one a row). */
template <class T> CV_DEV T cv_ldg(const T *p) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                  "cv_ldg: 1, 2, 4 or 8 bytes");
    if constexpr (sizeof(T) == 1) {
        const unsigned char b = __ldg(reinterpret_cast<const unsigned char *>(p));
        return *reinterpret_cast<const T *>(&b);
    } else if constexpr (sizeof(T) == 2) {
        const unsigned short b = __ldg(reinterpret_cast<const unsigned short *>(p));
        return *reinterpret_cast<const T *>(&b);
    } else if constexpr (sizeof(T) == 4) {
        const unsigned int b = __ldg(reinterpret_cast<const unsigned int *>(p));
        return *reinterpret_cast<const T *>(&b);
    } else {
        const unsigned long long b = __ldg(reinterpret_cast<const unsigned long long *>(p));
        return *reinterpret_cast<const T *>(&b);
    }
}
/* *p, through the read-only path where RO (cv_ldg). */
template <bool RO, class T> CV_DEV T cv_ld(const T *p) {
    if constexpr (RO) return cv_ldg(p);
    else return *p;
}
CV_DEV cv_bf16 cv_bf16_store(float f) { return cv_bf16(f); }
CV_DEV float cv_bf16_round(float f) { return (float)cv_bf16(f); }
/* kernel.h's: the upper half of a float cv_bf16_round made (no second rounding: in a GEMM
 * epilogue storing `.astype(bfloat16)` the two took ~15 instructions a warp's element). */
CV_DEV cv_bf16 cv_bf16_exact(float f) {
    cv_bf16 r;
    r.bits = (uint16_t)(__float_as_uint(f) >> 16);
    return r;
}

/* kernel.h's cv_tf32_round: to TF32 to nearest, ties away (cvt.rna.tf32.f32's rounding) */
CV_DEV float cv_tf32_round(float f) {
    unsigned u = __float_as_uint(f);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
    return __uint_as_float(u);
}

/* N consecutive elements moved by one (or a few) wide loads and stores. */
template <class T, int N>
struct alignas(sizeof(T) * N) cv_vec {
    T v[N];
};

/* np.maximum / np.minimum: a NaN in either operand is the result. */
CV_DEV float cv_maximumf(float a, float b) { return (a != a || a > b) ? a : b; }
CV_DEV float cv_minimumf(float a, float b) { return (a != a || a < b) ? a : b; }
CV_DEV double cv_maximumd(double a, double b) { return (a != a || a > b) ? a : b; }
CV_DEV double cv_minimumd(double a, double b) { return (a != a || a < b) ? a : b; }

CV_DEV float cv_signf(float a) { return a != a ? a : (float)((a > 0) - (a < 0)); }
CV_DEV double cv_signd(double a) { return a != a ? a : (double)((a > 0) - (a < 0)); }

/* np.floor_divide and np.remainder for floats (Python's sign convention). */
template <class T>
CV_DEV T cv_divmod(T a, T b, T *mod) {
    T m = fmod(a, b);
    if (!b) {
        *mod = m;
        return a / b;
    }
    T div = (a - m) / b;
    if (m) {
        if ((b < 0) != (m < 0)) {
            m += b;
            div -= 1;
        }
    } else {
        m = copysign((T)0, b);
    }
    *mod = m;
    if (!div) return copysign((T)0, a / b);
    T q = floor(div);
    return (div - q > (T)0.5) ? q + 1 : q;
}
template <class T>
CV_DEV T cv_floordiv_fp(T a, T b) {
    T m;
    return b ? cv_divmod(a, b, &m) : a / b;
}
template <class T>
CV_DEV T cv_remainder_fp(T a, T b) {
    T m;
    if (!b) return fmod(a, b);
    cv_divmod(a, b, &m);
    return m;
}
CV_DEV float cv_floordivf(float a, float b) { return cv_floordiv_fp(a, b); }
CV_DEV double cv_floordivd(double a, double b) { return cv_floordiv_fp(a, b); }
CV_DEV float cv_remainderf(float a, float b) { return cv_remainder_fp(a, b); }
CV_DEV double cv_remainderd(double a, double b) { return cv_remainder_fp(a, b); }

/* Integer // and % as NumPy: floor semantics, 0 for a zero divisor, MIN // -1
 * wrapping to MIN. */
template <class T>
CV_DEV T cv_floordiv_int(T a, T b) {
    if (b == 0) return 0;
    if (b == -1) return (T)(0 - (uint64_t)a);
    T q = a / b;
    return ((a % b) != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <class T>
CV_DEV T cv_remainder_int(T a, T b) {
    if (b == 0 || b == -1) return 0;
    T r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <class T>
CV_DEV T cv_power_int(T a, T b) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    uint64_t r = 1, base = (uint64_t)a;
    for (; b; b >>= 1, base *= base)
        if (b & 1) r *= base;
    return (T)r;
}
/* Unsigned: no negative operands, so no sign fix-ups (and no MIN // -1). */
template <class T>
CV_DEV T cv_floordiv_uint(T a, T b) { return b ? (T)(a / b) : (T)0; }
template <class T>
CV_DEV T cv_remainder_uint(T a, T b) { return b ? (T)(a % b) : (T)0; }
template <class T>
CV_DEV T cv_power_uint(T a, T b) {
    uint64_t r = 1, base = a;
    for (; b; b >>= 1, base *= base)
        if (b & 1) r *= base;
    return (T)r;
}
/* One per integer family of ops_c.FAMILY. The small types compute in int (C++'s
 * promotion) and the (T) of the result wraps them, as NumPy wraps after each op. */
#define CV_INT_HELPERS(T, fam, kind)                                                  \
    CV_DEV T cv_floordiv##fam(T a, T b) { return cv_floordiv_##kind(a, b); }          \
    CV_DEV T cv_remainder##fam(T a, T b) { return cv_remainder_##kind(a, b); }        \
    CV_DEV T cv_power##fam(T a, T b) { return cv_power_##kind(a, b); }
CV_INT_HELPERS(int8_t, i8, int)
CV_INT_HELPERS(int16_t, i16, int)
CV_INT_HELPERS(int32_t, i32, int)
CV_INT_HELPERS(int64_t, i64, int)
CV_INT_HELPERS(uint8_t, u8, uint)
CV_INT_HELPERS(uint64_t, u64, uint)
#undef CV_INT_HELPERS

/* Reduction operators of row stages; max/min propagate NaN as NumPy does. */
struct cv_op_sum {
    template <class T> CV_MEMBER T operator()(T a, T b) const { return a + b; }
};
struct cv_op_prod {
    template <class T> CV_MEMBER T operator()(T a, T b) const { return a * b; }
};
/* max/min of a reduction, NaN-propagating as np.max: one instruction on sm_80+
 * (max.NaN), where cv_maximumf's compare-and-select chain measured 67 us against 58 us
 * for a plain fmaxf in the 4096 x 4096 softmax. Which zero of +-0 wins may differ. */
CV_DEV float cv_reduce_maxf(float a, float b) {
#if __CUDA_ARCH__ >= 800
    float d;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
    return d;
#else
    return cv_maximumf(a, b);
#endif
}
CV_DEV float cv_reduce_minf(float a, float b) {
#if __CUDA_ARCH__ >= 800
    float d;
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
    return d;
#else
    return cv_minimumf(a, b);
#endif
}

struct cv_op_max {
    CV_MEMBER float operator()(float a, float b) const { return cv_reduce_maxf(a, b); }
    CV_MEMBER double operator()(double a, double b) const { return cv_maximumd(a, b); }
    template <class T> CV_MEMBER T operator()(T a, T b) const { return a > b ? a : b; }
};
struct cv_op_min {
    CV_MEMBER float operator()(float a, float b) const { return cv_reduce_minf(a, b); }
    CV_MEMBER double operator()(double a, double b) const { return cv_minimumd(a, b); }
    template <class T> CV_MEMBER T operator()(T a, T b) const { return a < b ? a : b; }
};

template <class T>
CV_DEV T cv_shfl_xor(T v, int lane_mask) { return __shfl_xor_sync(0xffffffffu, v, lane_mask); }
CV_DEV cv_bool cv_shfl_xor(cv_bool v, int lane_mask) {
    return (cv_bool)__shfl_xor_sync(0xffffffffu, (int)v, lane_mask);
}

/* Every lane gets the reduction over its aligned group of WIDTH lanes (the warp). */
template <int WIDTH = 32, class T, class Op>
CV_DEV T cv_warp_reduce(T v, Op op) {
    for (int off = WIDTH / 2; off > 0; off >>= 1) v = op(v, cv_shfl_xor(v, off));
    return v;
}

/* Every thread of the block gets the reduction over the block; all threads
 * must call it. Each thread folds the warps' results in the same order, so
 * all see the same value. */
template <class T, class Op>
CV_DEV T cv_block_reduce(T v, Op op) {
    __shared__ T part[32];
    v = cv_warp_reduce(v, op);
    const int warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
    __syncthreads(); /* the previous reduction has read part[] */
    if ((threadIdx.x & 31) == 0) part[warp] = v;
    __syncthreads();
    v = part[0];
    for (int w = 1; w < nwarps; w++) v = op(v, part[w]);
    return v;
}

/* A team works on one row: TEAM aligned lanes of a warp (TEAM 8 or 32) or the whole
 * block (TEAM 0 or the block size). */
template <int TEAM>
constexpr bool cv_team_in_warp = TEAM != 0 && TEAM <= 32;

template <int TEAM, class T, class Op>
CV_DEV T cv_team_reduce(T v, Op op) {
    if constexpr (cv_team_in_warp<TEAM>) return cv_warp_reduce<TEAM>(v, op);
    else return cv_block_reduce(v, op);
}

/* argmax/argmin: should (v, i) replace (best, at)? The first NaN wins, then
 * the extreme value, then the first index. */
template <bool MAX, class T>
CV_DEV bool cv_arg_better(T v, int64_t i, T best, int64_t at) {
    const bool vn = v != v, bn = best != best;
    if (vn || bn) return vn && (!bn || i < at);
    if (MAX ? v > best : v < best) return true;
    return v == best && i < at;
}

template <bool MAX, int WIDTH, class T>
CV_DEV void cv_arg_warp(T &best, int64_t &at) {
    for (int off = WIDTH / 2; off > 0; off >>= 1) {
        const T v = cv_shfl_xor(best, off);
        const int64_t i = cv_shfl_xor(at, off);
        if (cv_arg_better<MAX>(v, i, best, at)) {
            best = v;
            at = i;
        }
    }
}

template <int TEAM, bool MAX, class T>
CV_DEV void cv_team_arg(T &best, int64_t &at) {
    cv_arg_warp<MAX, cv_team_in_warp<TEAM> ? TEAM : 32>(best, at);
    if constexpr (!cv_team_in_warp<TEAM>) {
        __shared__ T vals[32];
        __shared__ int64_t idx[32];
        const int warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
        __syncthreads();
        if ((threadIdx.x & 31) == 0) {
            vals[warp] = best;
            idx[warp] = at;
        }
        __syncthreads();
        best = vals[0];
        at = idx[0];
        for (int w = 1; w < nwarps; w++)
            if (cv_arg_better<MAX>(vals[w], idx[w], best, at)) {
                best = vals[w];
                at = idx[w];
            }
    }
}

#endif
