/* Test hooks: drive cv_parallel_for and the GEMM from Python so tests can
 * check them against NumPy. Not part of the C API. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "cuda_internal.h"
#include "gemm_reuse.h"
#include "internal.h"
#include "test_hooks.h"

/* ---- parallel_for coverage ------------------------------------------------ */

#define MAX_SEEN 64

typedef struct {
    atomic_uchar *hits;
    pthread_mutex_t lock;
    pthread_t seen[MAX_SEEN];
    int nseen;
} check_ctx;

static void note_thread(check_ctx *c) {
    pthread_t self = pthread_self();
    pthread_mutex_lock(&c->lock);
    int known = 0;
    for (int i = 0; i < c->nseen; i++)
        known |= pthread_equal(c->seen[i], self);
    if (!known && c->nseen < MAX_SEEN)
        c->seen[c->nseen++] = self;
    pthread_mutex_unlock(&c->lock);
}

static void check_range(void *ctx, int64_t begin, int64_t end) {
    check_ctx *c = ctx;
    note_thread(c);
    for (int64_t i = begin; i < end; i++)
        atomic_fetch_add(&c->hits[i], 1);
}

PyObject *cv_py_parallel_check(PyObject *self, PyObject *args) {
    long long n, grain;
    (void)self;
    if (!PyArg_ParseTuple(args, "LL:_parallel_check", &n, &grain))
        return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "n must be >= 0");
        return NULL;
    }
    check_ctx c = {.lock = PTHREAD_MUTEX_INITIALIZER};
    c.hits = PyMem_RawCalloc(n ? (size_t)n : 1, sizeof *c.hits);
    if (!c.hits)
        return PyErr_NoMemory();
    Py_BEGIN_ALLOW_THREADS
    cv_parallel_for(n, grain, check_range, &c);
    Py_END_ALLOW_THREADS
    long long once = 0;
    for (long long i = 0; i < n; i++)
        once += c.hits[i] == 1;
    PyMem_RawFree(c.hits);
    return Py_BuildValue("Li", once, c.nseen);
}

/* ---- the bfloat16 GEMM's kernel ------------------------------------------- */

PyObject *cv_py_bf16_kernel(PyObject *self, PyObject *args) {
    const char *best;
    (void)self;
    if (!PyArg_ParseTuple(args, "s:_bf16_kernel", &best))
        return NULL;
    if (cv_bf16_limit_kernel(best) < 0) {
        PyErr_Format(PyExc_ValueError, "no bfloat16 GEMM kernel %R: amx, avx512 or plain",
                     PyTuple_GET_ITEM(args, 0));
        return NULL;
    }
    return PyUnicode_FromString(cv_bf16_kernel_name());
}

/* ---- GEMM through a store epilogue ---------------------------------------- */

#define MAX_TERMS 8

/* One operand or the output as [batch, row, col] with element strides. */
typedef struct {
    Py_buffer view;
    char *ptr;
    int64_t batch, rows, cols, bs, rs, cs;
    char type; /* 'f' or 'd' */
} operand;

typedef struct {
    operand *out;
    atomic_llong calls, overwrites, max_rows, max_cols;
} store_ctx;

static void atomic_max(atomic_llong *x, long long v) {
    long long cur = atomic_load(x);
    while (cur < v && !atomic_compare_exchange_weak(x, &cur, v)) {
    }
}

static void note_tile(store_ctx *s, int64_t rows, int64_t cols, long long overwrites) {
    atomic_fetch_add(&s->calls, 1);
    atomic_fetch_add(&s->overwrites, overwrites);
    atomic_max(&s->max_rows, rows);
    atomic_max(&s->max_cols, cols);
}

#define DEFINE_STORE(T, SFX)                                                              \
    static void store_##SFX(void *ctx, int64_t bt, int64_t i0, int64_t i1, int64_t j0,    \
                            int64_t j1, const T *acc, int64_t ld) {                       \
        store_ctx *s = ctx;                                                               \
        const operand *o = s->out;                                                        \
        T *base = (T *)o->ptr + bt * o->bs;                                               \
        long long over = 0;                                                               \
        for (int64_t i = i0; i < i1; i++)                                                 \
            for (int64_t j = j0; j < j1; j++) {                                           \
                T *dst = base + i * o->rs + j * o->cs;                                    \
                over += !isnan(*dst);                                                     \
                *dst = acc[(i - i0) * ld + (j - j0)];                                     \
            }                                                                             \
        note_tile(s, i1 - i0, j1 - j0, over);                                             \
    }

DEFINE_STORE(float, f32)
DEFINE_STORE(double, f64)

static char format_type(const char *fmt) {
    if (!fmt)
        return 'B';
    if (*fmt == '@' || *fmt == '=' || *fmt == '<')
        fmt++; /* native little-endian; x86 and arm64 both */
    return (fmt[0] == 'f' || fmt[0] == 'd') && fmt[1] == 0 ? fmt[0] : 0;
}

/* Fill `o` from a 2-D or 3-D float32/float64 buffer. */
static int get_operand(PyObject *obj, const char *name, int writable, operand *o) {
    int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &o->view, flags) < 0)
        return -1;
    Py_buffer *v = &o->view;
    o->type = format_type(v->format);
    if (!o->type || (v->ndim != 2 && v->ndim != 3)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a 2-D or 3-D float32/float64 array", name);
        goto fail;
    }
    int d = v->ndim - 2;
    for (int i = 0; i < v->ndim; i++)
        if (v->strides[i] % v->itemsize) {
            PyErr_Format(PyExc_ValueError, "%s: strides must be multiples of the item size",
                         name);
            goto fail;
        }
    o->ptr = v->buf;
    o->batch = d ? v->shape[0] : 1;
    o->bs = d ? v->strides[0] / v->itemsize : 0;
    o->rows = v->shape[d];
    o->cols = v->shape[d + 1];
    o->rs = v->strides[d] / v->itemsize;
    o->cs = v->strides[d + 1] / v->itemsize;
    return 0;
fail:
    PyBuffer_Release(v);
    return -1;
}

/* An input's batch must be absent, 1 (broadcast) or the output's. */
static int fit_batch(operand *x, const operand *out, const char *name) {
    if (x->batch == 1)
        x->bs = 0;
    else if (x->batch != out->batch || out->view.ndim != 3) {
        PyErr_Format(PyExc_ValueError, "%s: batch %lld does not match the output", name,
                     (long long)x->batch);
        return -1;
    }
    if (x->view.ndim == 3 && out->view.ndim != 3) {
        PyErr_Format(PyExc_ValueError, "%s is 3-D: the output must be 3-D", name);
        return -1;
    }
    return 0;
}

static int check_pair(operand *a, operand *b, const operand *out) {
    if (a->type != out->type || b->type != out->type) {
        PyErr_SetString(PyExc_TypeError, "a, b and out must have one dtype");
        return -1;
    }
    if (a->rows != out->rows || b->cols != out->cols || a->cols != b->rows) {
        PyErr_SetString(PyExc_ValueError, "shapes do not match: (m, k) @ (k, n) -> (m, n)");
        return -1;
    }
    return fit_batch(a, out, "a") || fit_batch(b, out, "b") ? -1 : 0;
}

#define DEFINE_RUN(T, SFX)                                                                \
    static int run_##SFX(operand *ops, int nterms, store_ctx *s) {                        \
        cv_gemm_term_##SFX terms[MAX_TERMS];                                                 \
        for (int t = 0; t < nterms; t++) {                                                \
            const operand *a = &ops[2 * t + 1], *b = &ops[2 * t + 2];                     \
            terms[t] = (cv_gemm_term_##SFX){(const T *)a->ptr, a->rs, a->cs, a->bs,       \
                                            (const T *)b->ptr, b->rs, b->cs, b->bs,       \
                                            a->cols};                                     \
        }                                                                                 \
        cv_gemm_##SFX g = {ops[0].batch, ops[0].rows, ops[0].cols, nterms, terms,        \
                           store_##SFX, s};                                               \
        return cv_run_gemm_##SFX(&g);                                                         \
    }

DEFINE_RUN(float, f32)
DEFINE_RUN(double, f64)

/* ops[0] = out, then a, b per term. Returns the number of operands filled. */
static int collect_operands(PyObject *a, PyObject *b, PyObject *out, PyObject *more,
                            operand *ops) {
    PyObject *seq = PySequence_Fast(more, "more must be a sequence of (a, b) pairs");
    if (!seq)
        return -1;
    Py_ssize_t nmore = PySequence_Fast_GET_SIZE(seq);
    int got = 0;
    if (nmore + 1 > MAX_TERMS) {
        PyErr_Format(PyExc_ValueError, "at most %d terms", MAX_TERMS);
        goto fail;
    }
    if (get_operand(out, "out", 1, &ops[got]) < 0)
        goto fail;
    got++;
    for (Py_ssize_t t = -1; t < nmore; t++) {
        PyObject *x = a, *y = b;
        if (t >= 0 && !PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, t), "OO", &x, &y))
            goto fail;
        if (get_operand(x, "a", 0, &ops[got]) < 0)
            goto fail;
        got++;
        if (get_operand(y, "b", 0, &ops[got]) < 0)
            goto fail;
        got++;
        if (check_pair(&ops[got - 2], &ops[got - 1], &ops[0]) < 0)
            goto fail;
    }
    Py_DECREF(seq);
    return got;
fail:
    Py_DECREF(seq);
    while (got > 0)
        PyBuffer_Release(&ops[--got].view);
    return -1;
}

PyObject *cv_py_gemm(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"a", "b", "out", "more", NULL};
    PyObject *a, *b, *out, *more = NULL;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O:_gemm", kwlist, &a, &b, &out, &more))
        return NULL;
    operand ops[2 * MAX_TERMS + 1];
    PyObject *empty = more ? NULL : PyTuple_New(0);
    int nops = collect_operands(a, b, out, more ? more : empty, ops);
    Py_XDECREF(empty);
    if (nops < 0)
        return NULL;
    store_ctx s = {.out = &ops[0]};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ops[0].type == 'f' ? run_f32(ops, nops / 2, &s) : run_f64(ops, nops / 2, &s);
    Py_END_ALLOW_THREADS
    for (int i = 0; i < nops; i++)
        PyBuffer_Release(&ops[i].view);
    if (rc < 0)
        return PyErr_NoMemory();
    return Py_BuildValue("LLLL", (long long)s.calls, (long long)s.overwrites,
                         (long long)s.max_rows, (long long)s.max_cols);
}

/* ---- the reuse-distance estimate ------------------------------------------- */

PyObject *cv_py_reuse_cold(PyObject *self, PyObject *args) {
    unsigned long long address;
    long long bytes;
    (void)self;
    if (!PyArg_ParseTuple(args, "KL:_reuse_cold", &address, &bytes))
        return NULL;
    return PyBool_FromLong(cv_reuse_cold((const void *)(uintptr_t)address, bytes));
}

/* ---- the graph path's choices against a fake driver ------------------------ */

/* A module of 8 kernels "k0".."k7" whose image no real driver could load: for
 * tests/test_gpu_graph_logic.py, which runs it against a fake libcuda.so.1. */
static const unsigned char fake_image[16];
static const char *const fake_names[] = {"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"};
static const int fake_sass[] = {90};
static cv_cuda_module fake_module = {fake_image, fake_names, 8, fake_sass, 1, 0, {0}};
static void *fake_sites[4];

#define FAKE_ARGS 32
#define FAKE_MAX 64

PyObject *cv_py_launch_list(PyObject *self, PyObject *args) {
    PyObject *list;
    unsigned long long stream = 0;
    int site = 0;
    static unsigned char bytes[FAKE_MAX][FAKE_ARGS];
    cv_gpu_launch q[FAKE_MAX];
    (void)self;
    if (!PyArg_ParseTuple(args, "O!|Ki:_launch_list", &PyList_Type, &list, &stream, &site))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (n > FAKE_MAX || site < 0 || site >= 4) {
        PyErr_SetString(PyExc_ValueError, "at most 64 launches, sites 0-3");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int kernel;
        unsigned grid_x, grid_y, block, node = 0;
        unsigned long long after = 0;
        const char *data;
        Py_ssize_t len;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(list, i), "iIIIy#|IK", &kernel, &grid_x, &grid_y,
                              &block, &data, &len, &node, &after))
            return NULL;
        if (kernel < 0 || kernel >= 8 || len != FAKE_ARGS) {
            PyErr_SetString(PyExc_ValueError, "kernel 0-7, 32 bytes of arguments");
            return NULL;
        }
        memcpy(bytes[i], data, FAKE_ARGS);
        q[i] = (cv_gpu_launch){&fake_module, kernel,    grid_x, grid_y, block, 0,
                               FAKE_ARGS,    bytes[i], node,   after};
    }
    if (cv_gpu_launch_list(q, (int)n, 0, (uintptr_t)stream, &fake_sites[site]) < 0)
        return NULL;
    Py_RETURN_NONE;
}
