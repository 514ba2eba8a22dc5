/* Declarations shared between the runtime's own translation units. */
#ifndef CUVIL_AOT_INTERNAL_H
#define CUVIL_AOT_INTERNAL_H

#include "cuvil_aot/runtime.h"

int cv_cpu_detected_level(void);
int cv_cpu_level(void);
void cv_set_cpu_level(int level);
int cv_num_threads(void);
int cv_set_num_threads(int n);
void cv_parallel_for(int64_t n, int64_t grain, cv_range_fn fn, void *ctx);
int cv_gemm_f32(const cv_gemm_f32 *g);
int cv_gemm_f64(const cv_gemm_f64 *g);

#endif
