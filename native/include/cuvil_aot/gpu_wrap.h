/* Helpers for the GPU half of generated wrappers (include after pywrap.h):
 * which path a call takes, argument descriptions, launch-shape choices. */
#ifndef CUVIL_AOT_GPU_WRAP_H
#define CUVIL_AOT_GPU_WRAP_H

#include "cuvil_aot/cuda_driver.h"
#include "cuvil_aot/cuda_q8.h"
#include "cuvil_aot/pywrap.h"

/* By CV_DT_* */
static const char *const cv_dtype_names[] = {"bool",    "int32",   "int64", "float16",
                                             "float32", "float64", "int8",  "int16",
                                             "uint8",   "uint64"};
static const int cv_dtype_sizes[] = {1, 4, 8, 2, 4, 8, 1, 2, 1, 8};

/* One kernel's launch, planned before any is made (see gpu_wrapper._launches). */
typedef struct cv_gpu_plan {
    int kid;
    uint32_t grid, gy, block;
    int run;
    uint32_t sum_grid; /* a GEMM's split-K: its _ksum launch (0: none) */
} cv_gpu_plan;

/* Whether a call may be a GPU call: its first argument that is not a Python
 * or NumPy scalar is something else than a NumPy array. The GPU path then
 * decides (and hands back to the CPU path what is no device array). */
static int cv_gpu_candidate(PyObject *const *argv, int n) {
    for (int i = 0; i < n; i++) {
        PyObject *o = argv[i];
        if (PyArray_Check(o)) return 0;
        if (PyFloat_Check(o) || PyLong_Check(o) || PyArray_IsScalar(o, Generic)) continue;
        return 1;
    }
    return 0;
}

/* "float32 device array of shape (2, 3) on cuda:0", or the CPU description. */
static void cv_gpu_describe(PyObject *obj, const cv_gpu_array *a, int is_device, char *buf,
                            size_t size) {
    if (!is_device) {
        cv_describe(obj, buf, size);
        return;
    }
    int len = snprintf(buf, size, "%s device array of shape (",
                       a->dtype >= 0 ? cv_dtype_names[a->dtype] : "unsupported-dtype");
    for (int d = 0; d < a->ndim && len < (int)size; d++)
        len += snprintf(buf + len, size - len, d ? ", %lld" : "%lld", (long long)a->shape[d]);
    if (len < (int)size)
        snprintf(buf + len, size - len, "%s on cuda:%d", a->ndim == 1 ? ",)" : ")", a->device);
}

static int cv_gpu_is_c_contiguous(const cv_gpu_array *a) {
    int64_t expect = 1;
    for (int d = a->ndim - 1; d >= 0; d--) {
        if (a->shape[d] == 0) return 1;
        if (a->shape[d] != 1 && a->strides[d] != expect) return 0;
        expect *= a->shape[d];
    }
    return 1;
}

/* Byte range [lo, hi) an array touches; empty arrays touch nothing. */
static void cv_gpu_extent(const cv_gpu_array *a, uintptr_t *lo, uintptr_t *hi) {
    intptr_t first = 0, last = 0, size = a->dtype >= 0 ? cv_dtype_sizes[a->dtype] : 1;
    for (int d = 0; d < a->ndim; d++) {
        if (a->shape[d] == 0) {
            *lo = *hi = 0;
            return;
        }
        intptr_t span = (intptr_t)a->strides[d] * (a->shape[d] - 1) * size;
        if (span < 0) first += span; else last += span;
    }
    *lo = (uintptr_t)a->data + first;
    *hi = (uintptr_t)a->data + last + size;
}

static int cv_gpu_overlaps(const cv_gpu_array *x, const cv_gpu_array *y) {
    uintptr_t xl, xh, yl, yh;
    cv_gpu_extent(x, &xl, &xh);
    cv_gpu_extent(y, &yl, &yh);
    return xl < yh && yl < xh;
}

/* Whether every offset of a kernel's operands, and its flat index, fit in 31
 * bits: n[nloops] sizes, s[nops][nloops] element strides, `total` points. */
static int cv_gpu_fits32(const int64_t *n, int nloops, const int64_t *s, int nops,
                         int64_t total) {
    const int64_t limit = INT32_MAX / 2; /* room for one grid-stride step past the end */
    if (total > limit) return 0;
    for (int j = 0; j < nops; j++) {
        int64_t reach = 0;
        for (int v = 0; v < nloops; v++) {
            int64_t st = s[j * nloops + v];
            reach += (n[v] > 0 ? n[v] - 1 : 0) * (st < 0 ? -st : st);
        }
        if (reach > limit) return 0;
    }
    return 1;
}

/* Whether the float4 GEMV's 32-bit index math holds for a term of an m x n
 * product: n, and every offset within one batch of A (m x k) and B (k x n). */
static int cv_gpu_term_fits32(const cv_gpu_term *t, int64_t m, int64_t n) {
    const int64_t limit = INT32_MAX / 2, k = t->k > 0 ? t->k - 1 : 0;
    const int64_t a = (m - 1) * (t->a_rs < 0 ? -t->a_rs : t->a_rs) +
                      k * (t->a_cs < 0 ? -t->a_cs : t->a_cs);
    const int64_t b = k * (t->b_rs < 0 ? -t->b_rs : t->b_rs) + n;
    return n <= limit && a <= limit && b <= limit;
}

/* Split-K for a GEMM of `tiles` block tiles (batches included), fewer than the SMs:
 * k-chunks for about two blocks per SM, each chunk at least CV_SPLIT_MIN_K deep over all
 * terms (`depth`: their k summed), the partial sums at most CV_SPLIT_MAX_SUMS elements
 * (`total`: the result's). 1: no split. */
#define CV_SPLIT_MIN_K 128
#define CV_SPLIT_MAX_SUMS ((int64_t)1 << 24)
static int cv_gpu_split(int64_t tiles, int64_t depth, int64_t total, int sm_count) {
    int64_t split = 2 * (int64_t)sm_count / (tiles > 0 ? tiles : 1);
    if (split > depth / CV_SPLIT_MIN_K) split = depth / CV_SPLIT_MIN_K;
    if (split > 16) split = 16;
    while (split > 1 && split * total > CV_SPLIT_MAX_SUMS) split--;
    return split > 1 ? (int)split : 1;
}

/* Blocks for `work` items of `block` threads, at most enough to fill the
 * device `waves` times over (the kernels loop grid-stride). */
static uint32_t cv_gpu_grid(int64_t work, int block, int sm_count, int per_sm) {
    int64_t blocks = (work + block - 1) / block, cap = (int64_t)sm_count * per_sm;
    if (blocks > cap) blocks = cap;
    return (uint32_t)(blocks > 0 ? blocks : 1);
}

/* A block per `block` items of work, as many as the grid holds: no block loops. For
 * kernels whose work per item is a few loads and stores, where the scheduler's order
 * of fresh blocks beats a grid-stride loop (H200, bench/gpu/chain_probe.cu: 16M-element
 * chain 49.4 us against 51.6 with sm x 8 blocks; softmax 4096 x 4096 a block per row
 * 36.5 us against 38.6). */
static uint32_t cv_gpu_grid_all(int64_t work, int block) {
    int64_t blocks = (work + block - 1) / block;
    if (blocks > 0x7fffffff) blocks = 0x7fffffff;
    return (uint32_t)(blocks > 0 ? blocks : 1);
}

/* Checks an out= array of a GPU call: a device array of the dtype, shape and
 * device of the result, writeable. Fills *o (release it). */
static int cv_gpu_check_out(const cv_runtime_api *api, const char *fname, int index,
                            PyObject *obj, int dtype, int ndim, const int64_t *shape, int device,
                            cv_gpu_array *o) {
    char got[200];
    int r = api->gpu->array(obj, o);
    if (r < 0) return -1;
    int bad_shape = r && o->ndim != ndim;
    for (int d = 0; r && !bad_shape && d < ndim; d++) bad_shape = o->shape[d] != shape[d];
    if (!r || o->dtype != dtype || bad_shape || o->device != device || o->readonly) {
        cv_gpu_describe(obj, o, r, got, sizeof got);
        if (r) api->gpu->release(o);
        PyErr_Format(r && bad_shape ? PyExc_ValueError : PyExc_TypeError,
                     "%s(): out[%d] must be a writeable %s device array of the result's shape on "
                     "cuda:%d, got %s", fname, index, cv_dtype_names[dtype], device, got);
        return -1;
    }
    return 0;
}

/* A GPU call on a module built without CUDA kernels. */
/* CudaError: the module has GPU kernels, but none for this function (`why`). */
static PyObject *cv_gpu_refused(const char *fname, const char *why) {
    PyObject *mod = PyImport_ImportModule("cuvil_aot.errors");
    PyObject *type = mod ? PyObject_GetAttrString(mod, "CudaError") : NULL;
    Py_XDECREF(mod);
    if (type) {
        PyErr_Format(type, "%s(): called with device arrays, but %s", fname, why);
        Py_DECREF(type);
    }
    return NULL;
}

static PyObject *cv_gpu_unavailable(const char *fname) {
    PyObject *mod = PyImport_ImportModule("cuvil_aot.errors");
    PyObject *type = mod ? PyObject_GetAttrString(mod, "CudaError") : NULL;
    Py_XDECREF(mod);
    if (type) {
        PyErr_Format(type, "%s(): called with device arrays, but this module was built without "
                     "CUDA kernels (no nvcc at build time, or no CUDA architectures asked for)",
                     fname);
        Py_DECREF(type);
    }
    return NULL;
}

#endif
