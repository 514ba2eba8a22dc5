/* The C API of cuvil_aot's native runtime, shared by every generated module.
 *
 * The runtime is the extension module cuvil_aot.runtime.native. It exports one
 * capsule, "cuvil_aot.runtime.native._C_API", holding a cv_runtime_api table. A
 * generated module imports it once at init (cv_import_runtime below) and calls
 * through the table, so common code is compiled once, not per module.
 *
 * Strides in this API count elements, not bytes; the generated wrappers copy
 * misaligned arrays or arrays whose byte strides are not a multiple of the item
 * size before calling in.
 */
#ifndef CUVIL_AOT_RUNTIME_H
#define CUVIL_AOT_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#define CV_RUNTIME_ABI_VERSION 10
#define CV_RUNTIME_CAPSULE "cuvil_aot.runtime.native._C_API"

/* x86-64 micro-architecture levels (psABI): 1 = baseline, 2 = v2 (SSE4.2,
 * POPCNT), 3 = v3 (AVX2, FMA, BMI2), 4 = v4 (AVX-512 F/BW/CD/DQ/VL). */
enum { CV_CPU_V1 = 1, CV_CPU_V2 = 2, CV_CPU_V3 = 3, CV_CPU_V4 = 4 };

/* A task over the index range [begin, end). */
typedef void (*cv_range_fn)(void *ctx, int64_t begin, int64_t end);

/* One product term A @ B of a (batched) GEMM. A is m x k, B is k x n. Each
 * operand has a row stride, a column stride and a batch stride (0 broadcasts
 * the operand over the batch), all in elements; any sign is allowed. */
typedef struct {
    const float *a;
    int64_t a_rs, a_cs, a_bs;
    const float *b;
    int64_t b_rs, b_cs, b_bs;
    int64_t k;
} cv_gemm_term_f32;

typedef struct {
    const double *a;
    int64_t a_rs, a_cs, a_bs;
    const double *b;
    int64_t b_rs, b_cs, b_bs;
    int64_t k;
} cv_gemm_term_f64;

/* A term of bfloat16 operands (ml_dtypes.bfloat16: the upper half of a float32's
 * bits), multiplied exactly and accumulated in float32 (gemm_bf16). */
typedef struct {
    const uint16_t *a;
    int64_t a_rs, a_cs, a_bs;
    const uint16_t *b;
    int64_t b_rs, b_cs, b_bs;
    int64_t k;
} cv_gemm_term_bf16;

/* The epilogue receives the finished accumulator tile
 * acc[(i - i0) * ld_acc + (j - j0)] = sum over terms of (A @ B)[batch, i, j]
 * for i in [i0, i1), j in [j0, j1), while the tile is still in cache, and
 * writes the final values wherever it wants. It may run on any pool thread,
 * concurrently for disjoint tiles. */
typedef void (*cv_epilogue_f32)(void *ctx, int64_t batch, int64_t i0, int64_t i1,
                                int64_t j0, int64_t j1, const float *acc, int64_t ld_acc);
typedef void (*cv_epilogue_f64)(void *ctx, int64_t batch, int64_t i0, int64_t i1,
                                int64_t j0, int64_t j1, const double *acc, int64_t ld_acc);

/* C[batch, m, n] = sum over nterms of A_t @ B_t, handed to the epilogue tile by
 * tile. Every (batch, i, j) with batch < nbatch, i < m, j < n is covered by
 * exactly one epilogue call; with k == 0 for all terms the tiles hold zeros. */
typedef struct {
    int64_t nbatch, m, n;
    int nterms;
    const cv_gemm_term_f32 *terms;
    cv_epilogue_f32 epilogue;
    void *ctx;
} cv_gemm_f32;

typedef struct {
    int64_t nbatch, m, n;
    int nterms;
    const cv_gemm_term_f64 *terms;
    cv_epilogue_f64 epilogue;
    void *ctx;
} cv_gemm_f64;

/* cv_gemm_f32's contract with bfloat16 operands: float32 tiles, float32 epilogue. */
typedef struct {
    int64_t nbatch, m, n;
    int nterms;
    const cv_gemm_term_bf16 *terms;
    cv_epilogue_f32 epilogue;
    void *ctx;
} cv_gemm_bf16;

/* A product of a float32 operand and an int8 weight read with float32 scales (gemm_q8):
 * C[batch, i, j] = sum over p < k of A(i, p) * B(p, j), where the int8 operand W (A when
 * qa, else B) holds w(o, p) = q[o, p] * s[o, p / group] for o its other index (A's row
 * or B's column). x: the float32 operand (B when qa, else A), its element (r, c) at
 * x[r * x_rs + c * x_cs + batch * x_bs]; q: W's int8 values, element (o, p) at
 * q[o * q_os + p * q_ps + batch * q_bs]; s: its scales, s[o * s_os + (p / group) * s_gs
 * + batch * s_bs] (per output channel: s_gs = 0). The product of each weight is computed
 * from q and s in registers: no float32 copy of W is made where one operand has at most
 * CV_Q8_DOT_MAX rows (columns for qa) and both are contiguous along k; elsewhere a block
 * of W at a time is dequantized into the float32 GEMM's workspace. */
typedef struct {
    int64_t nbatch, m, n, k, group;
    int qa;
    const float *x;
    int64_t x_rs, x_cs, x_bs;
    const int8_t *q;
    int64_t q_os, q_ps, q_bs;
    const float *s;
    int64_t s_os, s_gs, s_bs;
    cv_epilogue_f32 epilogue;
    void *ctx;
} cv_gemm_q8;

typedef struct cv_runtime_api {
    int abi_version;
    /* The level generated code may use: the detected level, lowered by
     * cuvil_aot.runtime.native.configure(cpu_level=...). */
    int (*cpu_level)(void);
    int (*num_threads)(void);
    /* Runs fn over [0, n) split into chunks of at least `grain` indices on the
     * persistent pool; the calling thread takes part and the call returns when
     * every chunk is done. Runs inline when n <= grain, with one thread, when
     * called from inside a task, or when another caller holds the pool. Call it
     * without the GIL. */
    void (*parallel_for)(int64_t n, int64_t grain, cv_range_fn fn, void *ctx);
    /* Return 0 on success, -1 when out of memory (nothing written then). */
    int (*gemm_f32)(const cv_gemm_f32 *g);
    int (*gemm_f64)(const cv_gemm_f64 *g);
    /* The GPU side (cuvil_aot/cuda_driver.h); usable without a driver
     * present: its calls then fail with cuvil_aot.CudaError. */
    const struct cv_gpu_api *gpu;
    /* Memory for output arrays, as NumPy's PyDataMemAllocator (ctx unused):
     * large blocks that come back are cached for the next call of a fitting
     * size (native/src/outbuf.c). Safe from any thread. */
    void *(*out_malloc)(void *ctx, size_t size);
    void *(*out_calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*out_realloc)(void *ctx, void *ptr, size_t size);
    void (*out_free)(void *ctx, void *ptr, size_t size);
    /* As gemm_f32, on bfloat16 operands: AMX-BF16 (tdpbf16ps), else AVX-512 BF16
     * (vdpbf16ps), where the CPU and the OS have it and the usable level is 4, else a
     * plain loop (gemm_bf16.c). */
    int (*gemm_bf16)(const cv_gemm_bf16 *g);
    /* cv_gemm_q8: int8 weights with float32 scales, dequantized in registers
     * (gemm_q8.c, AVX-512 where the usable level is 4, else plain C). */
    int (*gemm_q8)(const cv_gemm_q8 *g);
} cv_runtime_api;

#ifdef Py_PYTHON_H
/* For generated modules: fetch the table, checking its ABI version. */
static inline const cv_runtime_api *cv_import_runtime(void) {
    /* PyCapsule_Import does not import submodules: import the runtime first. */
    PyObject *runtime = PyImport_ImportModule("cuvil_aot.runtime.native");
    if (!runtime) return NULL;
    Py_DECREF(runtime);
    const cv_runtime_api *api =
        (const cv_runtime_api *)PyCapsule_Import(CV_RUNTIME_CAPSULE, 0);
    if (api && api->abi_version != CV_RUNTIME_ABI_VERSION) {
        PyErr_Format(PyExc_ImportError,
                     "cuvil_aot runtime ABI %d, module built for %d: rebuild the module",
                     api->abi_version, CV_RUNTIME_ABI_VERSION);
        return NULL;
    }
    return api;
}
#endif

#endif
