/* One row of A against a large B with contiguous columns (a decode step's x @ W): the
 * threads split k, not the columns. Each takes a contiguous range of B's rows, one
 * sequential run of B's bytes (all of it, for a whole row-major W), into its own
 * sums; the part that finishes last adds them, in order, and runs the epilogue.
 * Column halves made each thread read a 3-6 KB run per row of B and jump a row on,
 * which the prefetchers follow worse (Zen 4, 2 threads, bench/gemm_ab.py, GPT-2's four
 * decode GEMVs in turn: 0.61-0.70x the time, with contiguous rows read by rows_stream;
 * bench/cpu_gemv_rows_probe.c). Included by gemm_impl.h; CV_GEMM_KSPLIT_* in gemm.c. */

typedef struct {
    const FN(cv_gemm) *g;
    const FN(cv_kernels) *kt;
    int parts;
    int cold;        /* B likely comes from memory (gemm_reuse.h) */
    int64_t ld;      /* columns of each part's sums */
    T *sums;         /* parts x ld */
    atomic_int left; /* parts not finished */
} FN(ksplit_job);

static void FN(ksplit_range)(void *ctx, int64_t begin, int64_t end) {
    FN(ksplit_job) *jb = ctx;
    const FN(cv_gemm) *g = jb->g;
    const FN(cv_gemm_term) *tm = &g->terms[0];
    for (int64_t q = begin; q < end; q++) {
        int64_t p0 = tm->k * q / jb->parts, p1 = tm->k * (q + 1) / jb->parts;
        jb->kt->rows(1, p1 - p0, tm->a + p0 * tm->a_cs, tm->a_rs, tm->a_cs,
                     tm->b + p0 * tm->b_rs, tm->b_rs, g->n, jb->sums + q * jb->ld, jb->ld, 0,
                     jb->cold);
        if (atomic_fetch_sub(&jb->left, 1) != 1)
            continue;
        for (int s = 1; s < jb->parts; s++) /* the same order whichever part ends last */
            for (int64_t j = 0; j < g->n; j++)
                jb->sums[j] += jb->sums[s * jb->ld + j];
        g->epilogue(g->ctx, 0, 0, 1, 0, g->n, jb->sums, jb->ld);
    }
}

/* One row, one batch, one term with unit column stride, B past KSPLIT_BYTES (streamed
 * from L3 or memory), at most KSPLIT_COLS columns (the sums stay in L1/L2) and 2 to
 * KSPLIT_THREADS threads (one thread adds all the parts; measured on 2). */
static int FN(ksplit_fits)(const FN(cv_gemm) *g, int nthreads) {
    const FN(cv_gemm_term) *tm = &g->terms[0];
    return nthreads > 1 && nthreads <= CV_GEMM_KSPLIT_THREADS && g->m == 1 && g->nbatch == 1 &&
           g->nterms == 1 && tm->b_cs == 1 && tm->k >= 8 * nthreads &&
           g->n <= CV_GEMM_KSPLIT_COLS &&
           (double)tm->k * g->n * sizeof(T) >= CV_GEMM_KSPLIT_BYTES;
}

static int FN(ksplit)(const FN(cv_gemm) *g, const FN(cv_kernels) *kt, int nthreads) {
    const FN(cv_gemm_term) *tm = &g->terms[0];
    FN(ksplit_job) jb = {.g = g, .kt = kt, .parts = nthreads,
                         .cold = cv_reuse_cold(tm->b, tm->k * tm->b_rs * (int64_t)sizeof(T))};
    jb.ld = (g->n + kt->rw - 1) / kt->rw * kt->rw;
    jb.sums = cv_ws_get((size_t)nthreads * jb.ld * sizeof(T));
    if (!jb.sums)
        return -1;
    atomic_init(&jb.left, nthreads);
    cv_parallel_for(nthreads, 1, FN(ksplit_range), &jb);
    cv_ws_put(jb.sums);
    return 0;
}
