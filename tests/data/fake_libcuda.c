/* A fake libcuda.so.1 for tests/test_gpu_graph_logic.py: just enough of the driver API for
 * the runtime's launches and CUDA graphs (native/src/gpu_graph.c), no device. Every kernel
 * that runs, launched or as a graph's node, is logged with its grid, stream and the 32
 * bytes of its argument struct; the test compares the log with the launches asked for. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int kernel, via_graph;
    unsigned grid_x, grid_y, block;
    unsigned long long stream;
    unsigned char args[32];
} record;

typedef struct {
    void *func;
    unsigned gx, gy, gz, bx, by, bz, smem;
    void **params, **extra;
    void *kern, *ctx;
} node_params;

typedef struct {
    int kernel;
    unsigned gx, gy, bx;
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
static void *current;
int fake_capturing, fake_fail_instantiate, fake_instantiates, fake_set_params, fake_execs;
int fake_mode, fake_relaxed_builds; /* the thread's capture mode; graphs built relaxed */

int fake_take(record *out, int max) {
    int n = nlog < max ? nlog : max;
    memcpy(out, log_, n * sizeof *out);
    nlog = 0;
    return n;
}

static void note(int kernel, int via_graph, unsigned gx, unsigned gy, unsigned bx,
                 unsigned long long stream, const void *args) {
    if (nlog == 4096) return;
    record *r = &log_[nlog++];
    r->kernel = kernel, r->via_graph = via_graph, r->grid_x = gx, r->grid_y = gy;
    r->block = bx, r->stream = stream;
    memcpy(r->args, args, 32);
}

static int kernel_of(void *f) { return (int)((uintptr_t)f - 0x1000); }

int cuGetErrorName(int r, const char **s) { (void)r; *s = "FAKE_ERROR"; return 0; }
int cuGetErrorString(int r, const char **s) { (void)r; *s = "fake error"; return 0; }
int cuInit(unsigned f) { (void)f; return 0; }
int cuDeviceGet(int *d, int o) { *d = o; return 0; }
int cuDeviceGetAttribute(int *v, int attr, int dev) {
    (void)dev;
    *v = attr == 16 ? 132 : attr == 75 ? 9 : 0; /* SMs, cc 9.0, no memory pools */
    return 0;
}
int cuDevicePrimaryCtxRetain(void **c, int dev) { *c = (void *)(uintptr_t)(0x100 + dev); return 0; }
int cuCtxGetCurrent(void **c) { *c = current; return 0; }
int cuCtxSetCurrent(void *c) { current = c; return 0; }
int cuCtxGetDevice(int *d) { *d = 0; return 0; }
int cuModuleLoadData(void **m, const void *image) { (void)image; *m = (void *)0x200; return 0; }
int cuModuleGetFunction(void **f, void *m, const char *name) {
    (void)m;
    *f = (void *)(uintptr_t)(0x1000 + atoi(name + 1));
    return 0;
}
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned smem, void *stream, void **params, void **extra) {
    (void)gz, (void)by, (void)bz, (void)smem, (void)extra;
    note(kernel_of(f), 0, gx, gy, bx, (uintptr_t)stream, params[0]);
    return 0;
}
int cuPointerGetAttribute(void *v, int a, unsigned long long p) { (void)v, (void)a, (void)p; return 0; }
int cuEventCreate(void **e, unsigned f) { (void)f; *e = (void *)0x300; return 0; }
int cuEventRecord(void *e, void *s) { (void)e, (void)s; return 0; }
int cuStreamWaitEvent(void *s, void *e, unsigned f) { (void)s, (void)e, (void)f; return 0; }
int cuMemsetD8Async(unsigned long long p, unsigned char v, size_t n, void *s) {
    (void)p, (void)v, (void)n, (void)s;
    return 0;
}
int cuMemcpyDtoHAsync_v2(void *d, unsigned long long s, size_t n, void *st) {
    (void)d, (void)s, (void)n, (void)st;
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
    nd->kernel = kernel_of(p->func), nd->gx = p->gx, nd->gy = p->gy, nd->bx = p->bx;
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
        note(nd->kernel, 1, nd->gx, nd->gy, nd->bx, (uintptr_t)stream, nd->args);
    }
    return 0;
}
int cuGraphExecKernelNodeSetParams_v2(exec_t *e, const node *nd, const node_params *p) {
    int i = (int)(nd - e->g->nodes);
    if (i < 0 || i >= e->n || kernel_of(p->func) != e->nodes[i].kernel) return 1;
    e->nodes[i].gx = p->gx, e->nodes[i].gy = p->gy, e->nodes[i].bx = p->bx;
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
