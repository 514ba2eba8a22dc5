/* A call's launches as a CUDA graph, replayed (cv_gpu_api.launch_list).
 *
 * A GPU call plans every launch before it makes any (gpu_launch.py): a list of kernels,
 * grids and argument structs, everything the call allocates already allocated. Where the
 * list is long enough (cv_cuda_config.graph_min launches, CUVIL_AOT_CUDA_GRAPH), one
 * cuGraphLaunch of an executable graph of those kernels replaces the launches: host time
 * per call of about one launch and a little per node, instead of one launch per kernel.
 *
 * The graph is built, not captured: kernel nodes, each after the launches it reads from
 * (cv_gpu_launch.node and .after: gpu_deps.py), so kernels that share only inputs run at
 * once; a list that says nothing is a chain, each after the one before, as the stream
 * would run them. Capture cannot take the legacy default stream (where
 * PyTorch and CuPy launch by default), and would take in any work another thread queued
 * on the stream meanwhile. Nothing of the caller's stream is touched but to launch on it.
 *
 * A call site keeps a few graphs (SLOTS), each for one structure: device, stream, and per
 * launch its kernel, grid, block, shared memory and argument size. The argument bytes
 * (pointers to this call's arrays and intermediates, sizes, strides) change call to call:
 * before a replay, each node whose bytes differ from what its graph holds is updated
 * (cuGraphExecKernelNodeSetParams; it affects later launches only, never one in flight).
 * A structure gets up to TWINS graphs, one per set of arrays seen twice, so a caller
 * that cycles through a few sets replays with no update at all: x = layer(x) ping-ponging
 * between two buffers, or a model's layers called in turn from a Python loop, each with
 * its own weights (a 4-layer BERT stack updated 8 nodes a call with 2 twins). The twin
 * that followed the last call's is tried first (one compare in a steady cycle). Arrays
 * seen once (fresh every call) build no twin: they update the nearest twin that holds
 * such a set, else the nearest one, which a set seen twice takes back first. A
 * structure is built the second time it is seen too: a call of shapes seen once (a
 * decoder's growing sequence) pays no instantiation.
 *
 * Launched one by one instead, as before: a stream being captured (torch.cuda.graph: the
 * launches go into the caller's graph; no capture of ours is nested in it), a driver
 * without graphs, a build the driver refused (that structure is not tried again). Errors
 * that lose the context raise as a launch's would; other graph errors fall back.
 * Under the GIL, as every GPU call.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;

/* CUDA_KERNEL_NODE_PARAMS_v2 (cuda.h); its fields up to `extra` are _v1's. */
typedef struct {
    void *func;
    unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, smem;
    void **params, **extra;
    void *kern, *ctx;
} node_params;

static struct {
    int (*Create)(CUgraph *, unsigned);
    int (*AddKernelNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                         const node_params *);
    int (*Instantiate)(CUgraphExec *, CUgraph, unsigned long long);
    int (*Launch)(CUgraphExec, void *);
    int (*SetParams)(CUgraphExec, CUgraphNode, const node_params *);
    int (*ExecDestroy)(CUgraphExec);
    int (*Destroy)(CUgraph);
    int (*IsCapturing)(void *, int *);
    int (*ExchangeMode)(int *); /* optional (CUDA 10.1+) */
} g;

/* Same order as g; the _v2 names first (CUDA 12+), else the first ABI of the same call. */
static const char *const names[][2] = {
    {"cuGraphCreate", NULL},
    {"cuGraphAddKernelNode_v2", "cuGraphAddKernelNode"},
    {"cuGraphInstantiateWithFlags", NULL},
    {"cuGraphLaunch", NULL},
    {"cuGraphExecKernelNodeSetParams_v2", "cuGraphExecKernelNodeSetParams"},
    {"cuGraphExecDestroy", NULL},
    {"cuGraphDestroy", NULL},
    {"cuStreamIsCapturing", NULL},
    {"cuThreadExchangeStreamCaptureMode", NULL},
};

static int graphs_state; /* 0: not looked up, 1: usable, -1: the driver lacks some */
static unsigned long long stats[CV_GRAPH_NSTATS];

#define SLOTS 40 /* structures (with their twins) a call site keeps */
#define TWINS 32 /* graphs of one structure: a 24-layer model's, each with its weights */
#define SEEN 64  /* argument sets seen once, remembered per call site (their hashes) */

typedef struct { /* a launch without its arguments */
    cv_cuda_module *m;
    void *func;
    int kernel;
    uint32_t grid_x, grid_y, block, smem, size, offset, node;
    uint64_t after;
} step;

typedef struct entry {
    uint64_t used;        /* the site's clock at its last use; 0: a free slot */
    int device, n, broken;
    uintptr_t stream;
    step *steps;          /* n */
    unsigned char *bytes; /* the arguments each node runs with now */
    CUgraph graph;        /* NULL: the structure seen once, nothing built */
    CUgraphExec exec;
    CUgraphNode *nodes;   /* n, in launch order */
    struct entry *next;   /* the entry the call after this one's ran (a guess: checked) */
    int once;             /* its arguments are a set seen once (any such call may take it) */
} entry;

typedef struct {
    entry e[SLOTS];
    uint64_t clock;
    entry *last;          /* the entry the site's last call ran */
    uint64_t seen[SEEN];  /* hashes of argument sets seen once: a ring */
    int nseen;
} site;

void cv_gpu_graph_stats(unsigned long long out[CV_GRAPH_NSTATS]) {
    memcpy(out, stats, sizeof stats);
}

static int usable(void) {
    if (graphs_state == 0) {
        void **slots = (void **)&g;
        graphs_state = 1;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            slots[i] = cv_cuda_symbol(names[i][0]);
            if (!slots[i] && names[i][1]) slots[i] = cv_cuda_symbol(names[i][1]);
            if (!slots[i] && i + 1 < sizeof names / sizeof names[0]) graphs_state = -1;
        }
    }
    return graphs_state > 0;
}

static int plain(const cv_gpu_launch *q, int n, int device, uintptr_t stream) {
    for (int i = 0; i < n; i++)
        if (cv_cuda_launch(q[i].m, device, q[i].kernel, q[i].grid_x, q[i].grid_y, q[i].block,
                           q[i].smem, stream, (void *)q[i].args) < 0)
            return -1;
    return 0;
}

static void clear(entry *e) {
    if (e->exec) g.ExecDestroy(e->exec); /* freed once a launch in flight ends */
    if (e->graph) g.Destroy(e->graph);
    free(e->steps); /* steps, bytes and nodes are one block */
    memset(e, 0, sizeof *e);
}

static int same(const entry *e, const cv_gpu_launch *q, int n, int device, uintptr_t stream) {
    if (!e->used || e->n != n || e->device != device || e->stream != stream) return 0;
    for (int i = 0; i < n; i++) {
        const step *s = &e->steps[i];
        if (s->m != q[i].m || s->kernel != q[i].kernel || s->grid_x != q[i].grid_x ||
            s->grid_y != q[i].grid_y || s->block != q[i].block || s->smem != q[i].smem ||
            s->size != q[i].size || s->node != q[i].node || s->after != q[i].after)
            return 0;
    }
    return 1;
}

/* Nodes whose arguments differ from q's, counted up to `enough`. */
static int differing(const entry *e, const cv_gpu_launch *q, int enough) {
    int d = 0;
    for (int i = 0; i < e->n && d < enough; i++)
        d += memcmp(e->bytes + e->steps[i].offset, q[i].args, q[i].size) != 0;
    return d;
}

/* Whether q's arguments were seen before at this site (their hash remembered, else
 * remembered now): a set of arrays seen twice gets a twin of its own. */
static int seen_before(site *s, const cv_gpu_launch *q, int n) {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < n; i++) {
        const unsigned char *b = q[i].args;
        for (uint32_t j = 0; j < q[i].size; j += 8) { /* 8 bytes at a time, the last padded */
            uint64_t w = 0;
            memcpy(&w, b + j, q[i].size - j < 8 ? q[i].size - j : 8);
            h = (h ^ w) * 0x100000001b3ull;
            h ^= h >> 29;
        }
    }
    for (int i = 0; i < SEEN && i < s->nseen; i++)
        if (s->seen[i] == h) return 1;
    s->seen[s->nseen++ % SEEN] = h;
    return 0;
}

/* The slot a new structure takes: a free one, else the least recently used structure
 * seen once where there are two or more (a shape called once evicts no graph, and two new
 * shapes in turn still get their second sight), else the least recently used. */
static entry *victim(site *s) {
    entry *lru = NULL, *seen = NULL;
    int nseen = 0;
    for (int i = 0; i < SLOTS; i++) {
        entry *e = &s->e[i];
        if (!e->used) return e;
        if (!lru || e->used < lru->used) lru = e;
        if (!e->exec && !e->broken && ++nseen && (!seen || e->used < seen->used)) seen = e;
    }
    return nseen >= 2 ? seen : lru;
}

/* The structure of q into a slot (victim), nothing built. */
static entry *record(site *s, const cv_gpu_launch *q, int n, int device, uintptr_t stream) {
    entry *e = victim(s);
    clear(e);
    size_t bytes = 0;
    for (int i = 0; i < n; i++) bytes += (q[i].size + 15u) & ~(size_t)15;
    char *block = malloc(n * (sizeof(step) + sizeof(CUgraphNode)) + bytes);
    if (!block) return NULL;
    e->steps = (step *)block;
    e->nodes = (CUgraphNode *)(block + n * sizeof(step));
    e->bytes = (unsigned char *)(e->nodes + n);
    for (uint32_t i = 0, offset = 0; i < (uint32_t)n; offset += (q[i].size + 15u) & ~15u, i++)
        e->steps[i] = (step){q[i].m,     NULL,      q[i].kernel, q[i].grid_x, q[i].grid_y,
                             q[i].block, q[i].smem, q[i].size,   offset,      q[i].node,
                             q[i].after};
    e->n = n, e->device = device, e->stream = stream, e->used = s->clock;
    return e;
}

static node_params params_of(const step *s, void **args) {
    return (node_params){s->func, s->grid_x, s->grid_y, 1, s->block, 1, 1, s->smem, args,
                         NULL, NULL, NULL};
}

static int build_graph(entry *e, const cv_gpu_launch *q);

/* A driver result of the graph path: 0 fine, -1 raised (the context is lost), 1 fall back
 * to launches one by one. */
static int outcome(int r, const char *call) {
    if (r == 0) return 0;
    return cv_cuda_sticky(r) ? cv_cuda_check(r, call, NULL) : 1;
}

/* The graph of e's structure with q's arguments: 0, 1 (refused: fall back), -1. In the
 * relaxed capture mode: where another stream of this thread is being captured (the caller
 * passed stream= inside torch.cuda.graph), building is no call its capture forbids. */
static int build(entry *e, const cv_gpu_launch *q) {
    int mode = 2; /* CU_STREAM_CAPTURE_MODE_RELAXED */
    if (g.ExchangeMode && g.ExchangeMode(&mode) != 0) return 1;
    int r = build_graph(e, q);
    if (g.ExchangeMode) g.ExchangeMode(&mode); /* the thread's mode back */
    return r;
}

/* The earlier steps step i waits for, into waits (at most i); their count. Node 0: every
 * step no later one waits for yet (ends[j]: step j is one); else the last step before it of
 * its own node, of each node its `after` names, and of node 0. */
static int waits_of(const step *steps, int i, const unsigned char *ends, int *waits) {
    int n = 0;
    const step *s = &steps[i];
    for (int j = i - 1; j >= 0; j--) {
        const uint32_t v = steps[j].node;
        int wanted = s->node == 0 ? ends[j] : v == s->node || v == 0 ||
                                                  (v <= 64 && (s->after >> (v - 1) & 1));
        for (int k = 0; wanted && s->node && k < n; k++)
            wanted = steps[waits[k]].node != v; /* a later step of that node is waited for */
        if (wanted) waits[n++] = j;
        if (s->node && v == 0) break; /* node 0 waited for everything before it */
    }
    return n;
}

static int build_graph(entry *e, const cv_gpu_launch *q) {
    int r = outcome(g.Create(&e->graph, 0), "cuGraphCreate");
    unsigned char *ends = calloc(e->n + 1, 1);
    int *waits = malloc((e->n + 1) * sizeof *waits);
    CUgraphNode *deps = malloc((e->n + 1) * sizeof *deps);
    if (!ends || !waits || !deps) r = (PyErr_NoMemory(), -1);
    for (int i = 0; r == 0 && i < e->n; i++) {
        step *s = &e->steps[i];
        if (!(s->func = cv_cuda_function(s->m, e->device, s->kernel, s->smem))) {
            r = -1;
            break;
        }
        const int nw = waits_of(e->steps, i, ends, waits);
        for (int k = 0; k < nw; k++) deps[k] = e->nodes[waits[k]], ends[waits[k]] = 0;
        ends[i] = 1;
        void *args[1] = {(void *)q[i].args};
        node_params p = params_of(s, args);
        r = outcome(g.AddKernelNode(&e->nodes[i], e->graph, nw ? deps : NULL, (size_t)nw, &p),
                    "cuGraphAddKernelNode");
        memcpy(e->bytes + s->offset, q[i].args, q[i].size);
    }
    free(ends), free(waits), free(deps);
    if (r == 0) r = outcome(g.Instantiate(&e->exec, e->graph, 0), "cuGraphInstantiate");
    if (r == 0) stats[CV_GRAPH_BUILDS]++;
    return r;
}

/* e's nodes given q's arguments where they differ: 0, 1 (fall back), -1. */
static int update(entry *e, const cv_gpu_launch *q) {
    for (int i = 0; i < e->n; i++) {
        step *s = &e->steps[i];
        if (memcmp(e->bytes + s->offset, q[i].args, q[i].size) == 0) continue;
        void *args[1] = {(void *)q[i].args};
        node_params p = params_of(s, args);
        int r = outcome(g.SetParams(e->exec, e->nodes[i], &p), "cuGraphExecKernelNodeSetParams");
        if (r) return r;
        memcpy(e->bytes + s->offset, q[i].args, q[i].size);
        stats[CV_GRAPH_UPDATES]++;
    }
    return 0;
}

/* The slot q runs from: the one that followed the last call's where it holds q's
 * arguments, else one of q's structure that does, else a second sight built; else, for
 * arguments seen before, the nearest twin holding a set seen once, else a twin built, else
 * the nearest twin; for arguments seen once, the nearest twin holding such a set, else the
 * nearest twin. NULL (first sight, recorded) to launch one by one. */
static entry *choose(site *s, const cv_gpu_launch *q, int n, int device, uintptr_t stream,
                     int *fresh) {
    entry *seen = NULL, *best = NULL, *best_once = NULL;
    entry *guess = s->last ? s->last->next : NULL;
    int twins = 0, fewest = n + 1, fewest_once = n + 1;
    *fresh = 0;
    if (guess && guess->exec && !guess->broken && same(guess, q, n, device, stream) &&
        differing(guess, q, 1) == 0)
        return guess;
    for (int i = 0; i < SLOTS; i++) {
        entry *e = &s->e[i];
        if (!same(e, q, n, device, stream)) continue;
        if (e->broken) return NULL;
        if (!e->exec) {
            seen = e;
            continue;
        }
        twins++;
        int d = differing(e, q, n + 1);
        if (d == 0) return e;
        if (d < fewest || (d == fewest && e->used < best->used)) best = e, fewest = d;
        if (e->once && (d < fewest_once || (d == fewest_once && e->used < best_once->used)))
            best_once = e, fewest_once = d;
    }
    if (seen) { /* the structure's second sight */
        *fresh = 1;
        return seen;
    }
    if (twins == 0) { /* first sight */
        (void)record(s, q, n, device, stream);
        return NULL;
    }
    const int again = seen_before(s, q, n);
    entry *e = best_once ? best_once : best;
    if (again && !best_once && twins < TWINS && (e = record(s, q, n, device, stream)))
        *fresh = 1;
    if (e) e->once = !again;
    return e ? e : best;
}

int cv_gpu_launch_list(const cv_gpu_launch *q, int n, int device, uintptr_t stream,
                       void **graphs) {
    int status = 0;
    if (n < 1 || cv_cuda_config.graph_min < 1 || n < cv_cuda_config.graph_min || !graphs ||
        cv_cuda_enter(device) < 0 || !usable()) {
        if (!PyErr_Occurred()) stats[CV_GRAPH_PLAIN]++;
        return PyErr_Occurred() ? -1 : plain(q, n, device, stream);
    }
    /* A stream in capture (or the legacy stream while another one captures: an error) gets
     * the launches themselves, into the caller's capture. */
    if (g.IsCapturing((void *)stream, &status) != 0 || status != 0) {
        stats[CV_GRAPH_CAPTURING]++;
        return plain(q, n, device, stream);
    }
    site *s = *graphs;
    if (!s && !(s = *graphs = calloc(1, sizeof *s))) return PyErr_NoMemory(), -1;
    s->clock++;
    int fresh, r;
    entry *e = choose(s, q, n, device, stream, &fresh);
    if (!e) {
        stats[CV_GRAPH_PLAIN]++;
        return plain(q, n, device, stream);
    }
    e->used = s->clock;
    if (s->last) s->last->next = e;
    s->last = e;
    r = fresh ? build(e, q) : update(e, q);
    if (r == 0) r = outcome(g.Launch(e->exec, (void *)stream), "cuGraphLaunch");
    if (r < 0) { /* raised: a kernel's module could not load, or the context is lost */
        clear(e);
        return -1;
    }
    if (r > 0) { /* refused: this structure launches one by one from now on */
        clear(e);
        (void)record(s, q, n, device, stream);
        for (int i = 0; i < SLOTS; i++)
            if (same(&s->e[i], q, n, device, stream)) s->e[i].broken = 1;
        stats[CV_GRAPH_PLAIN]++;
        return plain(q, n, device, stream);
    }
    stats[CV_GRAPH_REPLAYS]++;
    return 0;
}
