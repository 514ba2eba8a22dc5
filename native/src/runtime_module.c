/* The extension module cuvil_aot.runtime.native: exports the C API capsule that
 * generated modules call through, the pool/ISA configuration, and test hooks
 * that drive the pool and the GEMM from Python. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "gpu_internal.h"
#include "internal.h"
#include "test_hooks.h"

static const cv_runtime_api runtime_api = {
    CV_RUNTIME_ABI_VERSION, cv_cpu_level,    cv_num_threads, cv_parallel_for,
    cv_run_gemm_f32,        cv_run_gemm_f64, &cv_gpu_api_table,
    cv_out_malloc,          cv_out_calloc,   cv_out_realloc, cv_out_free,
    cv_run_gemm_bf16,       cv_run_gemm_q8,
};

/* CUVIL_AOT_MODE as configured (knobs.MODES); the driver layer sees only strict. */
static const char *const modes[] = {"strict", "import", "lazy"};
static int mode = 1;

/* A flag argument of configure: None leaves *flag as it is. */
static int parse_flag(PyObject *value, int *flag) {
    if (value == Py_None)
        return 0;
    int on = PyObject_IsTrue(value);
    if (on < 0)
        return -1;
    *flag = on;
    return 0;
}

/* The mode argument of configure: None leaves *index as it is. */
static int parse_mode(PyObject *value, int *index) {
    if (value == Py_None)
        return 0;
    for (int i = 0; i < (int)(sizeof modes / sizeof *modes); i++)
        if (PyUnicode_Check(value) && PyUnicode_CompareWithASCIIString(value, modes[i]) == 0) {
            *index = i;
            return 0;
        }
    PyErr_Format(PyExc_ValueError, "mode=%R: expected 'strict', 'import' or 'lazy'", value);
    return -1;
}

/* The cuda_graph argument of configure: None leaves *min as it is. */
static int parse_graph(PyObject *value, int *min) {
    if (value == Py_None)
        return 0;
    long n = PyLong_Check(value) ? PyLong_AsLong(value) : -1;
    if (n == -1 && PyErr_Occurred())
        return -1;
    if (!PyLong_Check(value) || n < 0 || n > 1024) {
        PyErr_Format(PyExc_ValueError, "cuda_graph=%R: expected 0 (off) or the launches a "
                     "call needs for a CUDA graph (1 to 1024)", value);
        return -1;
    }
    *min = (int)n;
    return 0;
}

static PyObject *configure(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"num_threads", "cpu_level", "output_cache_bytes", "cuda_one",
                             "cuda_pool",   "mode",      "cuda_graph",         "cuda_wgmma",
                             "cuda_attention", "cuda_wgmma_transpose", "cuda_wg_tail",
                             "cuda_wg_nmajor", "cuda_tc_cluster", "cuda_attention_split",
                             "cuda_attention_grouped", NULL};
    PyObject *nt = Py_None, *lvl = Py_None, *ocb = Py_None;
    PyObject *one = Py_None, *pool = Py_None, *md = Py_None, *graph = Py_None;
    PyObject *wgmma = Py_None, *attention = Py_None, *wgmma_copy = Py_None, *tail = Py_None;
    PyObject *nmajor = Py_None, *cluster = Py_None, *att_split = Py_None, *grouped = Py_None;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOOOOOOOOOOOOO:configure", kwlist, &nt, &lvl,
                                     &ocb, &one, &pool, &md, &graph, &wgmma, &attention,
                                     &wgmma_copy, &tail, &nmajor, &cluster, &att_split, &grouped))
        return NULL;
    cv_cuda_settings gpu = cv_cuda_config;
    int new_mode = mode;
    if (parse_flag(one, &gpu.one_kernel) < 0 || parse_flag(pool, &gpu.pool) < 0 ||
        parse_mode(md, &new_mode) < 0 || parse_graph(graph, &gpu.graph_min) < 0 ||
        parse_flag(wgmma, &gpu.wgmma) < 0 || parse_flag(attention, &gpu.attention) < 0 ||
        parse_flag(wgmma_copy, &gpu.wgmma_copy) < 0 || parse_flag(tail, &gpu.wg_tail) < 0 ||
        parse_flag(nmajor, &gpu.wg_nmajor) < 0 || parse_flag(cluster, &gpu.tc_cluster) < 0 ||
        parse_flag(att_split, &gpu.attention_split) < 0 ||
        parse_flag(grouped, &gpu.attention_grouped) < 0)
        return NULL;
    mode = new_mode;
    gpu.strict = mode == 0;
    cv_cuda_config = gpu;
    if (nt != Py_None) {
        long n = PyLong_AsLong(nt);
        if (n == -1 && PyErr_Occurred())
            return NULL;
        if (n < 0 || n > 1024 || cv_set_num_threads((int)n) != 0) {
            PyErr_Format(PyExc_ValueError,
                         "num_threads=%ld: expected 0 (one per CPU) to 1024, "
                         "not from inside a parallel task", n);
            return NULL;
        }
    }
    if (lvl != Py_None) {
        long l = PyLong_AsLong(lvl);
        if (l == -1 && PyErr_Occurred())
            return NULL;
        if (l < 0 || l > 4) {
            PyErr_Format(PyExc_ValueError, "cpu_level=%ld: expected 0 (detected) to 4", l);
            return NULL;
        }
        cv_set_cpu_level((int)l);
    }
    if (ocb != Py_None) {
        long long b = PyLong_AsLongLong(ocb);
        if (b == -1 && PyErr_Occurred())
            return NULL;
        if (b < 0) {
            PyErr_Format(PyExc_ValueError, "output_cache_bytes=%lld: expected 0 (off) or more", b);
            return NULL;
        }
        cv_out_cache_limit((size_t)b);
    }
    Py_RETURN_NONE;
}

/* {"sm_90": 3} or {"compute_120 (PTX, JIT-compiled)": 1}: the images loaded, modules each. */
static PyObject *images_loaded(const cv_cuda_device_info *d) {
    PyObject *images = PyDict_New();
    for (int i = 0; images && i < d->nimages; i++) {
        char name[48];
        if (d->image[i] > 0)
            snprintf(name, sizeof name, "sm_%d", d->image[i]);
        else
            snprintf(name, sizeof name, "compute_%d (PTX, JIT-compiled)", -d->image[i]);
        PyObject *count = PyLong_FromLong(d->modules[i]);
        if (!count || PyDict_SetItemString(images, name, count) < 0)
            Py_CLEAR(images);
        Py_XDECREF(count);
    }
    return images;
}

/* The devices the runtime has opened: index, compute capability, SMs, images loaded. */
static PyObject *cuda_devices(void) {
    PyObject *list = PyList_New(0);
    cv_cuda_device_info d;
    for (int dev = 0; list && dev < CV_GPU_MAX_DEVICES; dev++) {
        if (!cv_cuda_device_seen(dev, &d))
            continue;
        char cc[16];
        snprintf(cc, sizeof cc, "%d.%d", d.cc / 10, d.cc % 10);
        PyObject *entry = Py_BuildValue("{s:i,s:s,s:i,s:N}", "device", dev, "compute_capability",
                                        cc, "sm_count", d.sm_count, "images", images_loaded(&d));
        if (!entry || PyList_Append(list, entry) < 0)
            Py_CLEAR(list);
        Py_XDECREF(entry);
    }
    return list;
}

static PyObject *info(PyObject *self, PyObject *unused) {
    int count;
    const char *const *names = cv_cpu_features(&count);
    (void)self;
    (void)unused;
    PyObject *feats = PyList_New(count);
    if (!feats)
        return NULL;
    for (int i = 0; i < count; i++) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (!s) {
            Py_DECREF(feats);
            return NULL;
        }
        PyList_SET_ITEM(feats, i, s);
    }
    unsigned long long g[CV_GRAPH_NSTATS];
    cv_gpu_graph_stats(g);
    PyObject *devices = cuda_devices();
    if (!devices) {
        Py_DECREF(feats);
        return NULL;
    }
    return Py_BuildValue("{s:i,s:i,s:i,s:N,s:s,s:N,s:N,s:s,s:i,s:N,s:N,s:N,s:N,"
                         "s:N,s:N,s:N,s:N,s:{s:K,s:K,s:K,s:K,s:K},s:N}",
                         "detected_cpu_level", cv_cpu_detected_level(), "cpu_level",
                         cv_cpu_level(), "num_threads", cv_num_threads(), "features", feats,
                         "gemm_bf16_kernel", cv_bf16_kernel_name(),
                         "cuda_one", PyBool_FromLong(cv_cuda_config.one_kernel), "cuda_pool",
                         PyBool_FromLong(cv_cuda_config.pool), "mode", modes[mode],
                         "cuda_graph", cv_cuda_config.graph_min, "cuda_wgmma",
                         PyBool_FromLong(cv_cuda_config.wgmma), "cuda_wgmma_transpose",
                         PyBool_FromLong(cv_cuda_config.wgmma_copy), "cuda_wg_tail",
                         PyBool_FromLong(cv_cuda_config.wg_tail), "cuda_wg_nmajor",
                         PyBool_FromLong(cv_cuda_config.wg_nmajor), "cuda_tc_cluster",
                         PyBool_FromLong(cv_cuda_config.tc_cluster), "cuda_attention",
                         PyBool_FromLong(cv_cuda_config.attention), "cuda_attention_split",
                         PyBool_FromLong(cv_cuda_config.attention_split),
                         "cuda_attention_grouped",
                         PyBool_FromLong(cv_cuda_config.attention_grouped), "cuda_graph_stats",
                         "replays", g[CV_GRAPH_REPLAYS], "builds", g[CV_GRAPH_BUILDS],
                         "node_updates", g[CV_GRAPH_UPDATES], "plain", g[CV_GRAPH_PLAIN],
                         "capturing", g[CV_GRAPH_CAPTURING], "cuda_devices", devices);
}

static PyObject *output_cache(PyObject *self, PyObject *unused) {
    size_t limit, held;
    int blocks;
    (void)self;
    (void)unused;
    cv_out_cache_state(&limit, &held, &blocks);
    return Py_BuildValue("{s:n,s:n,s:i}", "limit", (Py_ssize_t)limit, "held", (Py_ssize_t)held,
                         "blocks", blocks);
}

static PyMethodDef methods[] = {
    {"configure", (PyCFunction)(void (*)(void))configure, METH_VARARGS | METH_KEYWORDS,
     "configure(num_threads=None, cpu_level=None, output_cache_bytes=None, cuda_one=None,\n"
     "          cuda_pool=None, mode=None, cuda_graph=None, cuda_wgmma=None,\n"
     "          cuda_attention=None, cuda_wgmma_transpose=None, cuda_wg_tail=None,\n"
     "          cuda_wg_nmajor=None, cuda_tc_cluster=None, cuda_attention_split=None,\n"
     "          cuda_attention_grouped=None)\n--\n\n"
     "Set the pool's thread count (0: one per usable CPU), lower the x86-64 level\n"
     "kernels may use (0: the detected level), cap the bytes of freed large output\n"
     "blocks kept for reuse (0: keep none), launch a GPU call's kernels as one\n"
     "(cuda_one, CUVIL_AOT_CUDA_ONE), take GPU intermediates from the runtime's pool\n"
     "(cuda_pool, CUVIL_AOT_CUDA_POOL), set CUVIL_AOT_MODE ('strict' makes a PTX\n"
     "JIT at GPU module load an error) and the launches a GPU call needs to replay a\n"
     "CUDA graph of them (cuda_graph, CUVIL_AOT_CUDA_GRAPH; 0: never), and whether\n"
     "float32 GEMMs may run the Hopper wgmma main loop (cuda_wgmma,\n"
     "CUVIL_AOT_CUDA_WGMMA; over K-major copies of their operands:\n"
     "cuda_wgmma_transpose, CUVIL_AOT_CUDA_WGMMA_TRANSPOSE; k of its last round of\n"
     "tiles split alone: cuda_wg_tail, CUVIL_AOT_CUDA_WG_TAIL; an (in, out) weight read as\n"
     "it is, transposed in the kernel, not copied: cuda_wg_nmajor,\n"
     "CUVIL_AOT_CUDA_WG_NMAJOR; split-K GEMMs summed in thread-block clusters on sm_90:\n"
     "cuda_tc_cluster, CUVIL_AOT_CUDA_TC_CLUSTER) and attentions the fused\n"
     "kernel (cuda_attention, CUVIL_AOT_CUDA_ATTENTION; with a block's keys split where the\n"
     "blocks are few: cuda_attention_split, CUVIL_AOT_CUDA_ATTENTION_SPLIT; over K/V heads\n"
     "repeated for grouped-query attention: cuda_attention_grouped,\n"
     "CUVIL_AOT_CUDA_ATTENTION_GROUPED). None leaves a\n"
     "setting as it is."},
    {"output_cache", output_cache, METH_NOARGS,
     "output_cache()\n--\n\nThe output block cache: its limit, bytes held and blocks held."},
    {"info", info, METH_NOARGS,
     "info()\n--\n\nDetected and usable CPU level, thread count, CPU features, the\n"
     "bfloat16 GEMM's kernel at that level (gemm_bf16_kernel: amx, avx512 or plain), the\n"
     "configured GPU settings (cuda_one, cuda_pool, mode, cuda_graph, cuda_wgmma,\n"
     "cuda_wgmma_transpose, cuda_wg_tail, cuda_wg_nmajor, cuda_tc_cluster, cuda_attention,\n"
     "cuda_attention_split, cuda_attention_grouped),\n"
     "and the graph\n"
     "path's counters (cuda_graph_stats: calls that replayed a graph, graphs built, kernel\n"
     "nodes updated, calls launched one by one, calls on a stream being captured), and\n"
     "cuda_devices: each device the runtime has used, its compute capability, SM count\n"
     "and the fatbin images its modules loaded (SASS, or PTX the driver JIT-compiled)."},
    {"_bf16_kernel", cv_py_bf16_kernel, METH_VARARGS,
     "_bf16_kernel(best)\n--\n\n"
     "Test hook: the bfloat16 GEMM runs no kernel better than best ('amx', 'avx512',\n"
     "'plain'; 'amx' lifts the limit) that the CPU, the OS and the usable level allow.\n"
     "Returns the kernel a call now runs, as info()['gemm_bf16_kernel']."},
    {"_parallel_check", cv_py_parallel_check, METH_VARARGS,
     "_parallel_check(n, grain)\n--\n\n"
     "Test hook: runs parallel_for over [0, n) and returns (number of indices\n"
     "visited exactly once, number of distinct threads that ran chunks)."},
    {"_gemm", (PyCFunction)(void (*)(void))cv_py_gemm, METH_VARARGS | METH_KEYWORDS,
     "_gemm(a, b, out, more=())\n--\n\n"
     "Test hook: out[...] = a @ b + sum(x @ y for x, y in more) through the runtime\n"
     "GEMM with a store epilogue. float32 or float64 2-D or 3-D buffers, any strides.\n"
     "Returns (epilogue calls, elements written that were not NaN before,\n"
     "largest tile rows, largest tile columns)."},
    {"_launch_list", cv_py_launch_list, METH_VARARGS,
     "_launch_list(launches, stream=0, site=0)\n--\n\n"
     "Test hook: cv_gpu_launch_list on device 0 over a module of kernels k0..k7 with no\n"
     "real image (for a fake libcuda.so.1): launches are (kernel, grid_x, grid_y, block,\n"
     "32 bytes of arguments); site picks one of four call sites' graphs."},
    {"_reuse_cold", cv_py_reuse_cold, METH_VARARGS,
     "_reuse_cold(address, bytes)\n--\n\n"
     "Test hook: whether the GEMM would take the matrix of `bytes` at `address` as out of\n"
     "the L3 (new, or more than half the L3 streamed since its last use); records the use."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cuvil_aot.runtime.native",
    .m_doc = "The native runtime of cuvil_aot: CPU level detection, thread pool, GEMM.",
    .m_size = -1,
    .m_methods = methods,
};

extern PyTypeObject cv_CompiledFunctionType; /* compiled_function.c */
extern PyTypeObject cv_FrozenType;           /* frozen.c */

/* Ready `type` and add it to m under `name`; -1 with an exception set on failure. */
static int add_type(PyObject *m, const char *name, PyTypeObject *type) {
    if (PyType_Ready(type) < 0)
        return -1;
    Py_INCREF(type);
    if (PyModule_AddObject(m, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit_native(void) {
    cv_out_init();
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    if (add_type(m, "CompiledFunction", &cv_CompiledFunctionType) < 0 ||
        add_type(m, "Frozen", &cv_FrozenType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    /* The table is read-only; the capsule API just takes a void *. */
    PyObject *cap = PyCapsule_New((void *)&runtime_api, CV_RUNTIME_CAPSULE, NULL);
    if (!cap || PyModule_AddObject(m, "_C_API", cap) < 0) {
        Py_XDECREF(cap);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
