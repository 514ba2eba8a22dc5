/* The GPU half of the runtime API: device arrays, kernel modules, launches.
 *
 * Generated modules reach it through cv_runtime_api.gpu. Nothing here needs a
 * CUDA header or library at build time: the runtime loads libcuda.so.1 with
 * dlopen at the first GPU call, so modules import on machines without a
 * driver and only GPU calls fail there (with cuvil_aot.CudaError).
 *
 * Every function below is called with the GIL held; the GIL is also what
 * serializes the runtime's lazy per-device state (contexts, loaded modules).
 * Functions returning int return 0 on success and -1 with a Python exception
 * set, unless documented otherwise.
 */
#ifndef CUVIL_AOT_CUDA_DRIVER_H
#define CUVIL_AOT_CUDA_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#define CV_GPU_MAX_NDIM 8
#define CV_GPU_MAX_DEVICES 16

struct _object; /* PyObject, without including Python.h */

/* Element types, numbered as generated code names them (new ones go last: built
 * extensions keep their numbers). */
enum {
    CV_DT_BOOL = 0,
    CV_DT_INT32 = 1,
    CV_DT_INT64 = 2,
    CV_DT_FLOAT16 = 3,
    CV_DT_FLOAT32 = 4,
    CV_DT_FLOAT64 = 5,
    CV_DT_INT8 = 6,
    CV_DT_INT16 = 7,
    CV_DT_UINT8 = 8,
    CV_DT_UINT64 = 9,
    CV_DT_BFLOAT16 = 10, /* torch.bfloat16 (DLPack kDLBfloat); CuPy has none */
};

struct cv_gpu_kind; /* how to make and order arrays of one Python type (runtime-owned) */

/* One product term A @ B of a GEMM kernel's arguments (shared by the host
 * wrapper and the device code): A is m x k, B is k x n, strides in elements,
 * batch stride 0 broadcasts an operand over the batch. */
typedef struct cv_gpu_term {
    const char *a;
    int64_t a_rs, a_cs, a_bs;
    const char *b;
    int64_t b_rs, b_cs, b_bs;
    int64_t k;
} cv_gpu_term;

/* Rows of one column a thread of a split GEMM's _ksum adds (cuda_gemm_tiled.h's
 * cv_gemm_ksum); the host sizes that launch's grid by them. */
#define CV_KSUM_ROWS 8

/* Blocks of a cluster of cuda_gemm_tc.h's cv_gemm_tc_cluster (split-K in a thread-block
 * cluster, sm_90): its k-chunks; the host sizes its grid by them. Its main loop's k-slabs
 * (CV_TCC_KS deep, CV_TCC_STAGES of them) lie in dynamic shared memory, CV_TCC_SMEM bytes
 * a block: a stage of A (64 rows of CV_TCC_KS + 8 floats) and B (CV_TCC_KS rows of 132). */
#define CV_TC_CLUSTER 8
#define CV_TCC_KS 32
#define CV_TCC_STAGES 4
#define CV_TCC_SMEM (CV_TCC_STAGES * (64 * (CV_TCC_KS + 8) + CV_TCC_KS * 132) * 4)

/* A fused attention's operand (cuda_attention.h): its (rows, columns) matrices, batch z at
 * element (z / nh) * sb + (z % nh) * sh, strides in elements. */
typedef struct cv_att_in {
    const char *p;
    int64_t nh, sb, sh, rs, cs;
} cv_att_in;

/* A device array borrowed from a Python object for the duration of a call. */
typedef struct cv_gpu_array {
    char *data;                       /* device pointer of element [0, ..., 0] */
    int64_t shape[CV_GPU_MAX_NDIM];
    int64_t strides[CV_GPU_MAX_NDIM]; /* in elements */
    int ndim;
    int dtype;                        /* CV_DT_* */
    int device;                       /* CUDA device ordinal */
    int readonly;
    int has_stream;                   /* the producer named a stream to order after */
    uintptr_t stream;
    const struct cv_gpu_kind *kind;
    struct _object *keep;             /* a reference to drop in release(), or NULL */
    /* An array from empty() not yet handed to wrap(): its framework's object, or its
     * DLPack managed tensor (the exchange API wraps it later). release() frees either. */
    struct _object *fresh_object;
    void *fresh_tensor;
} cv_gpu_array;

/* One extension's kernels: the embedded fatbin, the kernel names, and the
 * architectures it holds machine code (SASS) for. `loaded` belongs to the
 * runtime: it fills it per device on first use. */
typedef struct cv_cuda_module {
    const unsigned char *image;
    const char *const *names;
    int nkernels;
    const int *sass;                  /* e.g. 75, 80, 90: compute capability * 10 */
    int nsass;
    int ptx;                          /* newest PTX target (0: none) */
    void *loaded[CV_GPU_MAX_DEVICES];
} cv_cuda_module;

/* One kernel launch of a call, queued for launch_list: kernel `kernel` of m, a grid of
 * grid_x x grid_y blocks of `block` threads, `smem` bytes of dynamic shared memory, and
 * its one by-value parameter, the `size` bytes at args (read during launch_list only).
 * What it waits for where the list runs as a graph (gpu_graph.c): `node` 0, every launch
 * before it; else the launch before it of the same node (a GEMM's copies, main loop and
 * sum are one node), and the last launch of each node n with bit n - 1 of `after`. */
typedef struct cv_gpu_launch {
    cv_cuda_module *m;
    int kernel;
    uint32_t grid_x, grid_y, block, smem, size;
    const void *args;
    uint32_t node;
    uint64_t after;
} cv_gpu_launch;

/* Launches q[from..to) are node `node` of the call's graph, after the nodes in `after`. */
static inline void cv_gpu_mark(cv_gpu_launch *q, int from, int to, uint32_t node,
                               uint64_t after) {
    for (int i = from; i < to; i++) q[i].node = node, q[i].after = after;
}

typedef struct cv_gpu_api {
    /* 1 and *out filled when obj is an array on a CUDA device (through the
     * DLPack C exchange API, __cuda_array_interface__ or __dlpack__), 0 when it
     * is not a device array, -1 on error. */
    int (*array)(struct _object *obj, cv_gpu_array *out);
    void (*release)(cv_gpu_array *a);
    /* A new C-contiguous array of the same kind and device as `like`, described by
     * *out; 0, or -1 on error. wrap(out) gives its Python object: made after the
     * launches, the framework's wrapping overlaps the kernels instead of delaying them. */
    int (*empty)(const cv_gpu_array *like, int dtype, int ndim, const int64_t *shape,
                 cv_gpu_array *out);
    /* The Python object of an array from empty() (new reference), or NULL. */
    struct _object *(*wrap)(cv_gpu_array *a);
    /* A C-contiguous copy of obj (described by a), made by its framework. */
    struct _object *(*contiguous)(struct _object *obj, const cv_gpu_array *a,
                                  cv_gpu_array *out);
    /* The stream to launch on: `stream` (stream= of the call; NULL or None if
     * not given), else the current stream of like's framework, else the
     * stream like's producer named, else the legacy default stream. */
    int (*stream)(const cv_gpu_array *like, struct _object *stream, uintptr_t *out);
    /* Makes `stream` wait for work queued on a's producer stream, if any. */
    int (*order_after)(const cv_gpu_array *a, uintptr_t stream);
    /* Number of multiprocessors of the device (loads the driver if needed). */
    int (*sm_count)(int device);
    /* Launches kernel `kernel` of m on `device` with one by-value parameter,
     * the argument struct at args. Loads m on that device on first use. */
    int (*launch)(cv_cuda_module *m, int device, int kernel, uint32_t grid_x, uint32_t grid_y,
                  uint32_t block, uint32_t smem, uintptr_t stream, void *args);
    /* A call's intermediate: C-contiguous device memory of the runtime's own,
     * ordered on `stream` (no framework allocation). 0 with *out filled, 1 when
     * the device has no memory pools (use `empty`), -1 on error. */
    int (*scratch)(int device, int dtype, int ndim, const int64_t *shape, uintptr_t stream,
                   cv_gpu_array *out);
    /* Gives an intermediate back once the work queued on `stream` is done with it. */
    void (*scratch_free)(cv_gpu_array *a, uintptr_t stream);
    /* Launches a call's one-kernel, cooperative (all blocks resident at once, for its
     * grid-wide barriers) where `cooperative` says it has any: 0 when launched, 1 when
     * this device or driver cannot run it (nothing raised: launch the kernels one by one
     * instead), -1 on error. */
    int (*launch_one)(cv_cuda_module *m, int device, int kernel, uint32_t grid, uint32_t block,
                      uintptr_t stream, void *args, int cooperative);
    /* The calling thread's current CUDA context (NULL: none), for restore_context at the
     * end of a call: a call makes its device's primary context current, and leaving it
     * current would move the caller's framework to that device (the CUDA runtime takes
     * the current context's device as the current device). */
    int (*save_context)(void **out);
    void (*restore_context)(void *ctx);
    /* Zeroes `bytes` of device memory at p, ordered on `stream` (a call's gather flag). */
    int (*zero)(int device, void *p, size_t bytes, uintptr_t stream);
    /* Copies `bytes` at device address src to dst after the work queued on `stream`,
     * and waits for it: a call that gathers reads its flag so (gpu_wrapper.py). */
    int (*read)(int device, void *dst, const void *src, size_t bytes, uintptr_t stream);
    /* Launches q[0..n) in order on `stream`, as `launch` would one by one, or by replaying a
     * CUDA graph of them that the runtime keeps in *graphs (a call site's own pointer, NULL
     * at first; the runtime owns what it points to): where the call has enough launches
     * (CUVIL_AOT_CUDA_GRAPH), the same launches (kernels and grids) came before on this
     * device and stream, and the stream is not being captured. A graph's arguments are
     * updated to q's before it runs (pointers and sizes change call to call). */
    int (*launch_list)(const cv_gpu_launch *q, int n, int device, uintptr_t stream,
                       void **graphs);
    /* 1 where m's kernels run on `device` as sm_90a machine code (the device has compute
     * capability 9.0 and m holds SASS for sm_90, which nvcc.py builds as sm_90a) and the
     * driver makes tensor maps and raises shared memory limits: m's wgmma GEMM
     * (cuda_gemm_wgmma.h) may launch there, | 2 where it may also run over K-major copies
     * of operands that are not (cuda_transpose.h; CUVIL_AOT_CUDA_WGMMA_TRANSPOSE), | 4 where
     * k of its last round of tiles may split alone (CUVIL_AOT_CUDA_WG_TAIL), | 8 where a
     * 3xTF32 one may read an N-major B as it is (CUVIL_AOT_CUDA_WG_NMAJOR); else 0.
     * Never raises. A launch whose `smem` is
     * over 48 KB gets the kernel's limit raised by the runtime first. */
    int (*wgmma)(const cv_cuda_module *m, int device);
    /* cuTensorMapEncodeTiled into the 128 bytes at map (128-byte aligned): `dtype` and
     * `swizzle` as CUtensorMapDataType and CUtensorMapSwizzle number them, `rank` dims
     * (elements, innermost first), rank - 1 strides (bytes), a box per dim, element strides
     * 1, no interleave, L2 promotion 256 B, out-of-bounds elements read as zeros. 0, or 1
     * where the driver lacks it or refuses (alignment, sizes): nothing raised. */
    int (*tensor_map)(void *map, int dtype, int rank, const void *base, const uint64_t *dims,
                      const uint64_t *strides, const uint32_t *box, int swizzle);
    /* 1 where a recognized attention may run as the fused kernel (cuda_attention.h), 0
     * where CUVIL_AOT_CUDA_ATTENTION=0 asks for its three kernels; | 2 where its split
     * entry may run (the keys split within a block: CUVIL_AOT_CUDA_ATTENTION_SPLIT); | 4
     * where a grouped-query match may (CUVIL_AOT_CUDA_ATTENTION_GROUPED). */
    int (*attention)(void);
} cv_gpu_api;

#endif
