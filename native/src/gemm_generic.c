/* Portable GEMM kernels (x86-64 v1/v2, and any other CPU), written with
 * GCC/Clang vector extensions: 16-byte vectors, which every target lowers to
 * its baseline SIMD (SSE2, NEON) or to scalars. Loads go through memcpy, so
 * nothing here assumes alignment. */
#include <stddef.h>
#include <string.h>

#include "gemm_kernels.h"

#define CV_TARGET
#define ISA generic
#define MR 4
#define NV 2
#define RMAX 4
#define RV 2
#define DJ 2
#define MC 128
#define NC 128
#define KC 256

typedef float v4f __attribute__((vector_size(16)));
typedef double v2d __attribute__((vector_size(16)));

#define DEFINE_VOPS(V, T, SFX)                                                   \
    static inline V vload_##SFX(const T *p) {                                    \
        V v;                                                                     \
        memcpy(&v, p, sizeof v);                                                 \
        return v;                                                                \
    }                                                                            \
    static inline V vload_part_##SFX(const T *p, int n) {                        \
        V v = {0};                                                               \
        memcpy(&v, p, (size_t)n * sizeof(T));                                    \
        return v;                                                                \
    }                                                                            \
    static inline void vstore_##SFX(T *p, V v) { memcpy(p, &v, sizeof v); }           \
    static inline void vstore_part_##SFX(T *p, V v, int n) {                     \
        memcpy(p, &v, (size_t)n * sizeof(T));                                    \
    }                                                                            \
    static inline T vhsum_##SFX(V v) {                                           \
        T s = 0;                                                                 \
        for (size_t i = 0; i < sizeof v / sizeof(T); i++)                        \
            s += v[i];                                                           \
        return s;                                                                \
    }

DEFINE_VOPS(v4f, float, f32)
DEFINE_VOPS(v2d, double, f64)

/* ---- float32 ---- */
#define T float
#define TSFX f32
#define V v4f
#define VL 4
#define V_LOAD(p) vload_f32(p)
#define V_LOADU(p) vload_f32(p)
#define V_LOADU_PART(p, n) vload_part_f32(p, n)
#define V_STOREU_PART(p, v, n) vstore_part_f32(p, v, n)
#define V_STOREU(p, v) vstore_f32(p, v)
#define V_STORE(p, v) vstore_f32(p, v)
#define V_SET1(x) ((v4f){0} + (x))
#define V_ZERO() ((v4f){0})
#define V_ADD(a, b) ((a) + (b))
#define V_FMA(a, b, c) ((a) * (b) + (c))
#define V_HSUM(v) vhsum_f32(v)
#include "gemm_kern_body.h"

/* ---- float64 ---- */
#define T double
#define TSFX f64
#define V v2d
#define VL 2
#define V_LOAD(p) vload_f64(p)
#define V_LOADU(p) vload_f64(p)
#define V_LOADU_PART(p, n) vload_part_f64(p, n)
#define V_STOREU_PART(p, v, n) vstore_part_f64(p, v, n)
#define V_STOREU(p, v) vstore_f64(p, v)
#define V_STORE(p, v) vstore_f64(p, v)
#define V_SET1(x) ((v2d){0} + (x))
#define V_ZERO() ((v2d){0})
#define V_ADD(a, b) ((a) + (b))
#define V_FMA(a, b, c) ((a) * (b) + (c))
#define V_HSUM(v) vhsum_f64(v)
#include "gemm_kern_body.h"
