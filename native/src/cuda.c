/* The CUDA driver layer: libcuda.so.1 loaded with dlopen at the first GPU
 * call, primary contexts, modules loaded once per device, launches, errors.
 *
 * No CUDA header is needed to build this: the few driver types and entry
 * points are declared below (their ABI has been stable since CUDA 4). A
 * machine without a driver imports the runtime fine; its first GPU call
 * raises cuvil_aot.CudaError. Errors that poison the context (an illegal
 * address in a kernel, ...) are remembered: every later GPU call says the
 * context is lost instead of failing in some unrelated way.
 *
 * The lowest GPU layer: it uses nothing of gpu_arrays.c (the array adapters,
 * which call it) and never calls into Python but to raise and warn. Its
 * settings (cv_cuda_config) come from cuvil_aot.runtime.native.configure.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr;
typedef struct CUmemPoolHandle_st *CUmemoryPool;

/* CUmemPoolProps (cuda.h): a device-resident pool, no export handles. */
typedef struct {
    int alloc_type, handle_types, location_type, location_id;
    void *win32_security_attributes;
    unsigned char rest[64]; /* maxSize, usage, reserved: zero */
} pool_props;

enum {
    ATTR_SM_COUNT = 16,
    ATTR_CC_MAJOR = 75,
    ATTR_CC_MINOR = 76,
    POINTER_DEVICE_ORDINAL = 9,
    EVENT_DISABLE_TIMING = 2,
    ATTR_MEMORY_POOLS_SUPPORTED = 115,
    MEM_ALLOCATION_TYPE_PINNED = 1,
    MEM_LOCATION_TYPE_DEVICE = 1,
    MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
    FUNC_ATTR_MAX_DYNAMIC_SHARED = 8, /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    STATIC_SMEM_LIMIT = 48 * 1024,    /* dynamic shared memory a launch gets unasked */
    TMAP_INTERLEAVE_NONE = 0,
    TMAP_L2_PROMOTION_256B = 3,
    TMAP_OOB_FILL_NONE = 0,
};

static struct {
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*GetErrorString)(CUresult, const char **);
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxGetCurrent)(CUcontext *);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxGetDevice)(CUdevice *);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
    CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
    CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    /* Optional (CUDA 11.2+): stream-ordered allocation from a pool. */
    CUresult (*MemPoolCreate)(CUmemoryPool *, const pool_props *);
    CUresult (*MemPoolSetAttribute)(CUmemoryPool, int, void *);
    CUresult (*MemAllocFromPoolAsync)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
    CUresult (*LaunchCooperativeKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, unsigned, unsigned, CUstream, void **);
    /* Optional (CUDA 12+): Hopper tensor maps, and a kernel's dynamic shared memory
     * limit raised past 48 KB (the wgmma GEMM's 214 KB). */
    CUresult (*TensorMapEncodeTiled)(void *, int, unsigned, void *, const uint64_t *,
                                     const uint64_t *, const uint32_t *, const uint32_t *, int,
                                     int, int, int);
    CUresult (*FuncSetAttribute)(CUfunction, int, int);
} cu;

/* Same order as the struct above. */
static const char *const symbols[] = {
    "cuGetErrorName", "cuGetErrorString", "cuInit", "cuDeviceGet", "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain", "cuCtxGetCurrent", "cuCtxSetCurrent", "cuCtxGetDevice",
    "cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel", "cuPointerGetAttribute",
    "cuEventCreate", "cuEventRecord", "cuStreamWaitEvent", "cuMemsetD8Async",
    "cuMemcpyDtoHAsync_v2", "cuStreamSynchronize",
};
static const char *const optional_symbols[] = {
    "cuMemPoolCreate", "cuMemPoolSetAttribute", "cuMemAllocFromPoolAsync", "cuMemFreeAsync",
    "cuLaunchCooperativeKernel", "cuTensorMapEncodeTiled", "cuFuncSetAttribute",
};

cv_cuda_settings cv_cuda_config = {.one_kernel = 1, .pool = 1, .strict = 0,
                                   .graph_min = CV_GRAPH_MIN_DEFAULT, .wgmma = 1,
                                   .wgmma_copy = 1, .wg_tail = 1, .wg_nmajor = 1, .tc_cluster = 1,
                                   .attention = 1, .attention_split = 1,
                                   .attention_grouped = 1};

static void *libcuda;     /* kept for cv_cuda_symbol */
static int driver_state;  /* 0: not tried, 1: usable, -1: not usable (why in driver_error) */
static char driver_error[320];
static char lost[320];    /* set once an error has poisoned the context */

/* Scratch blocks that calls on the legacy default stream freed, kept for the next
 * call on it (cv_cuda_scratch): that stream runs its work in order, so a later call
 * may reuse a block with no cuMemAllocFromPoolAsync and cuMemFreeAsync, each a
 * driver call of host time at batch 1. Only that stream: it is never destroyed,
 * while another stream's handle may come back naming a new stream that is not
 * ordered after the old one. Under the GIL, as every GPU call.
 * Enough for a transformer block's intermediates, split-K sums and K-major weight
 * copies (GPT-2's: 17), and handed out the same way each call (take_spare), so a call
 * repeated with the same arrays gets the same pointers and its CUDA graph replays with
 * no node updated: with 8 spares, GPT-2 8x128 on the H200 updated 8 nodes a call and
 * spent 29 us of host time before its graph launched. */
#define CV_SPARES 32
#define LEGACY_STREAM(s) ((s) == 0 || (s) == 1) /* NULL and CU_STREAM_LEGACY */

static struct device {
    CUcontext ctx;
    CUevent order;        /* reused by cv_cuda_order */
    int sm_count, cc;     /* cc: compute capability * 10 */
    CUmemoryPool pool;    /* for intermediates (cv_cuda_scratch) */
    int pool_state;       /* 0: not tried, 1: usable, -1: not supported */
    struct spare { void *p; size_t bytes; } spare[CV_SPARES]; /* on the legacy stream */
    int nspare;
    cv_cuda_device_info seen; /* the images its modules loaded (cuvil_aot.info()) */
} devices[CV_GPU_MAX_DEVICES];

typedef struct {
    CUmodule mod;
    uint32_t *smem;       /* per kernel: the dynamic shared memory limit raised to (0: not) */
    CUfunction fn[];      /* resolved on first launch */
} loaded_module;

int cv_cuda_raise(const char *fmt, ...) {
    static PyObject *cuda_error;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!cuda_error) {
        PyObject *mod = PyImport_ImportModule("cuvil_aot.errors");
        cuda_error = mod ? PyObject_GetAttrString(mod, "CudaError") : NULL;
        Py_XDECREF(mod);
        if (!cuda_error) {
            PyErr_Clear();
            PyErr_SetString(PyExc_RuntimeError, msg);
            return -1;
        }
    }
    PyErr_SetString(cuda_error, msg);
    return -1;
}

/* Errors after which the context cannot be used any more. */
static int is_sticky(CUresult r) {
    return r == 700 || r == 702 || (r >= 714 && r <= 719);
}

int cv_cuda_sticky(int r) { return is_sticky(r); }

static void describe(CUresult r, const char **name, const char **text) {
    *name = "CUDA_ERROR_UNKNOWN";
    *text = "unknown error";
    if (cu.GetErrorName) cu.GetErrorName(r, name);
    if (cu.GetErrorString) cu.GetErrorString(r, text);
}

static int check(CUresult r, const char *call, const char *kernel) {
    if (r == 0) return 0;
    const char *name, *text;
    describe(r, &name, &text);
    if (is_sticky(r)) {
        snprintf(lost, sizeof lost, "%s (%s) in %s%s%s", name, text, call,
                 kernel ? " of kernel " : "", kernel ? kernel : "");
        return cv_cuda_raise("%s: the CUDA context is lost (the fault may come from an earlier "
                             "kernel, launches are asynchronous); restart the process", lost);
    }
    return cv_cuda_raise("%s failed%s%s: %s (%s)", call, kernel ? " for kernel " : "",
                         kernel ? kernel : "", name, text);
}

int cv_cuda_check(int r, const char *call, const char *kernel) { return check(r, call, kernel); }

static void load_driver(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(driver_error, sizeof driver_error, "libcuda.so.1 could not be loaded (%s)",
                 dlerror());
        driver_state = -1;
        return;
    }
    libcuda = lib;
    void **slots = (void **)&cu;
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
        slots[i] = dlsym(lib, symbols[i]);
        if (!slots[i]) {
            snprintf(driver_error, sizeof driver_error, "libcuda.so.1 lacks %s: the driver is "
                     "too old", symbols[i]);
            driver_state = -1;
            return;
        }
    }
    void **optional = (void **)&cu.MemPoolCreate;
    for (size_t i = 0; i < sizeof optional_symbols / sizeof optional_symbols[0]; i++)
        optional[i] = dlsym(lib, optional_symbols[i]);
    CUresult r = cu.Init(0);
    if (r != 0) {
        const char *name, *text;
        describe(r, &name, &text);
        snprintf(driver_error, sizeof driver_error, "cuInit failed: %s (%s)", name, text);
        driver_state = -1;
        return;
    }
    driver_state = 1;
}

static int driver(void) {
    if (driver_state == 0) load_driver();
    if (driver_state < 0)
        return cv_cuda_raise("no usable CUDA driver: %s. GPU arrays cannot be used on this "
                             "machine; NumPy arrays still run on the CPU", driver_error);
    if (lost[0])
        return cv_cuda_raise("a previous GPU call failed with %s: the CUDA context is lost; "
                             "restart the process", lost);
    return 0;
}

static int open_device(int device, struct device *d) {
    CUdevice dev;
    int major = 0, minor = 0;
    if (check(cu.DeviceGet(&dev, device), "cuDeviceGet", NULL) < 0 ||
        check(cu.DeviceGetAttribute(&d->sm_count, ATTR_SM_COUNT, dev), "cuDeviceGetAttribute",
              NULL) < 0 ||
        check(cu.DeviceGetAttribute(&major, ATTR_CC_MAJOR, dev), "cuDeviceGetAttribute",
              NULL) < 0 ||
        check(cu.DeviceGetAttribute(&minor, ATTR_CC_MINOR, dev), "cuDeviceGetAttribute",
              NULL) < 0)
        return -1;
    d->cc = major * 10 + minor;
    /* The primary context is the one CuPy and PyTorch use: pointers and
     * streams of theirs are valid in it. Retained for the process lifetime. */
    return check(cu.DevicePrimaryCtxRetain(&d->ctx, dev), "cuDevicePrimaryCtxRetain", NULL);
}

int cv_cuda_enter(int device) {
    if (driver() < 0) return -1;
    if (device < 0 || device >= CV_GPU_MAX_DEVICES)
        return cv_cuda_raise("CUDA device %d is out of range (at most %d devices)", device,
                             CV_GPU_MAX_DEVICES);
    struct device *d = &devices[device];
    if (!d->ctx && open_device(device, d) < 0) return -1;
    CUcontext cur;
    if (check(cu.CtxGetCurrent(&cur), "cuCtxGetCurrent", NULL) < 0) return -1;
    return cur == d->ctx ? 0 : check(cu.CtxSetCurrent(d->ctx), "cuCtxSetCurrent", NULL);
}

void *cv_cuda_symbol(const char *name) {
    return driver_state > 0 ? dlsym(libcuda, name) : NULL;
}

int cv_cuda_save_context(void **out) {
    CUcontext cur = NULL;
    *out = NULL;
    if (driver() < 0 || check(cu.CtxGetCurrent(&cur), "cuCtxGetCurrent", NULL) < 0) return -1;
    *out = cur;
    return 0;
}

void cv_cuda_restore_context(void *ctx) {
    CUcontext cur = NULL;
    /* A failure here is not the call's: its result stands, the context stays. */
    if (cu.CtxGetCurrent(&cur) == 0 && cur != (CUcontext)ctx) cu.CtxSetCurrent((CUcontext)ctx);
}

int cv_cuda_device_of(uintptr_t ptr, int *device) {
    if (driver() < 0) return -1;
    return check(cu.PointerGetAttribute(device, POINTER_DEVICE_ORDINAL, (CUdeviceptr)ptr),
                 "cuPointerGetAttribute(DEVICE_ORDINAL)", NULL);
}

int cv_cuda_current_device(int *device) {
    CUcontext cur;
    CUdevice dev;
    *device = 0;
    if (driver() < 0 || check(cu.CtxGetCurrent(&cur), "cuCtxGetCurrent", NULL) < 0) return -1;
    if (!cur) return 0;
    if (check(cu.CtxGetDevice(&dev), "cuCtxGetDevice", NULL) < 0) return -1;
    *device = dev;
    return 0;
}

int cv_cuda_order(int device, uintptr_t producer, uintptr_t consumer) {
    if (producer == consumer) return 0;
    if (cv_cuda_enter(device) < 0) return -1;
    struct device *d = &devices[device];
    if (!d->order && check(cu.EventCreate(&d->order, EVENT_DISABLE_TIMING), "cuEventCreate",
                           NULL) < 0)
        return -1;
    if (check(cu.EventRecord(d->order, (CUstream)producer), "cuEventRecord", NULL) < 0) return -1;
    return check(cu.StreamWaitEvent((CUstream)consumer, d->order, 0), "cuStreamWaitEvent", NULL);
}

int cv_cuda_sm_count(int device) {
    return cv_cuda_enter(device) < 0 ? -1 : devices[device].sm_count;
}

static void archs_text(const cv_cuda_module *m, char *buf, size_t size) {
    int len = snprintf(buf, size, "SASS for");
    for (int i = 0; i < m->nsass && len < (int)size; i++)
        len += snprintf(buf + len, size - len, "%s sm_%d", i ? "," : "", m->sass[i]);
    if (m->ptx && len < (int)size) snprintf(buf + len, size - len, ", PTX for compute_%d",
                                            m->ptx);
}

/* The image of m the driver loads on a device of compute capability cc: the newest SASS of
 * the same major version not above it, else (-) the PTX it JIT-compiles. */
static int image_for(const cv_cuda_module *m, int cc) {
    int best = 0;
    for (int i = 0; i < m->nsass; i++)
        if (m->sass[i] / 10 == cc / 10 && m->sass[i] <= cc && m->sass[i] > best) best = m->sass[i];
    return best ? best : -m->ptx;
}

/* SASS for cc X.Y runs on X.Z with Z >= Y. Without it the driver would
 * JIT-compile the PTX at load: slow at start and not what was tested, so it
 * is reported (an error in strict mode). */
static int check_arch(const cv_cuda_module *m, int device) {
    int cc = devices[device].cc;
    char archs[256];
    if (!m->image)
        return cv_cuda_raise("this module was built without GPU code (no GPU was found where "
                             "it was built, CUVIL_AOT_CUDA_ARCHS=none, or no nvcc): rebuild it "
                             "for device %d with CUVIL_AOT_CUDA_ARCHS=sm_%d, or pass NumPy "
                             "arrays to run it on the CPU", device, cc);
    if (image_for(m, cc) > 0) return 0;
    archs_text(m, archs, sizeof archs);
    if (!m->ptx || m->ptx > cc)
        return cv_cuda_raise("device %d has compute capability %d.%d but this module holds %s "
                             "only: rebuild it with sm_%d in its CUDA architectures", device,
                             cc / 10, cc % 10, archs, cc);
    if (cv_cuda_config.strict)
        return cv_cuda_raise("device %d (compute capability %d.%d) would need a PTX JIT "
                             "compile (module holds %s), which CUVIL_AOT_MODE=strict forbids: "
                             "rebuild with sm_%d", device, cc / 10, cc % 10, archs, cc);
    return PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                            "cuvil_aot: the driver JIT-compiles PTX for device %d (compute "
                            "capability %d.%d; module holds %s): rebuild with sm_%d", device,
                            cc / 10, cc % 10, archs, cc);
}

static void note_image(cv_cuda_device_info *seen, int image) {
    int i = 0;
    while (i < seen->nimages && seen->image[i] != image) i++;
    if (i == CV_IMAGE_KINDS) return;
    seen->image[i] = image;
    seen->modules[i]++;
    seen->nimages += i == seen->nimages;
}

int cv_cuda_device_seen(int device, cv_cuda_device_info *out) {
    if (device < 0 || device >= CV_GPU_MAX_DEVICES || !devices[device].ctx) return 0;
    *out = devices[device].seen;
    out->cc = devices[device].cc;
    out->sm_count = devices[device].sm_count;
    return 1;
}

static loaded_module *load_module(cv_cuda_module *m, int device) {
    if (check_arch(m, device) < 0) return NULL;
    loaded_module *L = calloc(1, sizeof *L + (size_t)m->nkernels * (sizeof(CUfunction) +
                                                                       sizeof(uint32_t)));
    if (!L) return (loaded_module *)PyErr_NoMemory();
    L->smem = (uint32_t *)&L->fn[m->nkernels];
    if (check(cu.ModuleLoadData(&L->mod, m->image), "cuModuleLoadData", NULL) < 0) {
        free(L);
        return NULL;
    }
    m->loaded[device] = L;
    note_image(&devices[device].seen, image_for(m, devices[device].cc));
    return L;
}

static CUfunction function(cv_cuda_module *m, int device, int kernel) {
    if (cv_cuda_enter(device) < 0) return NULL;
    loaded_module *L = m->loaded[device];
    if (!L && !(L = load_module(m, device))) return NULL;
    CUfunction f = L->fn[kernel];
    if (!f && check(cu.ModuleGetFunction(&f, L->mod, m->names[kernel]), "cuModuleGetFunction",
                    m->names[kernel]) < 0)
        return NULL;
    return L->fn[kernel] = f;
}

/* The kernel, its dynamic shared memory limit raised to `smem` first where that is over
 * the 48 KB every kernel may use (once per kernel, device and size). */
static CUfunction function_smem(cv_cuda_module *m, int device, int kernel, uint32_t smem) {
    CUfunction f = function(m, device, kernel);
    if (!f || smem <= STATIC_SMEM_LIMIT) return f;
    loaded_module *L = m->loaded[device];
    if (L->smem[kernel] >= smem) return f;
    if (!cu.FuncSetAttribute)
        return cv_cuda_raise("kernel %s needs %u bytes of shared memory and the driver lacks "
                             "cuFuncSetAttribute", m->names[kernel], smem), NULL;
    if (check(cu.FuncSetAttribute(f, FUNC_ATTR_MAX_DYNAMIC_SHARED, (int)smem),
              "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", m->names[kernel]) < 0)
        return NULL;
    L->smem[kernel] = smem;
    return f;
}

void *cv_cuda_function(cv_cuda_module *m, int device, int kernel, uint32_t smem) {
    return function_smem(m, device, kernel, smem);
}

int cv_cuda_attention(void) {
    return cv_cuda_config.attention ? 1 | (cv_cuda_config.attention_split ? 2 : 0) |
                                          (cv_cuda_config.attention_grouped ? 4 : 0)
                                    : 0;
}

int cv_cuda_wgmma(const cv_cuda_module *m, int device) {
    if (cv_cuda_enter(device) < 0) {
        PyErr_Clear();
        return 0;
    }
    if (!cv_cuda_config.wgmma || devices[device].cc != 90 || !cu.TensorMapEncodeTiled ||
        !cu.FuncSetAttribute)
        return 0;
    for (int i = 0; i < m->nsass; i++)
        if (m->sass[i] == 90)
            return 1 | (cv_cuda_config.wgmma_copy ? 2 : 0) | (cv_cuda_config.wg_tail ? 4 : 0) |
                   (cv_cuda_config.wg_nmajor ? 8 : 0) | (cv_cuda_config.tc_cluster ? 16 : 0);
    return 0;
}

int cv_cuda_tensor_map(void *map, int dtype, int rank, const void *base, const uint64_t *dims,
                       const uint64_t *strides, const uint32_t *box, int swizzle) {
    const uint32_t ones[5] = {1, 1, 1, 1, 1};
    if (!cu.TensorMapEncodeTiled || rank < 1 || rank > 5) return 1;
    return cu.TensorMapEncodeTiled(map, dtype, (unsigned)rank, (void *)base, dims, strides, box,
                                   ones, TMAP_INTERLEAVE_NONE, swizzle, TMAP_L2_PROMOTION_256B,
                                   TMAP_OOB_FILL_NONE) == 0 ? 0 : 1;
}

int cv_cuda_launch_one(cv_cuda_module *m, int device, int kernel, uint32_t grid, uint32_t block,
                       uintptr_t stream, void *args, int cooperative) {
    enum { NOT_SUPPORTED = 801, COOPERATIVE_LAUNCH_TOO_LARGE = 720 };
    if (!cv_cuda_config.one_kernel) return 1; /* separate launches (to compare) */
    if (!cooperative) return cv_cuda_launch(m, device, kernel, grid, 1, block, 0, stream, args);
    if (!cu.LaunchCooperativeKernel) return 1;
    CUfunction f = function(m, device, kernel);
    if (!f) return -1;
    void *params[1] = {args};
    CUresult r = cu.LaunchCooperativeKernel(f, grid, 1, 1, block, 1, 1, 0, (CUstream)stream,
                                            params);
    if (r == NOT_SUPPORTED || r == COOPERATIVE_LAUNCH_TOO_LARGE) return 1;
    return check(r, "cuLaunchCooperativeKernel", m->names[kernel]);
}

int cv_cuda_launch(cv_cuda_module *m, int device, int kernel, uint32_t grid_x, uint32_t grid_y,
                   uint32_t block, uint32_t smem, uintptr_t stream, void *args) {
    CUfunction f = function_smem(m, device, kernel, smem);
    if (!f) return -1;
    void *params[1] = {args};
    return check(cu.LaunchKernel(f, grid_x, grid_y, 1, block, 1, 1, smem, (CUstream)stream,
                                 params, NULL),
                 "cuLaunchKernel", m->names[kernel]);
}

/* The device's pool for intermediates: our own (not the device's default pool,
 * which other libraries may configure), keeping freed memory for the next call
 * instead of returning it at each synchronize. 0 when pools are unsupported. */
static int scratch_pool(int device, CUmemoryPool *pool) {
    struct device *d = &devices[device];
    if (d->pool_state == 0) {
        int supported = 0;
        CUdevice dev;
        d->pool_state = -1;
        if (cu.MemPoolCreate && cu.MemPoolSetAttribute && cu.MemAllocFromPoolAsync &&
            cu.MemFreeAsync && cu.DeviceGet(&dev, device) == 0 &&
            cu.DeviceGetAttribute(&supported, ATTR_MEMORY_POOLS_SUPPORTED, dev) == 0 &&
            supported) {
            pool_props props = {.alloc_type = MEM_ALLOCATION_TYPE_PINNED,
                                .location_type = MEM_LOCATION_TYPE_DEVICE,
                                .location_id = device};
            unsigned long long keep = ~0ULL;
            if (check(cu.MemPoolCreate(&d->pool, &props), "cuMemPoolCreate", NULL) < 0 ||
                check(cu.MemPoolSetAttribute(d->pool, MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep),
                      "cuMemPoolSetAttribute", NULL) < 0)
                return -1;
            d->pool_state = 1;
        }
    }
    *pool = d->pool;
    return d->pool_state > 0;
}

/* Returns a block to the pool once `stream` reaches this point. Runs on error paths
 * too: keeps the call's exception. A failure here that matters is sticky, and the
 * next GPU call reports it. */
static void free_async(void *p, uintptr_t stream) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (check(cu.MemFreeAsync((CUdeviceptr)(uintptr_t)p, (CUstream)stream), "cuMemFreeAsync",
              NULL) < 0)
        PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

/* The smallest spare block of at least `bytes`, the lowest address among equals, taken
 * off the list: a call that allocates the same sizes in the same order as the last one
 * gets the same blocks back, whatever order they were freed in. Where none is big
 * enough, every spare goes back to the pool, which can then reuse their memory for this
 * block: the spares never hold more than the pool would. */
static void *take_spare(struct device *d, size_t bytes, uintptr_t stream) {
    int best = -1;
    for (int i = 0; i < d->nspare; i++) {
        const struct spare *s = &d->spare[i], *b = best < 0 ? NULL : &d->spare[best];
        const int lower = b && (uintptr_t)s->p < (uintptr_t)b->p;
        if (s->bytes >= bytes && (!b || s->bytes < b->bytes || (s->bytes == b->bytes && lower)))
            best = i;
    }
    if (best < 0) {
        while (d->nspare > 0) free_async(d->spare[--d->nspare].p, stream);
        return NULL;
    }
    void *p = d->spare[best].p;
    d->spare[best] = d->spare[--d->nspare];
    return p;
}

int cv_cuda_scratch(int device, size_t bytes, uintptr_t stream, void **out) {
    CUmemoryPool pool;
    int r;
    if (cv_cuda_enter(device) < 0) return -1;
    if (!cv_cuda_config.pool) return 1; /* CUVIL_AOT_CUDA_POOL=0: framework arrays */
    if ((r = scratch_pool(device, &pool)) < 0) return -1;
    if (!r) return 1;
    if (LEGACY_STREAM(stream) && (*out = take_spare(&devices[device], bytes, stream))) return 0;
    CUdeviceptr p = 0;
    if (check(cu.MemAllocFromPoolAsync(&p, bytes ? bytes : 1, pool, (CUstream)stream),
              "cuMemAllocFromPoolAsync", NULL) < 0)
        return -1;
    *out = (void *)(uintptr_t)p;
    return 0;
}

int cv_cuda_zero(int device, void *p, size_t bytes, uintptr_t stream) {
    if (cv_cuda_enter(device) < 0) return -1;
    return check(cu.MemsetD8Async((CUdeviceptr)(uintptr_t)p, 0, bytes, (CUstream)stream),
                 "cuMemsetD8Async", NULL);
}

int cv_cuda_read(int device, void *dst, const void *src, size_t bytes, uintptr_t stream) {
    if (cv_cuda_enter(device) < 0) return -1;
    if (check(cu.MemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)src, bytes, (CUstream)stream),
              "cuMemcpyDtoHAsync", NULL) < 0)
        return -1;
    return check(cu.StreamSynchronize((CUstream)stream), "cuStreamSynchronize", NULL);
}

void cv_cuda_scratch_free(int device, void *p, size_t bytes, uintptr_t stream) {
    if (!p || lost[0]) return;
    struct device *d = &devices[device];
    if (LEGACY_STREAM(stream) && d->nspare < CV_SPARES)
        d->spare[d->nspare++] = (struct spare){p, bytes};
    else
        free_async(p, stream);
}
