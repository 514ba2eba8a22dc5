/* Declarations shared between the runtime's own translation units. */
#ifndef CUVIL_AOT_INTERNAL_H
#define CUVIL_AOT_INTERNAL_H

#include "cuvil_aot/runtime.h"

int cv_cpu_detected_level(void);
/* Names of the psABI v2-v4 features this CPU reports, for info(). */
const char *const *cv_cpu_features(int *count);
int cv_cpu_level(void);
void cv_set_cpu_level(int level);
int cv_num_threads(void);
int cv_set_num_threads(int n);
void cv_parallel_for(int64_t n, int64_t grain, cv_range_fn fn, void *ctx);
/* The API's gemm_f32/gemm_f64 (runtime.h names the structs cv_gemm_f32/f64,
 * so the functions take another name). */
int cv_run_gemm_f32(const cv_gemm_f32 *g);
int cv_run_gemm_f64(const cv_gemm_f64 *g);
int cv_run_gemm_bf16(const cv_gemm_bf16 *g); /* gemm_bf16.c */
/* The bfloat16 GEMM's kernel a call now runs ("amx", "avx512", "plain"), for info(); the
 * test hook's limit: none of those before `name` (-1: no such kernel). */
const char *cv_bf16_kernel_name(void);
int cv_bf16_limit_kernel(const char *name);
int cv_run_gemm_q8(const cv_gemm_q8 *g);     /* gemm_q8.c */
/* outbuf.c: the API's out_* allocator, its cache limit (bytes, 0 = off) and
 * state, and the fork handler registration. */
void *cv_out_malloc(void *ctx, size_t n);
void *cv_out_calloc(void *ctx, size_t nelem, size_t elsize);
void *cv_out_realloc(void *ctx, void *p, size_t n);
void cv_out_free(void *ctx, void *p, size_t size);
void cv_out_cache_limit(size_t limit);
void cv_out_cache_state(size_t *limit, size_t *held, int *blocks);
void cv_out_init(void);

#endif
