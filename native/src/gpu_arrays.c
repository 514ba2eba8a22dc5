/* Device arrays from Python objects, and new ones of the same kind.
 *
 * Three protocols, fastest first, decided once per Python type:
 *  - the DLPack C exchange API (type.__dlpack_c_exchange_api__, PyTorch):
 *    plain C calls for the view, the current stream and new tensors;
 *  - CuPy's ndarray attributes (data.ptr, data.device_id, shape, strides,
 *    dtype, whose typestr is read once per dtype): its __cuda_array_interface__
 *    is a dict built in Python per array and call, ~2.4 us of host time each
 *    (bench/gpu_notes.md);
 *  - __cuda_array_interface__ (Numba, PyCUDA): a dict per call;
 *  - __dlpack__ / __dlpack_device__: a capsule per call.
 * What C cannot do for a type (allocate a CuPy array, ask CuPy for its
 * current stream) goes through small Python adapters in
 * cuvil_aot.runtime.gpu_adapters, looked up once per type.
 *
 * Built on the driver layer (cuda.c, through gpu_internal.h / cuda_internal.h),
 * which depends on nothing here.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "dlpack_min.h"
#include "gpu_internal.h"

enum { PROTO_NONE, PROTO_EXCHANGE, PROTO_CUPY, PROTO_CAI, PROTO_DLPACK };

struct cv_gpu_kind {
    PyTypeObject *type;
    int proto;
    const DLPackExchangeAPI *xapi;
    PyObject *empty;          /* empty(shape, dtype_name, device) -> array, or None */
    PyObject *current_stream; /* current_stream(device) -> int handle, or None */
    PyObject *contiguous;     /* contiguous(obj) -> array */
    PyObject *dtype_seen;     /* the dtype object last read (held), and its code: a */
    int dtype_code;           /* dtype's typestr is a new string per read (CuPy) */
};

#define MAX_KINDS 32
static struct cv_gpu_kind kinds[MAX_KINDS];
static int nkinds;

/* By CV_DT_* */
static const char *const dtype_names[] = {"bool",    "int32",   "int64", "float16", "float32",
                                          "float64", "int8",    "int16", "uint8",   "uint64",
                                          "bfloat16"};
static const int dtype_sizes[] = {1, 4, 8, 2, 4, 8, 1, 2, 1, 8, 2};

/* A function of cuvil_aot.runtime.gpu_adapters (new reference), imported once. */
static PyObject *gpu_adapter(const char *name) {
    static PyObject *module;
    if (!module && !(module = PyImport_ImportModule("cuvil_aot.runtime.gpu_adapters")))
        return NULL;
    return PyObject_GetAttrString(module, name);
}

static const DLPackExchangeAPI *exchange_api(PyTypeObject *tp) {
    PyObject *cap = PyObject_GetAttrString((PyObject *)tp, "__dlpack_c_exchange_api__");
    const DLPackExchangeAPI *x = NULL;
    if (cap && PyCapsule_IsValid(cap, "dlpack_exchange_api"))
        x = PyCapsule_GetPointer(cap, "dlpack_exchange_api");
    Py_XDECREF(cap);
    PyErr_Clear();
    if (x && (x->header.version.major != 1 || !x->managed_tensor_allocator ||
              !x->managed_tensor_to_py_object_no_sync || !x->current_work_stream ||
              !(x->dltensor_from_py_object_no_sync || x->managed_tensor_from_py_object_no_sync)))
        x = NULL;
    return x;
}

static int fill_adapters(struct cv_gpu_kind *k) {
    PyObject *fn = gpu_adapter("adapters");
    PyObject *t = fn ? PyObject_CallOneArg(fn, (PyObject *)k->type) : NULL;
    Py_XDECREF(fn);
    if (!t) return -1;
    int cupy = 0;
    if (!PyArg_ParseTuple(t, "OOOp", &k->empty, &k->current_stream, &k->contiguous, &cupy)) {
        Py_DECREF(t);
        return -1;
    }
    if (cupy && k->proto == PROTO_CAI) k->proto = PROTO_CUPY;
    Py_INCREF(k->empty);
    Py_INCREF(k->current_stream);
    Py_INCREF(k->contiguous);
    Py_DECREF(t);
    return 0;
}

static struct cv_gpu_kind *kind_of(PyTypeObject *tp) {
    for (int i = 0; i < nkinds; i++)
        if (kinds[i].type == tp) return &kinds[i];
    struct cv_gpu_kind probe = {.type = tp, .proto = PROTO_NONE};
    PyObject *t = (PyObject *)tp;
    if ((probe.xapi = exchange_api(tp)))
        probe.proto = PROTO_EXCHANGE;
    else if (PyObject_HasAttrString(t, "__cuda_array_interface__"))
        probe.proto = PROTO_CAI;
    else if (PyObject_HasAttrString(t, "__dlpack__") &&
             PyObject_HasAttrString(t, "__dlpack_device__"))
        probe.proto = PROTO_DLPACK;
    if (probe.proto != PROTO_NONE && fill_adapters(&probe) < 0) return NULL;
    if (nkinds == MAX_KINDS) {
        PyErr_Format(PyExc_RuntimeError, "cuvil_aot: more than %d array types seen", MAX_KINDS);
        return NULL;
    }
    Py_INCREF(t);
    kinds[nkinds] = probe;
    return &kinds[nkinds++];
}

static int dl_dtype(DLDataType t) {
    if (t.lanes != 1) return -1;
    if (t.code == kDLFloat) return t.bits == 16 ? CV_DT_FLOAT16 : t.bits == 32 ? CV_DT_FLOAT32
                                 : t.bits == 64 ? CV_DT_FLOAT64 : -1;
    if (t.code == kDLInt) return t.bits == 8 ? CV_DT_INT8 : t.bits == 16 ? CV_DT_INT16
                               : t.bits == 32 ? CV_DT_INT32 : t.bits == 64 ? CV_DT_INT64 : -1;
    if (t.code == kDLUInt) return t.bits == 8 ? CV_DT_UINT8 : t.bits == 64 ? CV_DT_UINT64 : -1;
    if (t.code == kDLBool && t.bits == 8) return CV_DT_BOOL;
    if (t.code == kDLBfloat && t.bits == 16) return CV_DT_BFLOAT16;
    return -1;
}

static int too_many_dims(int ndim) {
    PyErr_Format(PyExc_ValueError, "cuvil_aot: device arrays of %d dimensions are not "
                 "supported (at most %d)", ndim, CV_GPU_MAX_NDIM);
    return -1;
}

/* 1 for a CUDA tensor (copied into out), 0 for another device. */
static int from_dltensor(const DLTensor *t, cv_gpu_array *out) {
    int type = t->device.device_type;
    if (type != kDLCUDA && type != kDLCUDAManaged) return 0;
    if (t->ndim > CV_GPU_MAX_NDIM) return too_many_dims(t->ndim);
    out->data = (char *)t->data + t->byte_offset;
    out->ndim = t->ndim;
    out->device = t->device.device_id;
    out->dtype = dl_dtype(t->dtype);
    int64_t contiguous = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        out->shape[d] = t->shape[d];
        out->strides[d] = t->strides ? t->strides[d] : contiguous;
        contiguous *= t->shape[d];
    }
    return 1;
}

static int from_exchange(PyObject *obj, const DLPackExchangeAPI *x, cv_gpu_array *out) {
    if (x->dltensor_from_py_object_no_sync) {
        DLTensor t;
        if (x->dltensor_from_py_object_no_sync(obj, &t) != 0) return -1;
        return from_dltensor(&t, out);
    }
    DLManagedTensorVersioned *mt = NULL;
    if (x->managed_tensor_from_py_object_no_sync(obj, &mt) != 0) return -1;
    int r = from_dltensor(&mt->dl_tensor, out);
    out->readonly = (mt->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
    if (mt->deleter) mt->deleter(mt);
    return r;
}

/* "<f4", "|b1", ... as CV_DT_*; -1 for other types (rejected by the signature check). */
static int typestr_dtype(const char *s) {
    if (!s || (s[0] != '<' && s[0] != '|' && s[0] != '=')) return -1;
    int size = atoi(s + 2);
    switch (s[1]) {
    case 'f': return size == 2 ? CV_DT_FLOAT16 : size == 4 ? CV_DT_FLOAT32
                   : size == 8 ? CV_DT_FLOAT64 : -1;
    case 'i': return size == 1 ? CV_DT_INT8 : size == 2 ? CV_DT_INT16 : size == 4 ? CV_DT_INT32
                   : size == 8 ? CV_DT_INT64 : -1;
    case 'u': return size == 1 ? CV_DT_UINT8 : size == 8 ? CV_DT_UINT64 : -1;
    case 'b': return size == 1 ? CV_DT_BOOL : -1;
    default: return -1;
    }
}

/* ndim, shape and strides (in elements) from a shape tuple and byte strides (a tuple, or
 * None for C order); out->dtype is set. */
static int fill_layout(cv_gpu_array *out, PyObject *shape, PyObject *strides) {
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    if (ndim > CV_GPU_MAX_NDIM) return too_many_dims((int)ndim);
    if (strides != Py_None && (!PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != ndim)) {
        PyErr_SetString(PyExc_TypeError, "device array strides must be a tuple of one int "
                        "per dimension");
        return -1;
    }
    out->ndim = (int)ndim;
    int itemsize = out->dtype >= 0 ? dtype_sizes[out->dtype] : 1;
    int64_t contiguous = 1;
    for (Py_ssize_t d = ndim - 1; d >= 0; d--) {
        out->shape[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, d));
        int64_t bytes = contiguous * itemsize;
        if (strides != Py_None) bytes = PyLong_AsLongLong(PyTuple_GET_ITEM(strides, d));
        if (bytes % itemsize) {
            PyErr_SetString(PyExc_ValueError, "device array strides must be multiples of the "
                            "item size");
            return -1;
        }
        out->strides[d] = bytes / itemsize;
        contiguous *= out->shape[d];
    }
    return PyErr_Occurred() ? -1 : 0;
}

/* The names read per array (attributes, the interface's keys), interned once: a lookup
 * by a C string makes, hashes and frees a str each time (half the host time of a call of
 * 18 interface arrays, 11.3 -> 6.5 us: bench/gpu/host_fake.py). */
enum { K_DATA, K_SHAPE, K_TYPESTR, K_STRIDES, K_MASK, K_STREAM, K_PTR, K_DEVICE_ID, K_DTYPE,
       K_CAI, NKEYS };
static PyObject *keys[NKEYS];

/* Name k, or NULL with an exception set. */
static PyObject *key(int k) {
    static const char *const names[NKEYS] = {
        "data", "shape", "typestr", "strides", "mask", "stream", "ptr", "device_id", "dtype",
        "__cuda_array_interface__"};
    return keys[k] ? keys[k] : (keys[k] = PyUnicode_InternFromString(names[k]));
}

static PyObject *attr(PyObject *obj, int k) {
    PyObject *name = key(k);
    return name ? PyObject_GetAttr(obj, name) : NULL;
}

static int cai_fields(PyObject *cai, cv_gpu_array *out, uintptr_t *ptr) {
    PyObject *v[K_STREAM + 1];
    for (int k = K_DATA; k <= K_STREAM; k++) {
        PyObject *name = key(k);
        if (!name || (!(v[k] = PyDict_GetItemWithError(cai, name)) && PyErr_Occurred()))
            return -1;
    }
    PyObject *data = v[K_DATA], *shape = v[K_SHAPE], *typestr = v[K_TYPESTR];
    PyObject *strides = v[K_STRIDES], *mask = v[K_MASK], *stream = v[K_STREAM];
    if (!data || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2 || !shape ||
        !PyTuple_Check(shape) || !typestr || !PyUnicode_Check(typestr)) {
        PyErr_SetString(PyExc_TypeError, "malformed __cuda_array_interface__");
        return -1;
    }
    if (mask && mask != Py_None) {
        PyErr_SetString(PyExc_TypeError, "masked device arrays are not supported");
        return -1;
    }
    out->dtype = typestr_dtype(PyUnicode_AsUTF8(typestr));
    if (fill_layout(out, shape, strides ? strides : Py_None) < 0) return -1;
    *ptr = (uintptr_t)PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(data, 0));
    out->readonly = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1)) == 1;
    if (stream && stream != Py_None) {
        out->has_stream = 1;
        out->stream = (uintptr_t)PyLong_AsUnsignedLongLong(stream);
    }
    out->data = (char *)*ptr;
    return PyErr_Occurred() ? -1 : 1;
}

/* The code of a NumPy dtype object, through its typestr where it is not the kind's last. */
static int dtype_of(struct cv_gpu_kind *k, PyObject *dtype) {
    if (dtype == k->dtype_seen) return k->dtype_code;
    PyObject *typestr = PyObject_GetAttrString(dtype, "str");
    if (!typestr) return -2;
    int code = PyUnicode_Check(typestr) ? typestr_dtype(PyUnicode_AsUTF8(typestr)) : -1;
    Py_DECREF(typestr);
    Py_INCREF(dtype);
    Py_XSETREF(k->dtype_seen, dtype);
    k->dtype_code = code;
    return code;
}

/* A CuPy ndarray from its attributes. Its memory names its device; its stream is CuPy's
 * current one, which gpu_stream asks the adapter for once per call. */
static int from_cupy(PyObject *obj, struct cv_gpu_kind *k, cv_gpu_array *out) {
    PyObject *mem = attr(obj, K_DATA);
    PyObject *ptr = mem ? attr(mem, K_PTR) : NULL;
    PyObject *dev = ptr ? attr(mem, K_DEVICE_ID) : NULL;
    PyObject *shape = dev ? attr(obj, K_SHAPE) : NULL;
    PyObject *strides = shape ? attr(obj, K_STRIDES) : NULL;
    PyObject *dtype = strides ? attr(obj, K_DTYPE) : NULL;
    int r = -1;
    if (dtype && !PyTuple_Check(shape))
        PyErr_SetString(PyExc_TypeError, "a CuPy array whose shape is no tuple");
    else if (dtype && (out->dtype = dtype_of(k, dtype)) != -2 &&
             fill_layout(out, shape, strides) == 0) {
        out->data = (char *)(uintptr_t)PyLong_AsUnsignedLongLong(ptr);
        out->device = (int)PyLong_AsLong(dev);
        r = PyErr_Occurred() ? -1 : 1;
    }
    PyObject *held[] = {mem, ptr, dev, shape, strides, dtype};
    for (size_t i = 0; i < sizeof held / sizeof *held; i++) Py_XDECREF(held[i]);
    return r;
}

static int from_cai(PyObject *obj, cv_gpu_array *out) {
    PyObject *cai = attr(obj, K_CAI);
    if (!cai) return -1;
    uintptr_t ptr = 0;
    int r = PyDict_Check(cai) ? cai_fields(cai, out, &ptr) : -1;
    if (r == -1 && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "__cuda_array_interface__ is not a dict");
    Py_DECREF(cai);
    if (r < 0) return -1;
    /* The interface names no device: ask the driver which one holds the
     * memory (a zero-size array may have no memory: the current device). */
    if (ptr) return cv_cuda_device_of(ptr, &out->device) < 0 ? -1 : 1;
    return cv_cuda_current_device(&out->device) < 0 ? -1 : 1;
}

static int from_dlpack(PyObject *obj, cv_gpu_array *out) {
    PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    int type = -1;
    if (!dev || !PyArg_ParseTuple(dev, "i|i", &type, &out->device)) {
        Py_XDECREF(dev);
        return -1;
    }
    Py_DECREF(dev);
    if (type != kDLCUDA && type != kDLCUDAManaged) return 0;
    PyObject *cap = PyObject_CallMethod(obj, "__dlpack__", NULL);
    DLManagedTensor *mt = cap ? PyCapsule_GetPointer(cap, "dltensor") : NULL;
    if (!mt) {
        Py_XDECREF(cap);
        return -1;
    }
    out->keep = cap; /* unconsumed: the capsule's destructor frees the tensor */
    return from_dltensor(&mt->dl_tensor, out);
}

static int gpu_array(PyObject *obj, cv_gpu_array *out) {
    struct cv_gpu_kind *k = kind_of(Py_TYPE(obj));
    if (!k) return -1;
    memset(out, 0, sizeof *out);
    out->kind = k;
    switch (k->proto) {
    case PROTO_EXCHANGE: return from_exchange(obj, k->xapi, out);
    case PROTO_CUPY: return from_cupy(obj, k, out);
    case PROTO_CAI: return from_cai(obj, out);
    case PROTO_DLPACK: return from_dlpack(obj, out);
    default: return 0;
    }
}

static void gpu_release(cv_gpu_array *a) {
    Py_CLEAR(a->keep);
    Py_CLEAR(a->fresh_object);
    DLManagedTensorVersioned *mt = a->fresh_tensor;
    a->fresh_tensor = NULL;
    if (mt && mt->deleter) mt->deleter(mt);
}

static void set_error(void *ctx, const char *kind, const char *message) {
    (void)ctx;
    PyErr_SetString(strcmp(kind, "MemoryError") == 0 ? PyExc_MemoryError : PyExc_RuntimeError,
                    message);
}

static int empty_exchange(const DLPackExchangeAPI *x, const cv_gpu_array *like, int dtype,
                          int ndim, const int64_t *shape, cv_gpu_array *out) {
    static const DLDataType types[] = {{kDLBool, 8, 1},   {kDLInt, 32, 1},   {kDLInt, 64, 1},
                                       {kDLFloat, 16, 1}, {kDLFloat, 32, 1}, {kDLFloat, 64, 1},
                                       {kDLInt, 8, 1},    {kDLInt, 16, 1},   {kDLUInt, 8, 1},
                                       {kDLUInt, 64, 1},  {kDLBfloat, 16, 1}}; /* by CV_DT_* */
    DLTensor proto = {NULL, {kDLCUDA, like->device}, ndim, types[dtype], (int64_t *)shape,
                      NULL, 0};
    DLManagedTensorVersioned *mt = NULL;
    if (x->managed_tensor_allocator(&proto, &mt, NULL, set_error) != 0) return -1;
    memset(out, 0, sizeof *out);
    out->kind = like->kind;
    out->fresh_tensor = mt;
    from_dltensor(&mt->dl_tensor, out);
    return 0;
}

/* A cleared view of a C-contiguous array of this shape (no data yet); its element count. */
static int64_t c_order(cv_gpu_array *out, int dtype, int ndim, const int64_t *shape) {
    memset(out, 0, sizeof *out);
    out->ndim = ndim, out->dtype = dtype;
    int64_t count = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        out->shape[d] = shape[d];
        out->strides[d] = count;
        count *= shape[d];
    }
    return count;
}

/* A C-contiguous array from the kind's empty() adapter, which also names its device
 * pointer: no __cuda_array_interface__ dict and no driver query for an array whose
 * layout is known. */
static int gpu_empty(const cv_gpu_array *like, int dtype, int ndim, const int64_t *shape,
                     cv_gpu_array *out) {
    const struct cv_gpu_kind *k = like->kind;
    if (k->xapi) return empty_exchange(k->xapi, like, dtype, ndim, shape, out);
    if (k->empty == Py_None) {
        PyErr_Format(PyExc_TypeError, "cuvil_aot cannot allocate %s arrays: pass out=",
                     k->type->tp_name);
        return -1;
    }
    PyObject *dims = PyTuple_New(ndim);
    for (int d = 0; dims && d < ndim; d++)
        PyTuple_SET_ITEM(dims, d, PyLong_FromLongLong(shape[d]));
    PyObject *made = dims ? PyObject_CallFunction(k->empty, "Osi", dims, dtype_names[dtype],
                                                  like->device) : NULL;
    Py_XDECREF(dims);
    if (!made) return -1;
    if (!PyTuple_Check(made) || PyTuple_GET_SIZE(made) != 2) {
        PyErr_SetString(PyExc_TypeError, "the array allocator returned no (array, pointer)");
        Py_DECREF(made);
        return -1;
    }
    uintptr_t ptr = (uintptr_t)PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(made, 1));
    if (PyErr_Occurred()) {
        Py_DECREF(made);
        return -1;
    }
    c_order(out, dtype, ndim, shape);
    out->kind = k, out->device = like->device, out->data = (char *)ptr;
    out->fresh_object = Py_NewRef(PyTuple_GET_ITEM(made, 0));
    Py_DECREF(made);
    return 0;
}

static PyObject *gpu_wrap(cv_gpu_array *a) {
    PyObject *obj = a->fresh_object;
    a->fresh_object = NULL;
    DLManagedTensorVersioned *mt = a->fresh_tensor;
    if (mt) {
        void *made = NULL;
        a->fresh_tensor = NULL; /* the exchange API owns it from here, made or not */
        if (a->kind->xapi->managed_tensor_to_py_object_no_sync(mt, &made) == 0)
            obj = made;
    }
    if (!obj && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "cuvil_aot: no array to wrap");
    return obj;
}

static PyObject *gpu_contiguous(PyObject *obj, const cv_gpu_array *a, cv_gpu_array *out) {
    PyObject *copy = PyObject_CallOneArg(a->kind->contiguous, obj);
    if (copy && gpu_array(copy, out) != 1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "the contiguous copy is no device array");
        Py_CLEAR(copy);
    }
    return copy;
}

static int int_attr(PyObject *obj, const char *name, uintptr_t *out) {
    PyObject *v = PyObject_GetAttrString(obj, name);
    if (!v) return -1;
    *out = (uintptr_t)PyLong_AsUnsignedLongLong(v);
    Py_DECREF(v);
    return PyErr_Occurred() ? -1 : 0;
}

/* stream=: an int handle, or a stream object of a framework. */
static int stream_of(PyObject *s, uintptr_t *out) {
    if (PyLong_Check(s)) return int_attr(s, "real", out);
    if (PyObject_HasAttrString(s, "__cuda_stream__")) {
        PyObject *t = PyObject_CallMethod(s, "__cuda_stream__", NULL);
        PyObject *h = t && PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 2 ? PyTuple_GET_ITEM(t, 1)
                                                                        : NULL;
        int r = h ? int_attr(h, "real", out) : -1;
        Py_XDECREF(t);
        if (r == 0 || PyErr_Occurred()) return r;
    }
    if (PyObject_HasAttrString(s, "cuda_stream")) return int_attr(s, "cuda_stream", out);
    if (PyObject_HasAttrString(s, "ptr")) return int_attr(s, "ptr", out);
    PyErr_Format(PyExc_TypeError, "stream= must be a stream handle (int) or a stream object "
                 "(torch.cuda.Stream, cupy.cuda.Stream, or one with __cuda_stream__), got %s",
                 Py_TYPE(s)->tp_name);
    return -1;
}

static int gpu_stream(const cv_gpu_array *like, PyObject *s, uintptr_t *out) {
    const struct cv_gpu_kind *k = like->kind;
    *out = 1; /* CU_STREAM_LEGACY */
    if (s && s != Py_None) return stream_of(s, out);
    if (k->xapi) {
        void *h = NULL;
        if (k->xapi->current_work_stream(kDLCUDA, like->device, &h) != 0) return -1;
        *out = (uintptr_t)h;
        return 0;
    }
    if (like->has_stream) {
        *out = like->stream;
        return 0;
    }
    if (k->current_stream == Py_None) return 0;
    PyObject *h = PyObject_CallFunction(k->current_stream, "i", like->device);
    if (!h) return -1;
    *out = (uintptr_t)PyLong_AsUnsignedLongLong(h);
    Py_DECREF(h);
    return PyErr_Occurred() ? -1 : 0;
}

static int gpu_order_after(const cv_gpu_array *a, uintptr_t stream) {
    if (!a->has_stream) return 0;
    return cv_cuda_order(a->device, a->stream, stream);
}

static int gpu_scratch(int device, int dtype, int ndim, const int64_t *shape, uintptr_t stream,
                       cv_gpu_array *out) {
    int64_t count = c_order(out, dtype, ndim, shape);
    out->device = device;
    void *p = NULL;
    int r = cv_cuda_scratch(device, (size_t)count * dtype_sizes[dtype], stream, &p);
    out->data = p;
    return r;
}

static void gpu_scratch_free(cv_gpu_array *a, uintptr_t stream) {
    int64_t count = 1;
    for (int d = 0; d < a->ndim; d++) count *= a->shape[d];
    cv_cuda_scratch_free(a->device, a->data, (size_t)count * dtype_sizes[a->dtype], stream);
    a->data = NULL;
}

const cv_gpu_api cv_gpu_api_table = {
    gpu_array,     gpu_release,      gpu_empty,        gpu_wrap,       gpu_contiguous, gpu_stream,
    gpu_order_after, cv_cuda_sm_count, cv_cuda_launch, gpu_scratch, gpu_scratch_free,
    cv_cuda_launch_one, cv_cuda_save_context, cv_cuda_restore_context, cv_cuda_zero,
    cv_cuda_read,  cv_gpu_launch_list, cv_cuda_wgmma, cv_cuda_tensor_map, cv_cuda_attention,
};
