/* A fake libcuda.so.1 for tests/test_gpu_graph_logic.py and test_gpu_devices_logic.py:
 * just enough of the driver API for the runtime's launches, CUDA graphs
 * (native/src/gpu_graph.c) and several devices, on a machine with no GPU. Every kernel
 * that runs, launched or as a graph's node, is logged with its grid, stream, the 32 bytes of its
 * argument struct, the device whose module it came from and the device whose context was
 * current; the tests compare the log with the launches asked for.
 *
 * Devices: context 0x100 + d is device d's primary context, current per thread as in the
 * driver; device d's memory lies at (d + 1) << 40 (cuPointerGetAttribute's ordinal).
 * Modules, functions, pools and events remember the device they were made on; any use
 * of them, or of a device pointer, while another device's context is current counts in
 * fake_wrong_context (where the driver would fail or fault). fake_pools = 1 lets the
 * devices offer memory pools (the runtime's scratch). */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int kernel, via_graph;
    unsigned grid_x, grid_y, block;
    unsigned long long stream;
    unsigned char args[32];
    int device, context_device; /* the function's module's, the current context's */
    unsigned smem;              /* dynamic shared memory asked for */
} record;

typedef struct {
    void *func;
    unsigned gx, gy, gz, bx, by, bz, smem;
    void **params, **extra;
    void *kern, *ctx;
} node_params;

typedef struct {
    int func; /* its function handle - 0x1000 */
    unsigned gx, gy, bx, smem;
    unsigned char args[32];
    int ndeps, deps[64]; /* the nodes it waits for, by index */
} node;

typedef struct graph {
    int n;
    node nodes[64];
} graph;

typedef struct {
    const graph *g;
    int n;
    node nodes[64];
} exec_t;

static record log_[4096];
static int nlog;
static __thread void *current;
int fake_capturing, fake_fail_instantiate, fake_instantiates, fake_set_params, fake_execs;
int fake_mode, fake_relaxed_builds; /* the thread's capture mode; graphs built relaxed */
int fake_pools, fake_wrong_context, fake_loads[4], fake_pool_allocs[4];

/* The device whose context is current (-1: none); the device of a handle or pointer. */
static int current_device(void) {
    uintptr_t c = (uintptr_t)current;
    return c >= 0x100 && c < 0x104 ? (int)(c - 0x100) : -1;
}
static int memory_device(unsigned long long p) { return p >> 40 ? (int)(p >> 40) - 1 : -1; }
static void expect_device(int device) {
    if (device != current_device()) __atomic_fetch_add(&fake_wrong_context, 1, __ATOMIC_RELAXED);
}

int fake_take(record *out, int max) {
    int n = nlog < max ? nlog : max;
    memcpy(out, log_, n * sizeof *out);
    nlog = 0;
    return n;
}

/* A function handle: 0x1000 + kernel + (device << 16). */
static int kernel_of(void *f) { return (int)(((uintptr_t)f - 0x1000) & 0xffff); }
static int device_of(void *f) { return (int)(((uintptr_t)f - 0x1000) >> 16); }

static void note(void *f, int via_graph, unsigned gx, unsigned gy, unsigned bx, unsigned smem,
                 unsigned long long stream, const void *args) {
    expect_device(device_of(f));
    int i = __atomic_fetch_add(&nlog, 1, __ATOMIC_RELAXED); /* threads may launch at once */
    if (i >= 4096) {
        nlog = 4096;
        return;
    }
    record *r = &log_[i];
    r->kernel = kernel_of(f), r->via_graph = via_graph, r->grid_x = gx, r->grid_y = gy;
    r->block = bx, r->stream = stream;
    memcpy(r->args, args, 32);
    r->device = device_of(f), r->context_device = current_device(), r->smem = smem;
}

/* "k<n>" (the graph test's launches) is kernel n; other names get 100, 101, ... */
static char seen[64][128];
static int nseen;
static int kernel_id(const char *name) {
    if (name[0] == 'k' && isdigit((unsigned char)name[1])) return atoi(name + 1);
    for (int i = 0; i < nseen; i++)
        if (!strcmp(seen[i], name)) return 100 + i;
    if (nseen == 64) return 99;
    strncpy(seen[nseen], name, sizeof seen[0] - 1);
    return 100 + nseen++;
}

/* The name of kernel `id` (100 and on), "" for others. */
const char *fake_kernel_name(int id) { return id >= 100 && id < 100 + nseen ? seen[id - 100] : ""; }

int cuGetErrorName(int r, const char **s) { (void)r; *s = "FAKE_ERROR"; return 0; }
int cuGetErrorString(int r, const char **s) { (void)r; *s = "fake error"; return 0; }
int cuInit(unsigned f) { (void)f; return 0; }
int cuDeviceGet(int *d, int o) { *d = o; return 0; }
int cuDeviceGetAttribute(int *v, int attr, int dev) {
    (void)dev; /* SMs, cc 9.0, memory pools where fake_pools says */
    *v = attr == 16 ? 132 : attr == 75 ? 9 : attr == 115 ? fake_pools : 0;
    return 0;
}
int cuDevicePrimaryCtxRetain(void **c, int dev) { *c = (void *)(uintptr_t)(0x100 + dev); return 0; }
int cuCtxGetCurrent(void **c) { *c = current; return 0; }
int cuCtxSetCurrent(void *c) { current = c; return 0; }
int cuCtxGetDevice(int *d) {
    *d = current_device();
    return *d < 0; /* CUDA_ERROR_INVALID_VALUE without a context */
}
/* A module: 0x200 + its device. */
int cuModuleLoadData(void **m, const void *image) {
    (void)image;
    int d = current_device();
    if (d < 0) return 1;
    fake_loads[d]++;
    *m = (void *)(uintptr_t)(0x200 + d);
    return 0;
}
int cuModuleGetFunction(void **f, void *m, const char *name) {
    int d = (int)((uintptr_t)m - 0x200);
    expect_device(d);
    *f = (void *)(uintptr_t)(0x1000 + kernel_id(name) + (d << 16));
    return 0;
}
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned smem, void *stream, void **params, void **extra) {
    (void)gz, (void)by, (void)bz, (void)extra;
    note(f, 0, gx, gy, bx, smem, (uintptr_t)stream, params[0]);
    return 0;
}
int cuLaunchCooperativeKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                              unsigned by, unsigned bz, unsigned smem, void *stream,
                              void **params) {
    return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, stream, params, NULL);
}
/* Hopper's tensor maps (the wgmma loop's operands): any, as zeros; the shared memory limit
 * raised. */
int cuTensorMapEncodeTiled(void *map, int type, unsigned rank, void *base, const void *dims,
                           const void *strides, const void *box, const void *estr, int il,
                           int sw, int l2, int oob) {
    (void)type, (void)rank, (void)base, (void)dims, (void)strides, (void)box, (void)estr;
    (void)il, (void)sw, (void)l2, (void)oob;
    memset(map, 0, 128);
    return 0;
}
int cuFuncSetAttribute(void *f, int attr, int value) {
    (void)attr, (void)value;
    expect_device(device_of(f));
    return 0;
}
int cuPointerGetAttribute(void *v, int a, unsigned long long p) {
    if (a == 9) *(int *)v = memory_device(p) < 0 ? 0 : memory_device(p); /* DEVICE_ORDINAL */
    return 0;
}
/* An event: 0x300 + its device. */
int cuEventCreate(void **e, unsigned f) {
    (void)f;
    *e = (void *)(uintptr_t)(0x300 + current_device());
    return 0;
}
int cuEventRecord(void *e, void *s) {
    (void)s;
    expect_device((int)((uintptr_t)e - 0x300));
    return 0;
}
int cuStreamWaitEvent(void *s, void *e, unsigned f) {
    (void)s, (void)f;
    expect_device((int)((uintptr_t)e - 0x300));
    return 0;
}
int cuMemsetD8Async(unsigned long long p, unsigned char v, size_t n, void *s) {
    (void)v, (void)n, (void)s;
    expect_device(memory_device(p));
    return 0;
}
int cuMemcpyDtoHAsync_v2(void *d, unsigned long long s, size_t n, void *st) {
    (void)d, (void)n, (void)st;
    expect_device(memory_device(s));
    return 0;
}

/* Pools: CUmemPoolProps' location_id names the device; blocks come from its memory. */
typedef struct {
    int alloc_type, handle_types, location_type, location_id;
} pool_props_head;
typedef struct {
    int device;
    unsigned long long next;
} pool;
int cuMemPoolCreate(pool **p, const pool_props_head *props) {
    expect_device(props->location_id);
    *p = calloc(1, sizeof **p);
    (*p)->device = props->location_id;
    (*p)->next = ((unsigned long long)props->location_id + 1) << 40 | 1ULL << 36;
    return 0;
}
int cuMemPoolSetAttribute(pool *p, int attr, void *v) { (void)p, (void)attr, (void)v; return 0; }
int cuMemAllocFromPoolAsync(unsigned long long *out, size_t n, pool *p, void *s) {
    (void)s;
    expect_device(p->device);
    fake_pool_allocs[p->device]++;
    *out = p->next;
    p->next += (n + 255) / 256 * 256;
    return 0;
}
int cuMemFreeAsync(unsigned long long ptr, void *s) {
    (void)s;
    expect_device(memory_device(ptr));
    return 0;
}
int cuStreamSynchronize(void *s) { (void)s; return 0; }

/* The nodes node i of the graph built last waits for, sorted into out; their count. */
static const graph *last_graph;
int fake_deps(int i, int *out) {
    if (!last_graph || i < 0 || i >= last_graph->n) return -1;
    const node *nd = &last_graph->nodes[i];
    for (int k = 0; k < nd->ndeps; k++) out[k] = nd->deps[k];
    for (int a = 0; a < nd->ndeps; a++) /* insertion sort: a handful */
        for (int b = a; b > 0 && out[b - 1] > out[b]; b--) {
            int t = out[b];
            out[b] = out[b - 1], out[b - 1] = t;
        }
    return nd->ndeps;
}

int cuGraphCreate(graph **g, unsigned flags) {
    (void)flags;
    *g = calloc(1, sizeof **g);
    return 0;
}
int cuGraphAddKernelNode_v2(node **out, graph *g, node *const *deps, size_t ndeps,
                            const node_params *p) {
    if (g->n == 64 || ndeps > (size_t)g->n) return 1;
    node *nd = &g->nodes[g->n];
    nd->ndeps = (int)ndeps;
    for (size_t i = 0; i < ndeps; i++) {
        nd->deps[i] = (int)(deps[i] - g->nodes);
        if (nd->deps[i] < 0 || nd->deps[i] >= g->n) return 1; /* an earlier node of g */
    }
    last_graph = g, g->n++;
    nd->func = (int)((uintptr_t)p->func - 0x1000), nd->gx = p->gx, nd->gy = p->gy;
    nd->bx = p->bx, nd->smem = p->smem;
    memcpy(nd->args, p->params[0], 32);
    *out = nd;
    return 0;
}
int cuGraphInstantiateWithFlags(exec_t **e, const graph *g, unsigned long long flags) {
    (void)flags;
    fake_instantiates++;
    fake_relaxed_builds += fake_mode == 2;
    if (fake_fail_instantiate) return 1; /* CUDA_ERROR_INVALID_VALUE: not sticky */
    *e = calloc(1, sizeof **e);
    (*e)->g = g, (*e)->n = g->n;
    memcpy((*e)->nodes, g->nodes, sizeof g->nodes);
    fake_execs++;
    return 0;
}
int cuGraphLaunch(const exec_t *e, void *stream) {
    for (int i = 0; i < e->n; i++) {
        const node *nd = &e->nodes[i];
        note((void *)(uintptr_t)(0x1000 + nd->func), 1, nd->gx, nd->gy, nd->bx, nd->smem,
             (uintptr_t)stream, nd->args);
    }
    return 0;
}
int cuGraphExecKernelNodeSetParams_v2(exec_t *e, const node *nd, const node_params *p) {
    int i = (int)(nd - e->g->nodes);
    if (i < 0 || i >= e->n || (int)((uintptr_t)p->func - 0x1000) != e->nodes[i].func)
        return 1;
    e->nodes[i].gx = p->gx, e->nodes[i].gy = p->gy, e->nodes[i].bx = p->bx;
    e->nodes[i].smem = p->smem;
    memcpy(e->nodes[i].args, p->params[0], 32);
    fake_set_params++;
    return 0;
}
int cuGraphExecDestroy(exec_t *e) { free(e); fake_execs--; return 0; }
int cuGraphDestroy(graph *g) {
    if (g == last_graph) last_graph = NULL;
    free(g);
    return 0;
}
int cuStreamIsCapturing(void *stream, int *status) {
    (void)stream;
    *status = fake_capturing;
    return 0;
}
int cuThreadExchangeStreamCaptureMode(int *mode) {
    int old = fake_mode;
    fake_mode = *mode;
    *mode = old;
    return 0;
}
