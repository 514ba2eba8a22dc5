/* Helpers for the CPython wrappers of generated modules: argument parsing,
 * array checks and normalization, output handling, buffers and launches.
 * Every error names the function and the argument. */
#ifndef CUVIL_AOT_PYWRAP_H
#define CUVIL_AOT_PYWRAP_H

/* A wrapper is module.c and, in a build with GPU code, one more translation unit per
 * function, module_gpu_f0.c (codegen/pymodule.py), compiled apart; those define
 * CV_WRAPPER_PART first. Module.c holds the state below and NumPy's C API table; the parts
 * declare them (-fvisibility=hidden keeps them inside the extension). */
#define PY_ARRAY_UNIQUE_SYMBOL cv_numpy_api
#ifdef CV_WRAPPER_PART
#define NO_IMPORT_ARRAY
#define CV_SHARED(declaration, ...) extern declaration
#else
#define CV_SHARED(declaration, ...) declaration = __VA_ARGS__
#endif

#include <Python.h>
#include <numpy/arrayobject.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>

#include "cuvil_aot/runtime.h"

/* Exception types from cuvil_aot.errors, fetched at module init. */
CV_SHARED(PyObject *cv_SignatureError, NULL);
CV_SHARED(PyObject *cv_SignatureShapeError, NULL);

static int cv_import_errors(void) {
    PyObject *mod = PyImport_ImportModule("cuvil_aot.errors");
    if (!mod) return -1;
    cv_SignatureError = PyObject_GetAttrString(mod, "SignatureError");
    cv_SignatureShapeError = PyObject_GetAttrString(mod, "SignatureShapeError");
    Py_DECREF(mod);
    return (cv_SignatureError && cv_SignatureShapeError) ? 0 : -1;
}

/* NumPy's type number of ml_dtypes.bfloat16, a dtype registered at run time. With
 * `import`, ml_dtypes is imported (a new bfloat16 output needs it): -1 with an exception
 * where it cannot be. Without, -2 while ml_dtypes is not imported: no array can be a
 * bfloat16 one then, and looking costs no import. */
CV_SHARED(int cv_bf16_num, -1);
static int cv_bf16_typenum(int import) {
    if (cv_bf16_num >= 0) return cv_bf16_num;
    PyObject *name = PyUnicode_FromString("ml_dtypes");
    if (!name) return -1;
    PyObject *mod = import ? PyImport_Import(name) : PyImport_GetModule(name);
    Py_DECREF(name);
    if (!mod) {
        if (!import && !PyErr_Occurred()) return -2;
        if (PyErr_ExceptionMatches(PyExc_ImportError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ImportError, "bfloat16 arrays need ml_dtypes: pip install "
                            "ml_dtypes (or cuvil-aot[bf16])");
        }
        return -1;
    }
    PyObject *type = PyObject_GetAttrString(mod, "bfloat16");
    Py_DECREF(mod);
    PyArray_Descr *descr = NULL;
    int ok = type && PyArray_DescrConverter(type, &descr);
    Py_XDECREF(type);
    if (!ok) return -1;
    cv_bf16_num = descr->type_num;
    Py_DECREF(descr);
    return cv_bf16_num;
}

/* Shape arithmetic of the argument checks: a * b, a + b, a - b, setting *ovf where the
 * result does not fit in int64 (symbols bound from two arrays can exceed it: N*M of two
 * broadcast views of 2^32 elements). */
static inline int64_t cv_mul(int64_t a, int64_t b, int *ovf) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) *ovf = 1;
    return r;
}
static inline int64_t cv_add(int64_t a, int64_t b, int *ovf) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) *ovf = 1;
    return r;
}
static inline int64_t cv_sub(int64_t a, int64_t b, int *ovf) {
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) *ovf = 1;
    return r;
}

/* Whether an array of dims[0..n) would be too big for NumPy, as NumPy decides for a
 * new array: the product of the nonzero dims times `nbytes` (the item size times the
 * static dims) must fit in npy_intp. Also true when computing a dim overflowed (*ovf).
 * Once every shape of a call passes, every product of its dims fits in int64. */
static inline int cv_too_big(const int *ovf, int64_t nbytes, int n, const int64_t *dims) {
    if (*ovf) return 1;
    for (int i = 0; i < n; i++)
        if (dims[i] != 0 && __builtin_mul_overflow(nbytes, dims[i], &nbytes)) return 1;
    return nbytes > NPY_MAX_INTP;
}

/* a * b for work estimates (both >= 0), INT64_MAX past it. */
static inline int64_t cv_mul_sat(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/* Positional and keyword arguments into argv[0..n); `out=` and `stream=` into
 * *out and *stream (NULL when not given). */
static int cv_parse_args(const char *fname, const char *const *names, Py_ssize_t n,
                         PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                         PyObject **argv, PyObject **out, PyObject **stream) {
    if (nargs > n) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments but %zd were given", fname, n,
                     nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) argv[i] = i < nargs ? args[i] : NULL;
    *out = NULL;
    *stream = NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        const char *kname = PyUnicode_AsUTF8(key);
        if (!kname) return -1;
        if (strcmp(kname, "out") == 0) {
            *out = args[nargs + k];
            continue;
        }
        if (strcmp(kname, "stream") == 0) { /* for device arrays: see gpu_wrap.h */
            *stream = args[nargs + k];
            continue;
        }
        Py_ssize_t i = 0;
        while (i < n && strcmp(names[i], kname) != 0) i++;
        if (i == n) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'", fname,
                         kname);
            return -1;
        }
        if (argv[i]) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fname,
                         kname);
            return -1;
        }
        argv[i] = args[nargs + k];
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!argv[i]) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s' (pos %zd)", fname,
                         names[i], i + 1);
            return -1;
        }
    }
    return 0;
}

/* "big-endian float32 (>f4)": an array's dtype where its byte order is not native. */
static void cv_swapped_dtype(PyArrayObject *arr, char *buf, size_t size) {
    PyArray_Descr *d = PyArray_DESCR(arr);
    const char *name = d->typeobj->tp_name;
    if (strncmp(name, "numpy.", 6) == 0) name += 6;
    snprintf(buf, size, "%s-endian %s (%c%c%d)", d->byteorder == '>' ? "big" : "little", name,
             d->byteorder, d->kind, (int)PyArray_ITEMSIZE(arr));
}

/* Describes obj's type for messages: "float64 array of shape (2, 3)", "list", and
 * "big-endian float32 (>f4) array of shape (8,)" where the byte order is not native. */
static void cv_describe(PyObject *obj, char *buf, size_t size) {
    if (PyArray_Check(obj)) {
        PyArrayObject *arr = (PyArrayObject *)obj;
        char swapped[64];
        if (!PyArray_ISNOTSWAPPED(arr)) cv_swapped_dtype(arr, swapped, sizeof swapped);
        int len = snprintf(buf, size, "%s array of shape (", PyArray_ISNOTSWAPPED(arr)
                           ? PyArray_DESCR(arr)->typeobj->tp_name : swapped);
        for (int d = 0; d < PyArray_NDIM(arr) && len < (int)size; d++)
            len += snprintf(buf + len, size - len, d ? ", %lld" : "%lld",
                            (long long)PyArray_DIM(arr, d));
        if (len < (int)size)
            snprintf(buf + len, size - len, PyArray_NDIM(arr) == 1 ? ",)" : ")");
    } else {
        snprintf(buf, size, "%s", Py_TYPE(obj)->tp_name);
    }
}

/* The error of a call no signature of `fname` matched (SignatureShapeError where a shape
 * was the problem): each distinct reason once, after the first signature that gave it and
 * how many more did; one reason for all said once. */
static void cv_no_match(PyObject *kind, const char *fname, int n, char (*why)[512],
                        const char *const *sigs) {
    int same = 1;
    for (int s = 1; s < n; s++) same = same && strcmp(why[0], why[s]) == 0;
    if (same) {
        PyErr_Format(kind, "%s(): %s (so in each of its %d signatures)", fname, why[0], n);
        return;
    }
    PyObject *msg = PyUnicode_FromFormat("%s(): no signature matches the arguments:", fname);
    for (int s = 0; s < n && msg; s++) {
        int seen = 0, more = 0;
        for (int j = 0; j < n; j++)
            if (strcmp(why[j], why[s]) == 0) {
                seen = seen || j < s;
                more += j > s;
            }
        if (seen) continue;
        PyUnicode_AppendAndDel(&msg, more ? PyUnicode_FromFormat("\n  (%s) and %d more: %s",
                                                                 sigs[s], more, why[s])
                                          : PyUnicode_FromFormat("\n  (%s): %s", sigs[s], why[s]));
    }
    if (msg) {
        PyErr_SetObject(kind, msg);
        Py_DECREF(msg);
    }
}

/* The checks a signature's match calls once a parameter or dimension: kept out of line, as
 * calls, so that the match of a function of many versions stays short to compile (inlined,
 * the BERT port's wrapper compiled 15% slower). */
#define CV_MATCH_HELPER __attribute__((noinline, unused)) static

/* Scalar argument `obj` (`label`) as an int of 64 bits (`want`: "an int", "a bool") in
 * *out; else the reason in `why` and 0. One call a parameter, as cv_array_is. */
CV_MATCH_HELPER int cv_int_arg(PyObject *obj, const char *label, const char *want, int64_t *out,
                      char *why, size_t nwhy) {
    char got[160];
    if (PyArray_Check(obj) || !PyIndex_Check(obj)) {
        cv_describe(obj, got, sizeof got);
        snprintf(why, nwhy, "argument '%s': expected %s, got %s", label, want, got);
        return 0;
    }
    *out = PyLong_AsLongLong(obj);
    if (*out == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        snprintf(why, nwhy, "argument '%s': expected an int that fits in 64 bits", label);
        return 0;
    }
    return 1;
}

/* ... a bool: True, False, numpy.True_, an int. */
CV_MATCH_HELPER int cv_bool_arg(PyObject *obj, const char *label, int64_t *out, char *why,
                       size_t nwhy) {
    if (PyArray_IsScalar(obj, Bool)) {
        *out = PyObject_IsTrue(obj);
        return 1;
    }
    return cv_int_arg(obj, label, "a bool", out, why, nwhy);
}

/* ... a float (any real number). */
CV_MATCH_HELPER int cv_float_arg(PyObject *obj, const char *label, double *out, char *why,
                        size_t nwhy) {
    char got[160];
    if (PyArray_Check(obj) || !PyNumber_Check(obj) || PyComplex_Check(obj)) {
        cv_describe(obj, got, sizeof got);
        snprintf(why, nwhy, "argument '%s': expected a float, got %s", label, got);
        return 0;
    }
    *out = PyFloat_AsDouble(obj);
    if (*out == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        snprintf(why, nwhy, "argument '%s': expected a float", label);
        return 0;
    }
    return 1;
}

/* Dimension `got` of an argument against `want`: 1, else the reason in `why` ("`what`
 * %lld, expected `expected`", and " = `want` (`from`)" where the sizes come from other
 * arguments), *shape_err set, 0. */
CV_MATCH_HELPER int cv_dim_is(int64_t got, int64_t want, const char *what, const char *expected,
                     const char *from, char *why, size_t nwhy, int *shape_err) {
    if (got == want) return 1;
    if (from)
        snprintf(why, nwhy, "%s %lld, expected %s = %lld (%s)", what, (long long)got, expected,
                 (long long)want, from);
    else
        snprintf(why, nwhy, "%s %lld, expected %s", what, (long long)got, expected);
    *shape_err = 1;
    return 0;
}

/* Whether argument `label` is an array of `typenum` and `ndim` dimensions (`want`, the
 * type as the signature writes it); else the reason in `why` (a wrong rank sets
 * *shape_err) and 0. One call a parameter: a signature's match stays short to compile. */
CV_MATCH_HELPER int cv_array_is(PyObject *obj, int typenum, int ndim, const char *label,
                       const char *dtype, const char *want, char *why, size_t nwhy,
                       int *shape_err) {
    char got[160];
    if (!PyArray_Check(obj) || PyArray_TYPE((PyArrayObject *)obj) != typenum) {
        cv_describe(obj, got, sizeof got);
        snprintf(why, nwhy, "argument '%s': expected a %s array %s, got %s", label, dtype,
                 want, got);
        return 0;
    }
    if (PyArray_NDIM((PyArrayObject *)obj) != ndim) {
        cv_describe(obj, got, sizeof got);
        snprintf(why, nwhy, "argument '%s': expected %d dimensions %s, got %s", label, ndim,
                 want, got);
        *shape_err = 1;
        return 0;
    }
    return 1;
}

/* np.matrix and masked arrays pass PyArray_Check, but NumPy computes something else on
 * them (a matrix's `*` is a matrix product; reductions skip masked elements): the
 * classes are looked up, once, only for a subclass and only in a module already
 * imported (no masked array exists before numpy.ma is). */
static PyObject *cv_class_in(const char *module, const char *name, PyObject **cache) {
    if (*cache) return *cache;
    PyObject *key = PyUnicode_FromString(module);
    PyObject *mod = key ? PyImport_GetModule(key) : NULL;
    Py_XDECREF(key);
    if (mod) {
        *cache = PyObject_GetAttrString(mod, name);
        Py_DECREF(mod);
    }
    PyErr_Clear();
    return *cache;
}

/* 1 for a masked array, 2 for a matrix, 0 for other arrays (or -1 on error). */
static int cv_odd_array(PyObject *obj) {
    static PyObject *matrix, *masked;
    if (PyArray_CheckExact(obj) || !PyArray_Check(obj)) return 0;
    PyObject *cls = cv_class_in("numpy.ma", "MaskedArray", &masked);
    int r = cls ? PyObject_IsInstance(obj, cls) : 0;
    if (r) return r;
    cls = cv_class_in("numpy", "matrix", &matrix);
    r = cls ? PyObject_IsInstance(obj, cls) : 0;
    return r > 0 ? 2 : r;
}

/* SignatureError (a TypeError: fallback="python" runs the function on them) for a
 * matrix or masked array among argv[0..n), naming the argument and what to pass. */
static int cv_refuse_odd_arrays(const char *fname, const char *const *names, Py_ssize_t n,
                                PyObject *const *argv) {
    for (Py_ssize_t i = 0; i < n; i++) {
        int odd = cv_odd_array(argv[i]);
        if (odd < 0) return -1;
        if (odd == 1)
            PyErr_Format(cv_SignatureError, "%s(): argument '%s' is a masked array "
                         "(numpy.ma.MaskedArray), whose masked elements compiled code does "
                         "not skip: pass %s.filled(value) to choose what they count as, or "
                         "np.asarray(%s) to use the data as it is", fname, names[i], names[i],
                         names[i]);
        if (odd == 2)
            PyErr_Format(cv_SignatureError, "%s(): argument '%s' is a numpy.matrix, whose "
                         "operators differ from an ndarray's (`*` is a matrix product): pass "
                         "np.asarray(%s)", fname, names[i], names[i]);
        if (odd) return -1;
    }
    return 0;
}

/* PyModule_AddObjectRef of a new reference `value` (NULL: an error already set). */
static int cv_add_object(PyObject *m, const char *name, PyObject *value) {
    if (!value) return -1;
    int rc = PyModule_AddObjectRef(m, name, value);
    Py_DECREF(value);
    return rc;
}

/* A tuple of the `n` objects after `n`, new references it takes over (NULL: an error is
 * set; the others are released): a nested return value, `(out, (k, v))`. */
static PyObject *cv_tuple_of(Py_ssize_t n, ...) {
    PyObject *tuple = PyTuple_New(n);
    va_list items;
    va_start(items, n);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = va_arg(items, PyObject *);
        if (tuple && item) PyTuple_SET_ITEM(tuple, i, item);
        else { Py_XDECREF(item); Py_CLEAR(tuple); }
    }
    va_end(items);
    return tuple;
}

/* NumPy's functions take a NumPy scalar where an array goes: *arg, when it is one, is
 * replaced by a 0-d array of its value and dtype (a new reference, also in *held, which the
 * caller releases). -1 with an exception set where that fails. */
static int cv_scalar_as_array(PyObject **arg, PyObject **held) {
    if (!PyArray_IsScalar(*arg, Generic))
        return 0;
    *held = PyArray_FromScalar(*arg, NULL);
    if (!*held)
        return -1;
    *arg = *held;
    return 0;
}

/* A native-endian, aligned array whose strides are multiples of the item size
 * (C-contiguous too when `contiguous`): the array itself when it already is,
 * else a copy. New reference. */
static PyArrayObject *cv_normalize(PyArrayObject *arr, int contiguous) {
    int itemsize = (int)PyArray_ITEMSIZE(arr);
    int ok = PyArray_ISALIGNED(arr) && PyArray_ISNOTSWAPPED(arr);
    for (int d = 0; ok && d < PyArray_NDIM(arr); d++)
        ok = PyArray_STRIDE(arr, d) % itemsize == 0;
    if (ok && contiguous) ok = PyArray_IS_C_CONTIGUOUS(arr);
    if (ok) {
        Py_INCREF(arr);
        return arr;
    }
    PyArray_Descr *descr = PyArray_DescrFromType(PyArray_TYPE(arr));
    return (PyArrayObject *)PyArray_FromArray(arr, descr, NPY_ARRAY_CARRAY | NPY_ARRAY_ENSURECOPY);
}

/* Byte range [lo, hi) an array touches; empty arrays touch nothing. */
static void cv_extent(PyArrayObject *arr, char **lo, char **hi) {
    char *a = PyArray_BYTES(arr), *b = a;
    for (int d = 0; d < PyArray_NDIM(arr); d++) {
        npy_intp n = PyArray_DIM(arr, d), s = PyArray_STRIDE(arr, d);
        if (n == 0) {
            *lo = *hi = a;
            return;
        }
        if (s < 0) a += s * (n - 1); else b += s * (n - 1);
    }
    *lo = a;
    *hi = b + PyArray_ITEMSIZE(arr);
}

static int cv_overlaps(PyArrayObject *x, PyArrayObject *y) {
    char *xl, *xh, *yl, *yh;
    cv_extent(x, &xl, &xh);
    cv_extent(y, &yl, &yh);
    return xl < yh && yl < xh;
}

/* Checks a user-given out array: exact dtype and shape, writeable. */
static int cv_check_out(const char *fname, int index, PyObject *obj, int typenum, int ndim,
                        const npy_intp *shape) {
    char got[160];
    if (!PyArray_Check(obj)) {
        cv_describe(obj, got, sizeof got);
        PyErr_Format(PyExc_TypeError, "%s(): out[%d] must be a NumPy array, got %s", fname,
                     index, got);
        return -1;
    }
    int odd = cv_odd_array(obj);
    if (odd) {
        if (odd > 0)
            PyErr_Format(PyExc_TypeError, odd == 1 ? "%s(): out[%d] is a masked array "
                         "(numpy.ma.MaskedArray), whose mask compiled code does not update: "
                         "pass a plain array, e.g. its data: out.data" : "%s(): out[%d] is a "
                         "numpy.matrix: pass a plain array, e.g. np.asarray(out)", fname, index);
        return -1;
    }
    PyArrayObject *arr = (PyArrayObject *)obj;
    int bad_shape = PyArray_NDIM(arr) != ndim;
    for (int d = 0; !bad_shape && d < ndim; d++) bad_shape = PyArray_DIM(arr, d) != shape[d];
    if (PyArray_TYPE(arr) != typenum || !PyArray_ISNOTSWAPPED(arr) || bad_shape) {
        PyArray_Descr *want = PyArray_DescrFromType(typenum);
        cv_describe(obj, got, sizeof got);
        char shp[96];
        int len = snprintf(shp, sizeof shp, "(");
        for (int d = 0; d < ndim && len < (int)sizeof shp; d++)
            len += snprintf(shp + len, sizeof shp - len, d ? ", %lld" : "%lld",
                            (long long)shape[d]);
        if (len < (int)sizeof shp) snprintf(shp + len, sizeof shp - len, ndim == 1 ? ",)" : ")");
        if (!bad_shape && PyArray_TYPE(arr) == typenum) { /* only the byte order differs */
            char swapped[64];
            const char *np_name = want->typeobj->tp_name;
            cv_swapped_dtype(arr, swapped, sizeof swapped);
            if (strncmp(np_name, "numpy.", 6) == 0) np_name += 6;
            if (ndim == 1) snprintf(shp, sizeof shp, "%lld", (long long)shape[0]);
            PyErr_Format(PyExc_TypeError, "%s(): out[%d] is a %s array; pass a native-byte-order "
                         "array, e.g. np.empty(%s, np.%s)", fname, index, swapped, shp, np_name);
        } else {
            PyErr_Format(bad_shape ? PyExc_ValueError : PyExc_TypeError,
                         "%s(): out[%d] must be a %s array of shape %s, got %s", fname, index,
                         want->typeobj->tp_name, shp, got);
        }
        Py_DECREF(want);
        return -1;
    }
    if (!PyArray_ISWRITEABLE(arr)) {
        PyErr_Format(PyExc_ValueError, "%s(): out[%d] is read-only", fname, index);
        return -1;
    }
    return 0;
}

/* Large outputs get their memory from the runtime's block cache (outbuf.c): a
 * fresh 64 MiB array costs page faults and page zeroing on every call. The
 * handler is installed only around our own allocations; each array keeps a
 * reference to it and gives its block back when it dies. Smaller outputs
 * keep NumPy's allocator (switching costs more than it saves there). */
#define CV_OUT_CACHED_MIN ((npy_intp)1 << 20)
CV_SHARED(PyDataMem_Handler cv_out_handler_def, {"cuvil_aot_outputs", 1, {0}});
CV_SHARED(PyObject *cv_out_handler, NULL);

static int cv_init_out_handler(const cv_runtime_api *api) {
    PyDataMemAllocator a = {NULL, api->out_malloc, api->out_calloc, api->out_realloc,
                            api->out_free};
    cv_out_handler_def.allocator = a;
    cv_out_handler = PyCapsule_New(&cv_out_handler_def, "mem_handler", NULL);
    return cv_out_handler ? 0 : -1;
}

/* Buffers for intermediates: 64-byte aligned, never NULL for size 0; *owned says how to
 * give one back (cv_buffer_free). Large ones come from the runtime's block cache, as large
 * outputs do: glibc hands a freed block above its mmap threshold back to the kernel, so
 * each call page-faulted its intermediates afresh (a BERT-base layer at 8 x 128 in a fresh
 * process: 52 ms against 40 once glibc's threshold had grown). */
static void *cv_buffer(int64_t nbytes, int *owned) {
    size_t n = nbytes > 0 ? ((size_t)nbytes + 63) & ~(size_t)63 : 64;
    if (n >= (size_t)CV_OUT_CACHED_MIN) {
        *owned = 2;
        return cv_out_handler_def.allocator.malloc(NULL, n);
    }
    void *p = NULL;
    *owned = 1;
    if (posix_memalign(&p, 64, n) != 0) return NULL;
    return p;
}

static void cv_buffer_free(void *p, int owned) {
    if (owned == 2) cv_out_handler_def.allocator.free(NULL, p, 0);
    else if (owned == 1) free(p);
}

/* A new uninitialized C-contiguous output array. */
static PyArrayObject *cv_new_output(int ndim, npy_intp *shape, int typenum, npy_intp itemsize) {
    npy_intp nbytes = itemsize;
    for (int d = 0; d < ndim; d++) /* overflow: NumPy raises its own error */
        if (__builtin_mul_overflow(nbytes, shape[d], &nbytes)) nbytes = 0;
    if (nbytes < CV_OUT_CACHED_MIN) return (PyArrayObject *)PyArray_EMPTY(ndim, shape, typenum, 0);
    PyObject *old = PyDataMem_SetHandler(cv_out_handler);
    if (!old) return NULL;
    PyObject *arr = PyArray_EMPTY(ndim, shape, typenum, 0);
    PyObject *back = PyDataMem_SetHandler(old);
    Py_DECREF(old);
    if (!back) {
        Py_XDECREF(arr);
        return NULL;
    }
    Py_DECREF(back);
    return (PyArrayObject *)arr;
}

/* Splits an elementwise loop space of `rows` rows of `inner` elements into
 * tasks: whole rows when there are many, else chunks of a row. */
static void cv_split(const cv_runtime_api *api, int64_t rows, int64_t inner, int64_t *chunk,
                     int64_t *nchunk, int64_t *ntasks, int64_t *grain) {
    int64_t total = rows * inner;
    int64_t threads = api->num_threads();
    if (rows >= 4 * threads || total < 65536 || inner <= 0) {
        *chunk = inner > 0 ? inner : 1;
        *nchunk = 1;
    } else {
        int64_t c = (inner + 4 * threads - 1) / (4 * threads);
        c = (c + 63) & ~(int64_t)63;
        *chunk = c;
        *nchunk = (inner + c - 1) / c;
    }
    *ntasks = rows * *nchunk;
    int64_t per_task = *chunk < inner ? *chunk : inner;
    *grain = per_task > 0 ? (32768 + per_task - 1) / per_task : 1;
}

/* Runs fn over [0, ntasks): inline when small, else on the pool. */
static void cv_launch(const cv_runtime_api *api, cv_range_fn fn, void *ctx, int64_t ntasks,
                      int64_t grain) {
    if (ntasks <= 0) return;
    if (ntasks <= grain) fn(ctx, 0, ntasks);
    else api->parallel_for(ntasks, grain, fn, ctx);
}

/* dict, list and instance arguments (codegen/struct_arguments.py) */
#include "cuvil_aot/pywrap_structs.h"

#endif
