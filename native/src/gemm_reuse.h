/* Whether a matrix a GEMM is about to stream has likely left the L3 since its last use.
 * Prefetching its rows into L2 pays when they come from memory and costs when they sit in
 * the L3 (the prefetches compete with the loads for the load ports): GPT-2's decode step
 * (four GEMVs, 28 MB of weights) 0.78-0.83x the time with them, an FFN of the same two
 * largest shapes (19 MB, L3-resident) 1.14-1.21x. The same shapes differ only in what runs
 * between two uses of a matrix, so that is what decides. */
#ifndef CUVIL_AOT_GEMM_REUSE_H
#define CUVIL_AOT_GEMM_REUSE_H

#include <stdint.h>

/* True when the `bytes` at p are new to this process, or other matrices counted here
 * streamed more than half the L3 since p's last use (its reuse distance: what else the
 * model reads, activations and caches, is not counted, hence half). Records this use. */
int cv_reuse_cold(const void *p, int64_t bytes);

#endif
