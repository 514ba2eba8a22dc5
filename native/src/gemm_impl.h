/* The GEMM driver for one element type: included by gemm.c with T (float or
 * double), TI (int32_t or int64_t), SFX (f32 or f64) and FN(name) = name_SFX
 * defined.
 *
 * Packed path (BLIS-like). The rows of every batch are cut into row units of
 * up to kt->mc rows and the columns into column units of up to kt->nc; a
 * unit (row unit x column unit) is one task and one epilogue tile. A step
 * packs a group of row units' A panels and, when it changes, a group of
 * column units' B panels (all terms, all of k) into shared buffers in one
 * parallel phase, then computes the group's units in a second one. Within a
 * unit the k range is cut into blocks of at most kt->kc so the unit's A
 * block stays in L2 while the B micro-panels pass through; each kernel call
 * prefetches what a later call first touches (see unit_term). The
 * accumulator tile lives in a per-thread slot and goes to the epilogue right
 * after the last k block. Small problems, and batches that each fit in cache when B is not
 * shared, run "solo": one thread packs and computes a whole batch. Up to
 * CV_GEMM_STREAM_ROWS rows against one B run "streamed": A packed once, then each task
 * packs one column unit of B into its thread's slot and computes every row unit against
 * it while it sits in L2.
 *
 * Small-m path: for a few rows, B is not packed; column chunks are split
 * over threads, each streams its part of B once (kt->rows for unit column
 * stride, kt->dots for unit row stride, see gemm_kernels.h) into an m x
 * chunk sum tile that goes to the epilogue. Tiny products with up to
 * CV_GEMM_SMALL_M_TINY rows take it too, in groups of CV_GEMM_SMALL_M rows.
 * One row against a large B splits k over the threads instead (gemm_ksplit.h).
 *
 * A term whose B lies in a frozen buffer (frozen.h) reads B's panels from its packed form,
 * made at the first call: the packed path then packs only A (GPT-2's prefill at 128
 * tokens packed 28 MB of weights a call, 18% of its CPU time).
 */
#include "gemm_pack.h"

/* A term's k; a negative k counts as an empty term. */
static inline int64_t FN(term_k)(const FN(cv_gemm_term) *tm) { return tm->k > 0 ? tm->k : 0; }

/* The sum of the terms' k. */
static int64_t FN(ksum)(const FN(cv_gemm) *g) {
    int64_t ksum = 0;
    for (int t = 0; t < g->nterms; t++)
        ksum += FN(term_k)(&g->terms[t]);
    return ksum;
}

/* A product below CV_GEMM_TINY_FLOPS: its B sits in cache. */
static int FN(tiny)(const FN(cv_gemm) *g, int64_t ksum) {
    return 2.0 * g->nbatch * g->m * g->n * ksum < CV_GEMM_TINY_FLOPS;
}

typedef struct {
    const FN(cv_gemm) *g;
    const FN(cv_kernels) *kt;
    const int64_t *koff;        /* offset of each term's k range in a panel */
    const T *const *form;       /* each term's packed B (all panels, its k only), or NULL */
    int64_t ksum;               /* sum of the terms' k */
    int64_t m_panels, n_panels; /* per batch */
    int64_t upanels, npu;       /* row / column panels per unit */
    int64_t m_units, n_units;   /* row units per batch, column units */
    int b_shared;               /* every batch multiplies the same B */
    /* the current step: row units [ru0, ru1) over all batches, column
     * units [cu0, cu1), B of b_batch packed when pack_b */
    int64_t ru0, ru1, cu0, cu1, b_batch;
    int pack_b;
    T *ap, *bp;    /* packed panels of the step */
    char *slots;   /* per-thread regions, slot_bytes each */
    size_t slot_bytes;
    atomic_int *busy;
    int nslots;
} FN(plan);

/* Pack tasks of the step: one per B column unit, then one per A panel. The
 * large B tasks go first so the pool's chunks end on small A panels and
 * even out (4096x1024x4096: 11 of the 16 1 MB B units had landed in the
 * last chunk; pack phase 2.3-3.3 -> 2.1-2.6 ms). */
static int64_t FN(pack_tasks)(const FN(plan) *pl) {
    return (pl->ru1 - pl->ru0) * pl->upanels + (pl->pack_b ? pl->cu1 - pl->cu0 : 0);
}

/* Pack A panel x of the step (x < its row panels), all terms. */
static void FN(pack_a_task)(const FN(plan) *pl, int64_t x) {
    const FN(cv_gemm) *g = pl->g;
    int64_t ru = pl->ru0 + x / pl->upanels, bt = ru / pl->m_units;
    int64_t panel = ru % pl->m_units * pl->upanels + x % pl->upanels;
    if (panel >= pl->m_panels)
        return;
    int mr = pl->kt->mr;
    int64_t i0 = panel * mr, rows = g->m - i0 < mr ? g->m - i0 : mr;
    T *dst = pl->ap + x * pl->ksum * mr;
    for (int t = 0; t < g->nterms; t++) {
        const FN(cv_gemm_term) *tm = &g->terms[t];
        FN(pack_a)(tm->a + bt * tm->a_bs + i0 * tm->a_rs, tm->a_rs, tm->a_cs, rows, FN(term_k)(tm), mr,
                   dst + pl->koff[t] * mr);
    }
}

/* Rows [p0, p0 + rows) of one B panel of term t, to dst (where row p0 goes). */
static void FN(pack_b_rows)(const FN(plan) *pl, int t, int64_t panel, int64_t p0, int64_t rows,
                            T *dst) {
    const FN(cv_gemm_term) *tm = &pl->g->terms[t];
    int nr = pl->kt->nr;
    int64_t j0 = panel * nr, cols = pl->g->n - j0 < nr ? pl->g->n - j0 : nr;
    const T *b = tm->b + pl->b_batch * tm->b_bs + j0 * tm->b_cs + p0 * tm->b_rs;
    if (cols == nr && tm->b_cs == 1)
        pl->kt->pack_b(rows, b, tm->b_rs, dst);
    else
        FN(pack_b)(b, tm->b_rs, tm->b_cs, cols, rows, nr, dst);
}

/* Pack the B panels of column unit y of the step, all terms. With unit
 * column stride, blocks of rows go across all the unit's panels, so each
 * row of B is read as one run rather than panel by panel. */
static void FN(pack_b_task)(const FN(plan) *pl, int64_t y) {
    int64_t first = (pl->cu0 + y) * pl->npu, end = first + pl->npu;
    end = end < pl->n_panels ? end : pl->n_panels;
    T *unit = pl->bp + y * pl->npu * pl->ksum * pl->kt->nr;
    for (int t = 0; t < pl->g->nterms; t++) {
        int64_t k = pl->form[t] ? 0 : FN(term_k)(&pl->g->terms[t]);
        int64_t step = pl->g->terms[t].b_cs == 1 ? CV_GEMM_PACK_ROWS : (k ? k : 1);
        for (int64_t p0 = 0; p0 < k; p0 += step)
            for (int64_t panel = first; panel < end; panel++)
                FN(pack_b_rows)(pl, t, panel, p0, k - p0 < step ? k - p0 : step,
                                unit + ((panel - first) * pl->ksum + pl->koff[t] + p0) *
                                           pl->kt->nr);
    }
}

static void FN(pack_range)(void *ctx, int64_t begin, int64_t end) {
    const FN(plan) *pl = ctx;
    int64_t nb = pl->pack_b ? pl->cu1 - pl->cu0 : 0;
    for (int64_t x = begin; x < end; x++) {
        if (x < nb)
            FN(pack_b_task)(pl, x);
        else
            FN(pack_a_task)(pl, x - nb);
    }
}

/* One term's k blocks over the unit's panels; returns 0 once acc is live. B's panels
 * are b_step apart, the term's rows from b_off on (its own form: k apart, from 0). */
static int FN(unit_term)(const FN(plan) *pl, int t, const T *a, const T *b, int64_t b_step,
                         int64_t b_off, int64_t npr, int64_t npc, int64_t last_rows, T *acc,
                         int64_t ldc, int first) {
    const FN(cv_kernels) *kt = pl->kt;
    int64_t k = FN(term_k)(&pl->g->terms[t]), nblk = (k + kt->kc - 1) / kt->kc;
    int64_t kcb = nblk ? (k + nblk - 1) / nblk : 0; /* even blocks */
    int64_t a_step = pl->ksum * kt->mr;
    for (int64_t pc = 0; pc < k; pc += kcb, first = 0) {
        int64_t kc = k - pc < kcb ? k - pc : kcb, off = pl->koff[t] + pc;
        int64_t a_lines = (kc * kt->mr * (int64_t)sizeof(T) + 63) / 64;
        int64_t b_lines = (kc * kt->nr * (int64_t)sizeof(T) + 63) / 64;
        int64_t slice = (b_lines + npr - 1) / npr;
        for (int64_t jr = 0; jr < npc; jr++) {
            const T *bpan = b + jr * b_step + (b_off + pc) * kt->nr;
            for (int64_t ir = 0; ir < npr; ir++) {
                /* Prefetch a slice of the next B micro-panel and, in the
                 * first column, the next A micro-panel: both come from L3 or
                 * memory there (later columns find A in L2). Without, the
                 * calls that first touched them took 1.3x (A) and 2.1x (B)
                 * the 1.5 us of the others (4096x1024x4096, Zen 5). */
                int64_t q0 = ir * slice < b_lines ? ir * slice : b_lines;
                int64_t q1 = q0 + slice < b_lines ? q0 + slice : b_lines;
                cv_gemm_pf pf[2] = {
                    {(const char *)(bpan + b_step) + 64 * q0, jr + 1 < npc ? q1 - q0 : 0},
                    {(const char *)(a + (ir + 1) * a_step + off * kt->mr),
                     jr == 0 && ir + 1 < npr ? a_lines : 0},
                };
                (ir == npr - 1 && last_rows <= kt->mr_short ? kt->kern_short : kt->kern)(
                    kc, a + ir * a_step + off * kt->mr, bpan,
                    acc + ir * kt->mr * ldc + jr * kt->nr, ldc, !first, pf);
            }
        }
    }
    return first;
}

/* Compute unit u of the step into acc and hand it to the epilogue. */
static void FN(unit)(const FN(plan) *pl, int64_t u, T *acc) {
    const FN(cv_gemm) *g = pl->g;
    const FN(cv_kernels) *kt = pl->kt;
    int64_t ncu = pl->cu1 - pl->cu0, ru = pl->ru0 + u / ncu, cu = pl->cu0 + u % ncu;
    int64_t bt = ru / pl->m_units;
    int64_t i0 = ru % pl->m_units * pl->upanels * kt->mr, j0 = cu * pl->npu * kt->nr;
    int64_t i1 = i0 + pl->upanels * kt->mr, j1 = j0 + pl->npu * kt->nr;
    i1 = i1 < g->m ? i1 : g->m;
    j1 = j1 < g->n ? j1 : g->n;
    int64_t npr = (i1 - i0 + kt->mr - 1) / kt->mr, npc = (j1 - j0 + kt->nr - 1) / kt->nr;
    int64_t ldc = pl->npu * kt->nr;
    const T *a = pl->ap + (ru - pl->ru0) * pl->upanels * pl->ksum * kt->mr;
    const T *b = pl->bp + (cu - pl->cu0) * pl->npu * pl->ksum * kt->nr;
    int64_t last_rows = i1 - i0 - (npr - 1) * kt->mr; /* real rows of the last panel */
    int first = 1;
    for (int t = 0; t < g->nterms; t++) {
        int64_t k = FN(term_k)(&g->terms[t]);
        first = pl->form[t] ? FN(unit_term)(pl, t, a, pl->form[t] + cu * pl->npu * k * kt->nr,
                                            k * kt->nr, 0, npr, npc, last_rows, acc, ldc, first)
                            : FN(unit_term)(pl, t, a, b, pl->ksum * kt->nr, pl->koff[t], npr,
                                            npc, last_rows, acc, ldc, first);
    }
    for (int64_t i = 0; first && i < i1 - i0; i++) /* k == 0: the tile is zeros */
        memset(acc + i * ldc, 0, (size_t)(j1 - j0) * sizeof(T));
    g->epilogue(g->ctx, bt, i0, i1, j0, j1, acc, ldc);
}

static void FN(compute_range)(void *ctx, int64_t begin, int64_t end) {
    const FN(plan) *pl = ctx;
    int s = cv_ws_claim_slot(pl->busy, pl->nslots);
    T *acc = (T *)(pl->slots + (size_t)s * pl->slot_bytes);
    for (int64_t u = begin; u < end; u++)
        FN(unit)(pl, u, acc);
    atomic_store(&pl->busy[s], 0);
}

/* Bytes of packed A per row unit and of packed B per column unit. */
static size_t FN(a_unit_bytes)(const FN(plan) *pl) {
    return (size_t)(pl->upanels * pl->kt->mr * pl->ksum) * sizeof(T);
}
static size_t FN(b_unit_bytes)(const FN(plan) *pl) {
    return (size_t)(pl->npu * pl->kt->nr * pl->ksum) * sizeof(T);
}
static size_t FN(acc_bytes)(const FN(plan) *pl) {
    return cv_ws_round((size_t)(pl->upanels * pl->kt->mr * pl->npu * pl->kt->nr) * sizeof(T));
}

/* Pack and compute whole batches [begin, end) on this thread, in one slot
 * that holds the batch's packed A and B and the accumulator tile. */
static void FN(solo_range)(void *ctx, int64_t begin, int64_t end) {
    const FN(plan) *shared = ctx;
    int s = cv_ws_claim_slot(shared->busy, shared->nslots);
    FN(plan) pl = *shared;
    char *region = pl.slots + (size_t)s * pl.slot_bytes;
    pl.ap = (T *)region;
    pl.bp = (T *)(region + cv_ws_round(pl.m_units * FN(a_unit_bytes)(&pl)));
    T *acc = (T *)((char *)pl.bp + cv_ws_round(pl.n_units * FN(b_unit_bytes)(&pl)));
    pl.cu0 = 0;
    pl.cu1 = pl.n_units;
    pl.pack_b = 1;
    for (int64_t bt = begin; bt < end; bt++) {
        pl.ru0 = bt * pl.m_units;
        pl.ru1 = pl.ru0 + pl.m_units;
        pl.b_batch = bt; /* b_bs is 0 when B is shared */
        FN(pack_range)(&pl, 0, FN(pack_tasks)(&pl));
        for (int64_t u = 0; u < pl.m_units * pl.n_units; u++)
            FN(unit)(&pl, u, acc);
    }
    atomic_store(&shared->busy[s], 0);
}

/* A task of the streamed path: column units [begin, end), each packed into this thread's
 * slot and, while it is in L2, multiplied by every row unit's packed A. */
static void FN(stream_range)(void *ctx, int64_t begin, int64_t end) {
    const FN(plan) *shared = ctx;
    int s = cv_ws_claim_slot(shared->busy, shared->nslots);
    FN(plan) pl = *shared;
    pl.bp = (T *)(pl.slots + (size_t)s * pl.slot_bytes);
    T *acc = (T *)((char *)pl.bp + cv_ws_round(FN(b_unit_bytes)(&pl)));
    for (int64_t y = begin; y < end; y++) {
        pl.cu0 = y, pl.cu1 = y + 1;
        FN(pack_b_task)(&pl, 0);
        for (int64_t r = 0; r < pl.ru1 - pl.ru0; r++)
            FN(unit)(&pl, r, acc);
    }
    atomic_store(&shared->busy[s], 0);
}

/* Few rows against one B (a prefill's 128 tokens times a weight): A packed once, then B a
 * column unit at a time per thread (stream_range). The stepwise path packs B whole into one
 * buffer before computing, and reads it back: for GPT-2's 28 MB of weights at 128 rows
 * that round trip went through memory. */
static void FN(streamed)(FN(plan) *pl, int64_t total_ru) {
    pl->ru0 = 0, pl->ru1 = total_ru, pl->cu0 = pl->cu1 = 0, pl->b_batch = 0, pl->pack_b = 0;
    cv_parallel_for(FN(pack_tasks)(pl), 1, FN(pack_range), pl); /* A's panels only */
    cv_parallel_for(pl->n_units, 1, FN(stream_range), pl);
}

/* Steps over groups of row units x groups of column units; each step packs
 * in parallel, then computes in parallel. B is repacked only when the
 * column group or (for per-batch B) the batch changes. */
static void FN(stepwise)(FN(plan) *pl, int64_t rg_units, int64_t cg_units) {
    int64_t total_ru = pl->g->nbatch * pl->m_units;
    for (pl->cu0 = 0; pl->cu0 < pl->n_units; pl->cu0 = pl->cu1) {
        pl->cu1 = pl->cu0 + cg_units < pl->n_units ? pl->cu0 + cg_units : pl->n_units;
        int64_t packed_batch = -1;
        for (pl->ru0 = 0; pl->ru0 < total_ru; pl->ru0 = pl->ru1) {
            int64_t end = pl->b_shared ? total_ru : (pl->ru0 / pl->m_units + 1) * pl->m_units;
            pl->ru1 = pl->ru0 + rg_units < end ? pl->ru0 + rg_units : end;
            pl->b_batch = pl->b_shared ? 0 : pl->ru0 / pl->m_units;
            pl->pack_b = pl->b_batch != packed_batch;
            packed_batch = pl->b_batch;
            cv_parallel_for(FN(pack_tasks)(pl), 1, FN(pack_range), pl);
            cv_parallel_for((pl->ru1 - pl->ru0) * (pl->cu1 - pl->cu0), 1, FN(compute_range), pl);
        }
    }
}

/* Units of even size: as few as the block size allows, split evenly. */
static void FN(split_units)(int64_t panels, int64_t max_per_unit, int64_t *units,
                            int64_t *per_unit) {
    *units = (panels + max_per_unit - 1) / max_per_unit;
    *per_unit = (panels + *units - 1) / *units;
}

/* Few tasks (under 16 a thread) that the threads cannot share evenly: more column
 * units where that makes every thread's share equal, else one thread computes a whole
 * unit while the others wait (n = 768 in units of 256 columns on 2 threads: 2 units
 * against 1; n = 2304: 5 against 4, and 128 x 768 x 2304 ran 1,267 -> 1,151 us as 12
 * units of 192, Zen 5, ABBA). */
static void FN(balance_units)(FN(plan) *pl, int64_t rows, int nthreads) {
    if (rows * pl->n_units % nthreads == 0 || rows * pl->n_units >= 16 * nthreads)
        return;
    for (int64_t units = pl->n_units; units <= pl->n_panels; units++) {
        int64_t per_unit = (pl->n_panels + units - 1) / units;
        int64_t exact = (pl->n_panels + per_unit - 1) / per_unit;
        if (rows * exact % nthreads == 0) {
            pl->n_units = exact;
            pl->npu = per_unit;
            return;
        }
    }
}

static void FN(plan_init)(FN(plan) *pl, const FN(cv_gemm) *g, const FN(cv_kernels) *kt,
                          int nthreads) {
    const FN(cv_gemm_term) *terms = g->terms;
    *pl = (FN(plan)){.g = g, .kt = kt, .b_shared = 1, .ksum = FN(ksum)(g)};
    for (int t = 0; t < g->nterms; t++)
        pl->b_shared &= g->nbatch == 1 || terms[t].b_bs == 0;
    pl->m_panels = (g->m + kt->mr - 1) / kt->mr;
    pl->n_panels = (g->n + kt->nr - 1) / kt->nr;
    FN(split_units)(pl->m_panels, kt->mc / kt->mr, &pl->m_units, &pl->upanels);
    FN(split_units)(pl->n_panels, kt->nc / kt->nr, &pl->n_units, &pl->npu);
    FN(balance_units)(pl, g->nbatch * pl->m_units, nthreads);
}

/* The streamed path's column units, a task each: as many as the threads share evenly
 * (pl's units re-cut and 1 returned), else 0 and pl as it was. */
static int FN(stream_units)(FN(plan) *pl, int nthreads) {
    FN(plan) cut = *pl;
    FN(balance_units)(&cut, 1, nthreads);
    if (cut.n_units % nthreads != 0 && cut.n_units < 4 * nthreads)
        return 0;
    *pl = cut;
    return 1;
}

/* Term t's B packed whole, panel by panel, into its form (dst). */
typedef struct {
    const FN(plan) *pl;
    int t;
    T *dst;
} FN(form_job);

static void FN(form_range)(void *ctx, int64_t begin, int64_t end) {
    const FN(form_job) *jb = ctx;
    int64_t k = FN(term_k)(&jb->pl->g->terms[jb->t]);
    for (int64_t panel = begin; panel < end; panel++)
        FN(pack_b_rows)(jb->pl, jb->t, panel, 0, k, jb->dst + panel * k * jb->pl->kt->nr);
}

static void FN(form_fill)(void *ctx, void *dst) {
    FN(form_job) *jb = ctx;
    jb->dst = dst;
    cv_parallel_for(jb->pl->n_panels, 1, FN(form_range), jb);
}

/* Term t's packed B kept by the frozen buffer it lies in (every batch reading the same
 * B), else NULL. */
static const T *FN(term_form)(const FN(plan) *pl, int t) {
    const FN(cv_gemm_term) *tm = &pl->g->terms[t];
    int64_t k = FN(term_k)(tm), n = pl->g->n;
    if (!k || (pl->g->nbatch > 1 && tm->b_bs != 0))
        return NULL;
    const char *lo = (const char *)tm->b, *hi = lo + sizeof(T);
    int64_t reach[2] = {(k - 1) * tm->b_rs * (int64_t)sizeof(T),
                        (n - 1) * tm->b_cs * (int64_t)sizeof(T)};
    for (int i = 0; i < 2; i++)
        reach[i] < 0 ? (lo += reach[i]) : (hi += reach[i]);
    cv_form_key key = {tm->b, tm->b_rs, tm->b_cs, k, n, pl->kt->nr, (int)sizeof(T)};
    FN(form_job) jb = {pl, t, NULL};
    size_t bytes = (size_t)(pl->n_panels * k * pl->kt->nr) * sizeof(T);
    return cv_frozen_form(lo, hi, &key, bytes, FN(form_fill), &jb);
}

/* Carve the workspace: term offsets, forms and slot flags, then the rest. */
static char *FN(carve_header)(FN(plan) *pl, char *ws) {
    int64_t *koff = (int64_t *)ws, off = 0;
    for (int t = 0; t < pl->g->nterms; t++) {
        koff[t] = off;
        off += FN(term_k)(&pl->g->terms[t]);
    }
    pl->koff = koff;
    ws += cv_ws_round((size_t)pl->g->nterms * sizeof(int64_t));
    const T **form = (const T **)ws;
    for (int t = 0; t < pl->g->nterms; t++)
        form[t] = FN(term_form)(pl, t);
    pl->form = form;
    ws += cv_ws_round((size_t)pl->g->nterms * sizeof(T *));
    pl->busy = (atomic_int *)ws;
    for (int s = 0; s < pl->nslots; s++)
        atomic_init(&pl->busy[s], 0);
    return ws + cv_ws_round((size_t)pl->nslots * sizeof(atomic_int));
}

static size_t FN(header_bytes)(const FN(plan) *pl) {
    return cv_ws_round((size_t)pl->g->nterms * sizeof(int64_t)) +
           cv_ws_round((size_t)pl->g->nterms * sizeof(T *)) +
           cv_ws_round((size_t)pl->nslots * sizeof(atomic_int));
}

static int FN(packed)(const FN(cv_gemm) *g, const FN(cv_kernels) *kt) {
    FN(plan) pl;
    int nthreads = cv_num_threads();
    FN(plan_init)(&pl, g, kt, nthreads);
    size_t au = FN(a_unit_bytes)(&pl), bu = FN(b_unit_bytes)(&pl), acc = FN(acc_bytes)(&pl);
    size_t batch_bytes = cv_ws_round(pl.m_units * au) + cv_ws_round(pl.n_units * bu) + acc;
    /* One thread does it all when threads would not pay off. */
    int one = FN(tiny)(g, pl.ksum) || nthreads == 1;
    int per_batch = !pl.b_shared && g->nbatch >= 2 * nthreads;
    int solo = batch_bytes <= CV_GEMM_SOLO_BYTES && (one || per_batch);
    pl.nslots = solo && one ? 1 : nthreads;
    int64_t total_ru = g->nbatch * pl.m_units;
    int64_t rg = CV_GEMM_GROUP_BYTES / (au ? au : 1), cg = CV_GEMM_GROUP_BYTES / (bu ? bu : 1);
    rg = rg < 1 ? 1 : rg > total_ru ? total_ru : rg;
    cg = cg < 1 ? 1 : cg > pl.n_units ? pl.n_units : cg;
    int stream = !solo && pl.b_shared && rg >= total_ru &&
                 g->nbatch * g->m <= CV_GEMM_STREAM_ROWS && FN(stream_units)(&pl, nthreads);
    if (stream)
        bu = FN(b_unit_bytes)(&pl), acc = FN(acc_bytes)(&pl);
    pl.slot_bytes = solo ? batch_bytes : stream ? cv_ws_round(bu) + acc : acc;
    double bytes = (double)FN(header_bytes)(&pl) + (double)pl.nslots * pl.slot_bytes +
                   (solo     ? 0
                    : stream ? (double)cv_ws_round(total_ru * au)
                             : (double)cv_ws_round(rg * au) + (double)cv_ws_round(cg * bu));
    char *ws = bytes < (double)SIZE_MAX / 2 ? cv_ws_get((size_t)bytes) : NULL;
    if (!ws)
        return -1;
    char *rest = FN(carve_header)(&pl, ws);
    if (solo) {
        pl.slots = rest;
        if (one)
            FN(solo_range)(&pl, 0, g->nbatch);
        else
            cv_parallel_for(g->nbatch, 1, FN(solo_range), &pl);
    } else if (stream) {
        pl.ap = (T *)rest;
        pl.slots = rest + cv_ws_round(total_ru * au);
        FN(streamed)(&pl, total_ru);
    } else {
        pl.ap = (T *)rest;
        pl.bp = (T *)(rest + cv_ws_round(rg * au));
        pl.slots = (char *)pl.bp + cv_ws_round(cg * bu);
        FN(stepwise)(&pl, rg, cg);
    }
    cv_ws_put(ws);
    return 0;
}

#include "gemm_small.h"

#include "gemm_ksplit.h"

static const FN(cv_kernels) *FN(pick_kernels)(void) {
#if defined(__x86_64__)
    int level = cv_cpu_level();
    if (level >= CV_CPU_V4)
        return &KERNELS(avx512);
    if (level >= CV_CPU_V3)
        return &KERNELS(avx2);
#endif
    return &KERNELS(generic);
}

int FN(cv_run_gemm)(const FN(cv_gemm) *g) {
    if (g->nbatch <= 0 || g->m <= 0 || g->n <= 0)
        return 0;
    const FN(cv_kernels) *kt = FN(pick_kernels)();
    int nthreads = cv_num_threads();
    if (FN(ksplit_fits)(g, nthreads))
        return FN(ksplit)(g, kt, nthreads);
    return FN(small_fits)(g, kt) ? FN(small)(g, kt) : FN(packed)(g, kt);
}
