/* Workspace memory for the GEMM driver: one 64-byte aligned block per call,
 * with the last freed block kept for the next call, so repeated GEMMs do not
 * pay for mmap and page faults each time. */
#ifndef CUVIL_AOT_GEMM_WS_H
#define CUVIL_AOT_GEMM_WS_H

#include <stdatomic.h>
#include <stddef.h>

/* A block of at least `bytes` (64-byte aligned), or NULL when out of memory. */
void *cv_ws_get(size_t bytes);
void cv_ws_put(void *p);

/* Claim a free per-thread slot of a workspace (busy[s]: 1 while slot s is in use). A
 * job never has more tasks running at once than the pool has threads, so a slot frees
 * up soon if none is free now (only a concurrent resize of the pool can make that
 * happen). */
int cv_ws_claim_slot(atomic_int *busy, int nslots);

/* Round up to a multiple of 64 bytes. */
static inline size_t cv_ws_round(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

#endif
