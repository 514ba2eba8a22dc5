/* GEMM with a fused epilogue: a simple tiled version (to be replaced by the
 * packed, register-blocked kernels). */
#include <stdlib.h>

#include "internal.h"

#define TILE_M 64
#define TILE_N 64

#define DEFINE_GEMM(T, SFX)                                                            \
    typedef struct {                                                                   \
        const cv_gemm_##SFX *g;                                                        \
        int64_t tiles_m, tiles_n;                                                      \
    } job_##SFX;                                                                       \
                                                                                       \
    static void tile_##SFX(const cv_gemm_##SFX *g, int64_t bt, int64_t i0, int64_t i1, \
                           int64_t j0, int64_t j1, T *acc) {                           \
        int64_t w = j1 - j0;                                                           \
        for (int64_t x = 0; x < (i1 - i0) * w; x++)                                    \
            acc[x] = 0;                                                                \
        for (int t = 0; t < g->nterms; t++) {                                          \
            const cv_gemm_term_##SFX *tm = &g->terms[t];                               \
            const T *a = tm->a + bt * tm->a_bs, *b = tm->b + bt * tm->b_bs;            \
            for (int64_t i = i0; i < i1; i++)                                          \
                for (int64_t p = 0; p < tm->k; p++) {                                  \
                    T av = a[i * tm->a_rs + p * tm->a_cs];                             \
                    const T *brow = b + p * tm->b_rs;                                  \
                    for (int64_t j = j0; j < j1; j++)                                  \
                        acc[(i - i0) * w + (j - j0)] += av * brow[j * tm->b_cs];       \
                }                                                                      \
        }                                                                              \
        g->epilogue(g->ctx, bt, i0, i1, j0, j1, acc, w);                               \
    }                                                                                  \
                                                                                       \
    static void run_##SFX(void *ctx, int64_t begin, int64_t end) {                     \
        const job_##SFX *jb = ctx;                                                     \
        const cv_gemm_##SFX *g = jb->g;                                                \
        T acc[TILE_M * TILE_N];                                                        \
        for (int64_t x = begin; x < end; x++) {                                        \
            int64_t per_batch = jb->tiles_m * jb->tiles_n;                             \
            int64_t bt = x / per_batch, r = x % per_batch;                             \
            int64_t i0 = r / jb->tiles_n * TILE_M, j0 = r % jb->tiles_n * TILE_N;      \
            int64_t i1 = i0 + TILE_M < g->m ? i0 + TILE_M : g->m;                      \
            int64_t j1 = j0 + TILE_N < g->n ? j0 + TILE_N : g->n;                      \
            tile_##SFX(g, bt, i0, i1, j0, j1, acc);                                    \
        }                                                                              \
    }                                                                                  \
                                                                                       \
    int cv_run_gemm_##SFX(const cv_gemm_##SFX *g) {                                      \
        if (g->nbatch <= 0 || g->m <= 0 || g->n <= 0)                                  \
            return 0;                                                                  \
        job_##SFX jb = {g, (g->m + TILE_M - 1) / TILE_M, (g->n + TILE_N - 1) / TILE_N}; \
        cv_parallel_for(g->nbatch * jb.tiles_m * jb.tiles_n, 1, run_##SFX, &jb);       \
        return 0;                                                                      \
    }

DEFINE_GEMM(float, f32)
DEFINE_GEMM(double, f64)
