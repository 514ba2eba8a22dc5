/* GEMM of bfloat16 operands with a float32 epilogue (runtime.h's gemm_bf16).
 *
 * Two parallel phases. First every A panel (the kernel's mr rows) and every B panel
 * (CV_BF16_NR columns) is packed, all terms one after the other, into pair panels
 * (gemm_bf16.h): each element once. Then one task per (batch, block of CV_BF16_MC rows,
 * block of CV_BF16_NC columns) runs the micro-kernel over its panels a k block
 * (CV_BF16_KC) at a time, B micro-panels in the outer loop so each stays in L1 while
 * A's block comes from L2, and hands its float32 tile to the epilogue. Packing per tile
 * instead (A once per column block, B once per row block) ran at 260 GFLOP/s on one Zen 5
 * core where this runs at ~415 (1024^3 and 2048^3; the float32 GEMM ~230).
 *
 * The kernel is picked per call, the first usable of AMX-BF16 and AVX-512 BF16 where the
 * usable level is 4 (a lowered level takes effect at once), else the plain loop below
 * (the same sums in another order, as exact per product); the panels take the picked
 * kernel's geometry.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "gemm_bf16.h"
#include "gemm_ws.h"
#include "internal.h"

#define CV_BF16_MC 192 /* 16 AVX-512 register tiles of rows, 6 AMX ones */
#define CV_BF16_NC 256 /* 8 register tiles of columns: the float32 tile is 192 KB */
/* A B micro-panel of 512 x 32 bfloat16 is 32 KB (L1); a multiple of 2 * ku. For AMX a
 * block of 1024, 2048 or the whole k measured within the noise of 512 (2048^3 +6%,
 * 4096x768x768 -2%, five interleaved rounds), as did MC 384 and NC 512: kept. */
#define CV_BF16_KC 512
/* Below this many flops one thread does the whole product (the pool's wake-up costs
 * about what 2 MFLOP take on one core, as in gemm.c). */
#define CV_BF16_TINY_FLOPS (2.0 * (1 << 20))

#define PLAIN_MR 12 /* the AVX-512 kernel's rows too: pack_a's constant case serves both */

/* The plain kernel: both products of a pair, in float32; the A panel q-major (ku = 1). */
static void kern_plain(int64_t kq, const uint32_t *a, const uint32_t *b, float *c,
                       int64_t ldc, int accumulate) {
    float acc[PLAIN_MR][CV_BF16_NR];
    memset(acc, 0, sizeof acc);
    for (int64_t q = 0; q < kq; q++)
        for (int i = 0; i < PLAIN_MR; i++) {
            uint32_t ai = a[q * PLAIN_MR + i], a0 = ai << 16, a1 = ai & 0xffff0000u;
            float x0, x1;
            memcpy(&x0, &a0, sizeof x0);
            memcpy(&x1, &a1, sizeof x1);
            for (int j = 0; j < CV_BF16_NR; j++) {
                uint32_t bj = b[q * CV_BF16_NR + j], b0 = bj << 16, b1 = bj & 0xffff0000u;
                float y0, y1;
                memcpy(&y0, &b0, sizeof y0);
                memcpy(&y1, &b1, sizeof y1);
                acc[i][j] += x0 * y0;
                acc[i][j] += x1 * y1;
            }
        }
    for (int i = 0; i < PLAIN_MR; i++)
        for (int j = 0; j < CV_BF16_NR; j++)
            c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc[i][j] : acc[i][j];
}

/* Never asked if usable: the fallback. */
static const cv_bf16_kernel plain = {"plain", kern_plain, PLAIN_MR, 1, NULL, NULL, NULL, NULL,
                                     NULL};

/* Best first; the test hook's limit skips the first few (cv_bf16_limit_kernel). */
static const cv_bf16_kernel *const kernels[] = {&cv_bf16_amx, &cv_bf16_avx512, &plain};
#define NKERNELS ((int)(sizeof kernels / sizeof kernels[0]))
static atomic_int first_kernel;

static const cv_bf16_kernel *pick(void) {
    if (cv_cpu_level() >= CV_CPU_V4)
        for (int i = atomic_load(&first_kernel); i < NKERNELS - 1; i++)
            if (kernels[i]->usable())
                return kernels[i];
    return &plain;
}

const char *cv_bf16_kernel_name(void) { return pick()->name; }

int cv_bf16_limit_kernel(const char *name) {
    for (int i = 0; i < NKERNELS; i++)
        if (!strcmp(kernels[i]->name, name)) {
            atomic_store(&first_kernel, i);
            return 0;
        }
    return -1;
}

/* The pair word of elements (k = p, p + 1) at x, x + step; the odd half 0 past k. */
static inline uint32_t pair(const uint16_t *x, int64_t step, int has_odd) {
    return (uint32_t)x[0] | (has_odd ? (uint32_t)x[step] << 16 : 0u);
}

/* run pairs of one row of A, from pair p of its k, element step cs: a copy where the
 * row is contiguous and has both halves of every pair (word by word: a memcpy of run
 * words was a libc call per word on the AVX-512 path, where run = 1). */
static inline void pack_row(const uint16_t *x, int64_t cs, int64_t p, int64_t run, int64_t k,
                            uint32_t *dst) {
    if (cs == 1 && 2 * (p + run) <= k) {
        for (int64_t r = 0; r < run; r++)
            memcpy(dst + r, x + 2 * r, sizeof *dst);
        return;
    }
    for (int64_t r = 0; r < run; r++)
        dst[r] = pair(x + 2 * r * cs, cs, 2 * (p + r) + 1 < k);
}

/* Term t's rows [0, rows) of A (at a) into pairs [q0, q0 + kq) of a panel of mr rows in
 * groups of ku pairs, from pair `from` of the term on: a run of pairs at a time that a
 * row of the panel holds in one piece. */
static inline void pack_a_groups(const cv_gemm_term_bf16 *t, const uint16_t *a, int64_t rows,
                                 int64_t q0, int64_t from, int64_t kq, int64_t mr, int64_t ku,
                                 uint32_t *panel) {
    for (int64_t q = from; q < kq;) {
        int64_t off = (q0 + q) % ku, run = ku - off < kq - q ? ku - off : kq - q;
        uint32_t *row0 = panel + ((q0 + q) / ku * mr) * ku + off;
        for (int64_t i = 0; i < rows; i++)
            pack_row(a + i * t->a_rs + 2 * q * t->a_cs, t->a_cs, q, run, t->k, row0 + i * ku);
        for (int64_t i = rows; i < mr; i++)
            memset(row0 + i * ku, 0, (size_t)run * sizeof *row0);
        q += run;
    }
}

/* The same, the AVX-512 and plain kernels' geometry a constant: with ku and mr known the
 * loops compile to what packing for them alone did (at run time, the A pack took twice
 * as long, 7% of the AVX-512 path at 4096 x 768 x 768). */
static void pack_a(const cv_bf16_kernel *kn, const cv_gemm_term_bf16 *t, const uint16_t *a,
                   int64_t rows, int64_t q0, int64_t kq, uint32_t *panel) {
    int64_t from = 0, whole = t->k / 2 < kq ? t->k / 2 : kq; /* pairs with both halves */
    if (kn->pack_a && rows == kn->mr && t->a_cs == 1 && q0 % kn->ku == 0)
        from = kn->pack_a(a, t->a_rs, whole, panel + q0 * kn->mr);
    if (kn->ku == 1 && kn->mr == PLAIN_MR)
        pack_a_groups(t, a, rows, q0, from, kq, PLAIN_MR, 1, panel);
    else
        pack_a_groups(t, a, rows, q0, from, kq, kn->mr, kn->ku, panel);
}

/* Columns [j0, j0 + cols) of term t's B into one panel: two rows interleaved. */
static void pack_b(const cv_bf16_kernel *kn, const cv_gemm_term_bf16 *t, const uint16_t *b,
                   int64_t cols, int64_t kq, uint32_t *dst) {
    int64_t q = 0;
    if (kn->pack_b && cols == CV_BF16_NR && t->b_cs == 1) {
        q = t->k / 2 < kq ? t->k / 2 : kq; /* pairs with both halves */
        kn->pack_b(b, t->b_rs, q, dst);
    }
    for (; q < kq; q++) {
        int odd = 2 * q + 1 < t->k;
        const uint16_t *row = b + 2 * q * t->b_rs;
        if (cols == CV_BF16_NR && t->b_cs == 1 && odd) { /* row-major: vectorizes */
            for (int64_t j = 0; j < CV_BF16_NR; j++)
                dst[q * CV_BF16_NR + j] = (uint32_t)row[j] | (uint32_t)row[j + t->b_rs] << 16;
            continue;
        }
        for (int64_t j = 0; j < CV_BF16_NR; j++)
            dst[q * CV_BF16_NR + j] = j < cols ? pair(row + j * t->b_cs, t->b_rs, odd) : 0;
    }
}

/* Both operands are packed whole, once (one parallel phase: every A panel and every B
 * panel, all terms), then the tiles are computed (a second one): each element is packed
 * once, where packing per tile packed A once per column block and B once per row block. */
typedef struct {
    const cv_gemm_bf16 *g;
    const cv_bf16_kernel *kn;
    int64_t kq;                 /* pairs of all terms, padded to a multiple of ku */
    int64_t m_panels, n_panels; /* per batch */
    int64_t a_batches, b_batches; /* packed copies: 1 where no term's operand moves */
    int64_t mblocks, nblocks;
    uint32_t *ap, *bp;
    char *slots;
    size_t slot_bytes;
    atomic_int *busy;
    int nslots;
} plan;

/* Panel x of A (x < a_batches * m_panels), else of B: the terms' pairs one after the
 * other, then zeros to the padded kq. */
static void pack_panel(const plan *pl, int64_t x) {
    const cv_gemm_bf16 *g = pl->g;
    int64_t na = pl->a_batches * pl->m_panels;
    int a_side = x < na;
    int64_t y = a_side ? x : x - na, per = a_side ? pl->m_panels : pl->n_panels;
    int64_t bt = y / per, w = a_side ? pl->kn->mr : CV_BF16_NR, at = y % per * w;
    int64_t size = (a_side ? g->m : g->n) - at, q0 = 0;
    uint32_t *dst = (a_side ? pl->ap : pl->bp) + y * pl->kq * w;
    for (int t = 0; t < g->nterms; t++) {
        const cv_gemm_term_bf16 *tm = &g->terms[t];
        int64_t kq = (tm->k > 0 ? tm->k + 1 : 0) / 2;
        if (a_side)
            pack_a(pl->kn, tm, tm->a + bt * tm->a_bs + at * tm->a_rs, size < w ? size : w, q0,
                   kq, dst);
        else
            pack_b(pl->kn, tm, tm->b + bt * tm->b_bs + at * tm->b_cs, size < w ? size : w, kq,
                   dst + q0 * CV_BF16_NR);
        q0 += kq;
    }
    if (a_side) /* rows = 0: zeros */
        pack_a(pl->kn, g->terms, NULL, 0, q0, pl->kq - q0, dst);
    else
        memset(dst + q0 * CV_BF16_NR, 0, (size_t)(pl->kq - q0) * CV_BF16_NR * sizeof *dst);
}

static void pack_range(void *ctx, int64_t begin, int64_t end) {
    for (int64_t x = begin; x < end; x++)
        pack_panel(ctx, x);
}

/* One (batch, row block, column block) tile into acc, then the epilogue. */
static void task(const plan *pl, int64_t x, float *acc) {
    const cv_gemm_bf16 *g = pl->g;
    const int64_t mr = pl->kn->mr, nr = CV_BF16_NR;
    int64_t bt = x / (pl->mblocks * pl->nblocks), r = x % (pl->mblocks * pl->nblocks);
    int64_t i0 = r / pl->nblocks * CV_BF16_MC, j0 = r % pl->nblocks * CV_BF16_NC;
    int64_t rows = g->m - i0 < CV_BF16_MC ? g->m - i0 : CV_BF16_MC;
    int64_t cols = g->n - j0 < CV_BF16_NC ? g->n - j0 : CV_BF16_NC;
    int64_t npr = (rows + mr - 1) / mr, npc = (cols + nr - 1) / nr;
    const uint32_t *a =
        pl->ap + ((pl->a_batches > 1 ? bt : 0) * pl->m_panels + i0 / mr) * pl->kq * mr;
    const uint32_t *b =
        pl->bp + ((pl->b_batches > 1 ? bt : 0) * pl->n_panels + j0 / nr) * pl->kq * nr;
    int64_t kqb = CV_BF16_KC / 2;
    for (int64_t q0 = 0; q0 < pl->kq; q0 += kqb) { /* A's block stays in L2 over the jr */
        int64_t kq = pl->kq - q0 < kqb ? pl->kq - q0 : kqb;
        for (int64_t jr = 0; jr < npc; jr++)
            for (int64_t ir = 0; ir < npr; ir++) /* a k group starts at q0 * mr: q0 % ku = 0 */
                pl->kn->kern(kq, a + (ir * pl->kq + q0) * mr, b + (jr * pl->kq + q0) * nr,
                             acc + ir * mr * CV_BF16_NC + jr * nr, CV_BF16_NC, q0 > 0);
    }
    for (int64_t i = 0; pl->kq == 0 && i < rows; i++) /* k == 0: the tile is zeros */
        memset(acc + i * CV_BF16_NC, 0, (size_t)cols * sizeof *acc);
    g->epilogue(g->ctx, bt, i0, i0 + rows, j0, j0 + cols, acc, CV_BF16_NC);
}

static void compute_range(void *ctx, int64_t begin, int64_t end) {
    const plan *pl = ctx;
    int s = cv_ws_claim_slot(pl->busy, pl->nslots);
    float *acc = (float *)(pl->slots + (size_t)s * pl->slot_bytes);
    if (pl->kn->begin)
        pl->kn->begin();
    for (int64_t x = begin; x < end; x++)
        task(pl, x, acc);
    if (pl->kn->end)
        pl->kn->end();
    atomic_store(&pl->busy[s], 0);
}

static int run(const cv_gemm_bf16 *g) {
    plan pl = {.g = g, .kn = pick(), .a_batches = 1, .b_batches = 1};
    const int64_t mr = pl.kn->mr, ku = pl.kn->ku;
    for (int t = 0; t < g->nterms; t++) {
        pl.kq += (g->terms[t].k > 0 ? g->terms[t].k + 1 : 0) / 2;
        if (g->terms[t].a_bs)
            pl.a_batches = g->nbatch;
        if (g->terms[t].b_bs)
            pl.b_batches = g->nbatch;
    }
    pl.kq = (pl.kq + ku - 1) / ku * ku;
    pl.m_panels = (g->m + mr - 1) / mr;
    pl.n_panels = (g->n + CV_BF16_NR - 1) / CV_BF16_NR;
    pl.mblocks = (g->m + CV_BF16_MC - 1) / CV_BF16_MC;
    pl.nblocks = (g->n + CV_BF16_NC - 1) / CV_BF16_NC;
    int64_t ntasks = g->nbatch * pl.mblocks * pl.nblocks;
    int64_t npack = pl.a_batches * pl.m_panels + pl.b_batches * pl.n_panels;
    int one = 2.0 * g->nbatch * g->m * g->n * (2.0 * pl.kq) < CV_BF16_TINY_FLOPS;
    pl.nslots = one ? 1 : cv_num_threads();
    pl.slot_bytes = cv_ws_round((size_t)CV_BF16_MC * CV_BF16_NC * sizeof(float));
    size_t head = cv_ws_round((size_t)pl.nslots * sizeof(atomic_int));
    double a_bytes = (double)pl.a_batches * pl.m_panels * pl.kq * mr * 4;
    double b_bytes = (double)pl.b_batches * pl.n_panels * pl.kq * CV_BF16_NR * 4;
    double bytes = head + (double)pl.nslots * pl.slot_bytes + a_bytes + b_bytes + 128;
    char *ws = bytes < (double)SIZE_MAX / 2 ? cv_ws_get((size_t)bytes) : NULL;
    if (!ws)
        return -1;
    pl.busy = (atomic_int *)ws;
    for (int s = 0; s < pl.nslots; s++)
        atomic_init(&pl.busy[s], 0);
    pl.slots = ws + head;
    pl.ap = (uint32_t *)(pl.slots + (size_t)pl.nslots * pl.slot_bytes);
    pl.bp = pl.ap + (size_t)(a_bytes / 4);
    cv_parallel_for(npack, one ? npack : 1, pack_range, &pl);
    cv_parallel_for(ntasks, one ? ntasks : 1, compute_range, &pl);
    cv_ws_put(ws);
    return 0;
}

int cv_run_gemm_bf16(const cv_gemm_bf16 *g) {
    return g->nbatch <= 0 || g->m <= 0 || g->n <= 0 ? 0 : run(g);
}
