/* The int8-weight GEMM (runtime.h's gemm_q8): a float32 operand times int8 weights with
 * float32 scales, per output channel or per group of k, into the float32 epilogue.
 *
 * The dot path (a few vectors against many weight rows, both contiguous along k: the
 * decode step's x @ W.T, or W @ x): tasks take tiles of CV_Q8_TILE weight rows, each
 * row read once for every vector, converted in registers (gemm_q8.h): 1 byte a weight
 * where the float32 GEMM reads 4. Elsewhere (prefill, strided operands) blocks of weight
 * rows are dequantized, each into the workspace in turn, and multiplied by the float32
 * GEMM with the block's rows or columns offset in the epilogue: no float32 copy of the
 * whole weight exists at any time.
 *
 * Rounding: the dot path sums q * x per group in float32 and scales the sum; the unfused
 * expression rounds q * s to float32 first. Both are within float32 accumulation error of
 * the exact product (README, "Precision").
 */
#include <stdint.h>
#include <string.h>

#include "gemm_q8.h"
#include "gemm_ws.h"
#include "internal.h"

#define CV_Q8_TILE 256        /* weight rows per dot task: a tile of sums per vector */
#define CV_Q8_DOT_MAX 8 /* vectors the dot path takes */
#define CV_Q8_GRAIN_BYTES (64 << 10) /* weights per task at least: a wake-up's worth */
#define CV_Q8_BLOCK_BYTES ((size_t)4 << 20) /* a dequantized block of the other path */

/* The plain kernel: the same sums, in the same grouping. */
static void dots_plain(int64_t k, int64_t group, const int8_t *q, int64_t q_os, int rows,
                       const float *s, int64_t s_os, int64_t s_gs, const float *const *x,
                       int nv, float *out, int64_t ld) {
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < nv; v++) {
            float tot = 0.0f;
            for (int64_t p0 = 0, g = 0; p0 < k; p0 += group, g++) {
                int64_t end = k - p0 < group ? k : p0 + group;
                float acc = 0.0f;
                for (int64_t p = p0; p < end; p++)
                    acc += (float)q[r * q_os + p] * x[v][p];
                tot += acc * s[r * s_os + g * s_gs];
            }
            out[r * ld + v] = tot;
        }
}

typedef struct {
    const cv_gemm_q8 *g;
    cv_q8_dots dots;
    int64_t outs, nvec;  /* weight rows, vectors */
    int64_t tile, tiles; /* weight rows per task, tasks per batch */
} dot_job;

static void dot_range(void *ctx, int64_t begin, int64_t end) {
    const dot_job *jb = ctx;
    const cv_gemm_q8 *g = jb->g;
    float acc[CV_Q8_DOT_MAX * CV_Q8_TILE]; /* the tile as C holds it */
    /* rows per dots call: four share each load of one or two vectors, two of three or four,
     * one of up to eight; every vector in one call, so each weight is converted once */
    int step = jb->nvec <= 2 ? CV_Q8_ROWS : jb->nvec <= 4 ? 2 : 1;
    int per_call = (int)jb->nvec; /* vectors per dots call: all (at most CV_Q8_DOT_MAX) */
    for (int64_t x = begin; x < end; x++) {
        int64_t bt = x / jb->tiles, o0 = x % jb->tiles * jb->tile;
        int64_t o1 = jb->outs - o0 < jb->tile ? jb->outs : o0 + jb->tile;
        const float *vec[CV_Q8_DOT_MAX];
        for (int64_t v = 0; v < jb->nvec; v++) /* qa: B's columns, else A's rows */
            vec[v] = g->x + bt * g->x_bs + v * (g->qa ? g->x_cs : g->x_rs);
        /* qa: C's rows are weight rows (acc[(o - o0) * nvec + v]), else its columns */
        int64_t row_ld = g->qa ? jb->nvec : 1, vec_ld = g->qa ? 1 : jb->tile;
        for (int64_t o = o0; o < o1; o += step) {
            int rows = o1 - o < step ? (int)(o1 - o) : step;
            const int8_t *q = g->q + bt * g->q_bs + o * g->q_os;
            const float *s = g->s + bt * g->s_bs + o * g->s_os;
            float sums[CV_Q8_ROWS * CV_Q8_DOT_MAX];
            for (int64_t v = 0; v < jb->nvec; v += per_call) {
                int nv = (int)(jb->nvec - v < per_call ? jb->nvec - v : per_call);
                jb->dots(g->k, g->group, q, g->q_os, rows, s, g->s_os, g->s_gs, vec + v, nv,
                         sums + v, CV_Q8_DOT_MAX);
            }
            for (int r = 0; r < rows; r++)
                for (int64_t v = 0; v < jb->nvec; v++)
                    acc[(o - o0 + r) * row_ld + v * vec_ld] = sums[r * CV_Q8_DOT_MAX + v];
        }
        if (g->qa)
            g->epilogue(g->ctx, bt, o0, o1, 0, jb->nvec, acc, jb->nvec);
        else
            g->epilogue(g->ctx, bt, 0, jb->nvec, o0, o1, acc, jb->tile);
    }
}

/* Whether the dot path applies: few vectors, weights and vectors contiguous along k. */
static int dot_fits(const cv_gemm_q8 *g) {
    int64_t nvec = g->qa ? g->n : g->m;
    int64_t x_step = g->qa ? g->x_rs : g->x_cs;
    return nvec <= CV_Q8_DOT_MAX && (g->k <= 1 || (g->q_ps == 1 && x_step == 1));
}

/* Tiles of at most CV_Q8_TILE rows, as many as the threads have equal shares of (768
 * rows in 3 tiles left one of 2 threads with two: no faster than one thread), and tasks
 * of at least CV_Q8_GRAIN_BYTES of weights. */
static void run_dots(const cv_gemm_q8 *g) {
    dot_job jb = {.g = g, .outs = g->qa ? g->m : g->n, .nvec = g->qa ? g->n : g->m};
    jb.dots = cv_cpu_level() >= CV_CPU_V4 ? cv_q8_dots_avx512 : dots_plain;
    int64_t nthreads = cv_num_threads(), row_bytes = g->k > 0 ? g->k : 1;
    int64_t tiles = (jb.outs + CV_Q8_TILE - 1) / CV_Q8_TILE;
    int64_t useful = jb.outs * row_bytes / CV_Q8_GRAIN_BYTES; /* tasks worth a wake-up */
    if (nthreads > 1 && useful >= nthreads)
        tiles = (tiles + nthreads - 1) / nthreads * nthreads;
    jb.tile = (jb.outs + tiles - 1) / tiles;
    jb.tiles = (jb.outs + jb.tile - 1) / jb.tile;
    int64_t grain = CV_Q8_GRAIN_BYTES / (jb.tile * row_bytes);
    cv_parallel_for(g->nbatch * jb.tiles, grain < 1 ? 1 : grain, dot_range, &jb);
}

/* ---- blocks of dequantized weights through the float32 GEMM ------------------------- */

typedef struct {
    const cv_gemm_q8 *g;
    int64_t bt, o0; /* the batch and first weight row of the block */
    float *w;       /* the block: w[(o - o0) * k + p] */
} block;

static void dequant_range(void *ctx, int64_t begin, int64_t end) {
    const block *bl = ctx;
    const cv_gemm_q8 *g = bl->g;
    int64_t group = g->group;
    for (int64_t r = begin; r < end; r++) {
        int64_t o = bl->o0 + r;
        const int8_t *q = g->q + bl->bt * g->q_bs + o * g->q_os;
        const float *s = g->s + bl->bt * g->s_bs + o * g->s_os;
        float *w = bl->w + r * g->k;
        for (int64_t p0 = 0, j = 0; p0 < g->k; p0 += group, j++) { /* a scale per group */
            int64_t end = g->k - p0 < group ? g->k : p0 + group;
            float scale = s[j * g->s_gs];
            if (g->q_ps == 1) /* vectorizes */
                for (int64_t p = p0; p < end; p++)
                    w[p] = (float)q[p] * scale;
            else
                for (int64_t p = p0; p < end; p++)
                    w[p] = (float)q[p * g->q_ps] * scale;
        }
    }
}

static void block_epilogue(void *ctx, int64_t batch, int64_t i0, int64_t i1, int64_t j0,
                           int64_t j1, const float *acc, int64_t ld) {
    const block *bl = ctx;
    const cv_gemm_q8 *g = bl->g;
    int64_t di = g->qa ? bl->o0 : 0, dj = g->qa ? 0 : bl->o0;
    (void)batch;
    g->epilogue(g->ctx, bl->bt, i0 + di, i1 + di, j0 + dj, j1 + dj, acc, ld);
}

static int run_blocks(const cv_gemm_q8 *g) {
    int64_t outs = g->qa ? g->m : g->n, k = g->k;
    int64_t rows = (int64_t)(CV_Q8_BLOCK_BYTES / sizeof(float)) / (k > 0 ? k : 1);
    rows = rows < 1 ? 1 : rows > outs ? outs : rows;
    float *w = cv_ws_get((size_t)(rows * (k > 0 ? k : 1)) * sizeof(float));
    if (!w)
        return -1;
    int rc = 0;
    for (int64_t bt = 0; bt < g->nbatch && rc == 0; bt++)
        for (int64_t o0 = 0; o0 < outs && rc == 0; o0 += rows) {
            int64_t count = outs - o0 < rows ? outs - o0 : rows;
            block bl = {g, bt, o0, w};
            int64_t grain = (int64_t)(CV_Q8_GRAIN_BYTES / (k > 0 ? k : 1)) + 1;
            cv_parallel_for(count, grain, dequant_range, &bl);
            cv_gemm_term_f32 t = {.k = k};
            const float *x = g->x + bt * g->x_bs;
            if (g->qa) { /* A: the block's rows; B: the float32 operand */
                t.a = w, t.a_rs = k, t.a_cs = 1;
                t.b = x, t.b_rs = g->x_rs, t.b_cs = g->x_cs;
            } else { /* B: the block's columns, read along k */
                t.a = x, t.a_rs = g->x_rs, t.a_cs = g->x_cs;
                t.b = w, t.b_rs = 1, t.b_cs = k;
            }
            cv_gemm_f32 f = {1, g->qa ? count : g->m, g->qa ? g->n : count, 1, &t,
                             block_epilogue, &bl};
            rc = cv_run_gemm_f32(&f);
        }
    cv_ws_put(w);
    return rc;
}

int cv_run_gemm_q8(const cv_gemm_q8 *given) {
    if (given->nbatch <= 0 || given->m <= 0 || given->n <= 0)
        return 0;
    cv_gemm_q8 g = *given;
    g.k = g.k > 0 ? g.k : 0;
    g.group = g.group > 0 ? g.group : g.k > 0 ? g.k : 1; /* no group: one per row */
    if (dot_fits(&g)) {
        run_dots(&g);
        return 0;
    }
    return run_blocks(&g);
}
