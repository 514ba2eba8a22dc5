/* The small-m path of gemm_impl.h (its header comment says when it runs): B is not
 * packed; column chunks are split over threads, each streaming its part of B once into
 * an m x chunk sum tile. A frozen (in, out) weight met by enough rows is read through
 * its kept transpose (with_dots_forms). Included by gemm_impl.h; CV_GEMM_SMALL_* in
 * gemm.c. */

typedef struct {
    const FN(cv_gemm) *g;
    const FN(cv_kernels) *kt;
    int64_t chunks, width; /* column chunks per batch, columns per chunk */
    int64_t rows, rgroups; /* rows per row group, row groups per batch */
    char *slots;           /* per-thread rows x width sums */
    size_t slot_bytes;
    atomic_int *busy;
    int nslots;
} FN(small_job);

static void FN(small_range)(void *ctx, int64_t begin, int64_t end) {
    const FN(small_job) *jb = ctx;
    const FN(cv_gemm) *g = jb->g;
    int s = cv_ws_claim_slot(jb->busy, jb->nslots);
    T *c = (T *)(jb->slots + (size_t)s * jb->slot_bytes);
    for (int64_t x = begin; x < end; x++) {
        int64_t bt = x / (jb->chunks * jb->rgroups), j0 = x % jb->chunks * jb->width;
        int64_t i0 = x / jb->chunks % jb->rgroups * jb->rows;
        int64_t m = g->m - i0 < jb->rows ? g->m - i0 : jb->rows;
        int64_t cols = g->n - j0 < jb->width ? g->n - j0 : jb->width;
        int first = 1;
        for (int t = 0; t < g->nterms; t++) {
            const FN(cv_gemm_term) *tm = &g->terms[t];
            if (tm->k <= 0)
                continue;
            const T *a = tm->a + bt * tm->a_bs + i0 * tm->a_rs, *b = tm->b + bt * tm->b_bs;
            if (tm->b_cs == 1)
                jb->kt->rows(m, tm->k, a, tm->a_rs, tm->a_cs, b + j0, tm->b_rs, cols, c,
                             jb->width, !first, 0);
            else
                jb->kt->dots(m, tm->k, a, tm->a_rs, b + j0 * tm->b_cs, tm->b_cs, cols, c,
                             jb->width, !first);
            first = 0;
        }
        for (int64_t i = 0; first && i < m; i++) /* k == 0: zeros */
            memset(c + i * jb->width, 0, (size_t)cols * sizeof(T));
        g->epilogue(g->ctx, bt, i0, i0 + m, j0, j0 + cols, c, jb->width);
    }
    atomic_store(&jb->busy[s], 0);
}

/* True when the small-m path applies: up to SMALL_M_TINY rows, up to SMALL_M
 * unless the product is tiny and narrower than one column group (those waste
 * most of each vector: 32x128x32 ran 1.1x slower on one thread), and each
 * term's B has unit column stride (rows kernel) or unit row stride with A's
 * unit column stride (dots kernel). */
static int FN(small_fits)(const FN(cv_gemm) *g, const FN(cv_kernels) *kt) {
    for (int t = 0; t < g->nterms; t++) {
        const FN(cv_gemm_term) *tm = &g->terms[t];
        if (tm->k > 0 && tm->b_cs != 1 && (tm->b_rs != 1 || tm->a_cs != 1))
            return 0;
    }
    if (g->m <= CV_GEMM_SMALL_M_TINY)
        return 1;
    return g->m <= CV_GEMM_SMALL_M && (!FN(tiny)(g, FN(ksum)(g)) || g->n >= kt->rw);
}

/* Column chunks whose rows x width sums fit CV_GEMM_SMALL_TILE, at least
 * CV_GEMM_SMALL_SPLIT per thread while they stay CV_GEMM_SMALL_RUN bytes
 * wide (long sequential runs per row of B), and a multiple of the thread
 * count, so the threads stream equal shares of B and one slowed thread
 * leaves little to wait for. */
static void FN(small_chunks)(FN(small_job) *jb, int nthreads) {
    int64_t n = jb->g->n, rw = jb->kt->rw;
    int64_t maxw = CV_GEMM_SMALL_TILE / (jb->rows * (int64_t)sizeof(T)) / rw * rw;
    int64_t groups = (n + rw - 1) / rw;
    int64_t chunks = (n + maxw - 1) / (maxw > rw ? maxw : rw);
    int64_t split = (int64_t)CV_GEMM_SMALL_SPLIT * nthreads;
    int64_t runs = n * (int64_t)sizeof(T) / CV_GEMM_SMALL_RUN;
    split = split < runs ? split : runs;
    chunks = chunks > split ? chunks : split;
    chunks = (chunks + nthreads - 1) / nthreads * nthreads;
    chunks = chunks < groups ? chunks : groups;
    jb->width = (groups + chunks - 1) / chunks * rw;
    jb->chunks = (n + jb->width - 1) / jb->width;
}

/* A frozen (in, out) weight's transpose, n x k row-major: the dots kernel's B. */
typedef struct {
    const FN(cv_gemm_term) *tm;
    int64_t n;
} FN(transpose_job);

static void FN(transpose_fill)(void *ctx, void *dst) {
    const FN(transpose_job) *jb = ctx;
    const T *b = jb->tm->b;
    int64_t k = jb->tm->k, n = jb->n, rs = jb->tm->b_rs;
    T *d = dst;
    for (int64_t p0 = 0; p0 < k; p0 += 16) /* 16 x 16 blocks: both sides in L1 */
        for (int64_t j0 = 0; j0 < n; j0 += 16)
            for (int64_t p = p0; p < p0 + 16 && p < k; p++)
                for (int64_t j = j0; j < j0 + 16 && j < n; j++)
                    d[j * k + p] = b[p * rs + j];
}

/* g with each frozen (in, out) B that the rows kernel would stream replaced by its
 * transpose, kept by the frozen buffer, which the dots kernel reads along k (from
 * CV_GEMM_DOTS_FORM_M rows); g itself where nothing is swapped. */
static const FN(cv_gemm) *FN(with_dots_forms)(const FN(cv_gemm) *g, FN(cv_gemm) *h,
                                              FN(cv_gemm_term) *terms, int max_terms) {
    if (g->m < CV_GEMM_DOTS_FORM_M || g->nterms > max_terms)
        return g;
    int swapped = 0;
    for (int t = 0; t < g->nterms; t++) {
        const FN(cv_gemm_term) *tm = &g->terms[t];
        terms[t] = *tm;
        if (tm->k <= 0 || tm->b_cs != 1 || tm->a_cs != 1 || (g->nbatch > 1 && tm->b_bs != 0))
            continue;
        const char *lo = (const char *)tm->b, *hi = lo + sizeof(T);
        int64_t reach = (tm->k - 1) * tm->b_rs * (int64_t)sizeof(T);
        reach < 0 ? (lo += reach) : (hi += reach);
        hi += (g->n - 1) * (int64_t)sizeof(T);
        cv_form_key key = {tm->b, tm->b_rs, 1, tm->k, g->n, -1, (int)sizeof(T)};
        FN(transpose_job) jb = {tm, g->n};
        const T *form = cv_frozen_form(lo, hi, &key, (size_t)(tm->k * g->n) * sizeof(T),
                                       FN(transpose_fill), &jb);
        if (form) {
            terms[t].b = form, terms[t].b_rs = 1, terms[t].b_cs = tm->k, terms[t].b_bs = 0;
            swapped = 1;
        }
    }
    if (!swapped)
        return g;
    *h = *g;
    h->terms = terms;
    return h;
}

static int FN(small)(const FN(cv_gemm) *g, const FN(cv_kernels) *kt) {
    int nthreads = cv_num_threads();
    FN(cv_gemm) h;
    FN(cv_gemm_term) terms[8];
    g = FN(with_dots_forms)(g, &h, terms, 8);
    FN(small_job) jb = {.g = g, .kt = kt};
    int64_t ksum = FN(ksum)(g), group = FN(tiny)(g, ksum) ? CV_GEMM_SMALL_M_TINY : CV_GEMM_SMALL_M;
    jb.rows = g->m < group ? g->m : group;
    jb.rgroups = (g->m + jb.rows - 1) / jb.rows;
    FN(small_chunks)(&jb, nthreads);
    /* Chunks per task so that a task streams at least CV_GEMM_SMALL_GRAIN
     * bytes of B (or does as many flops): less does not pay for a wake-up. */
    int64_t chunk_bytes = ksum * jb.width * (int64_t)sizeof(T) * ((jb.rows + 3) / 4);
    int64_t grain = CV_GEMM_SMALL_GRAIN / (chunk_bytes ? chunk_bytes : 1);
    int64_t tasks = g->nbatch * jb.rgroups * jb.chunks;
    grain = grain < 1 ? 1 : grain;
    jb.nslots = tasks <= grain ? 1 : nthreads;
    jb.slot_bytes = cv_ws_round((size_t)(jb.rows * jb.width) * sizeof(T));
    size_t head = cv_ws_round((size_t)jb.nslots * sizeof(atomic_int));
    char *ws = cv_ws_get(head + (size_t)jb.nslots * jb.slot_bytes);
    if (!ws)
        return -1;
    jb.busy = (atomic_int *)ws;
    for (int s = 0; s < jb.nslots; s++)
        atomic_init(&jb.busy[s], 0);
    jb.slots = ws + head;
    cv_parallel_for(tasks, grain, FN(small_range), &jb);
    cv_ws_put(ws);
    return 0;
}
