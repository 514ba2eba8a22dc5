/* See gemm_ws.h. The cache is a single atomic pointer (no lock, so a fork
 * in the middle of a call cannot leave it locked in the child). */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "gemm_kernels.h"
#include "gemm_ws.h"

/* The block's capacity sits in its first 64 bytes, before the data. */
#define HEADER 64
/* Larger blocks go back to the allocator instead of being kept. */
#define KEEP_MAX ((size_t)64 << 20)

static _Atomic(char *) cached;

static size_t capacity(const char *block) { return *(const size_t *)block; }

void *cv_ws_get(size_t bytes) {
    char *block = atomic_exchange(&cached, NULL);
    if (block && capacity(block) >= bytes)
        return block + HEADER;
    free(block);
    if (bytes > (size_t)-1 - HEADER - 64)
        return NULL;
    void *fresh;
    if (posix_memalign(&fresh, 64, HEADER + cv_ws_round(bytes)) != 0)
        return NULL;
    *(size_t *)fresh = bytes;
    return (char *)fresh + HEADER;
}

void cv_ws_put(void *p) {
    if (!p)
        return;
    char *block = (char *)p - HEADER;
    if (capacity(block) > KEEP_MAX) {
        free(block);
        return;
    }
    /* Keep the larger of the new and the cached block. */
    char *old = atomic_exchange(&cached, block);
    if (old && capacity(old) > capacity(block))
        old = atomic_exchange(&cached, old);
    free(old);
}

int cv_ws_claim_slot(atomic_int *busy, int nslots) {
    for (;;) {
        for (int s = 0; s < nslots; s++) {
            int idle = 0;
            if (atomic_compare_exchange_strong(&busy[s], &idle, 1))
                return s;
        }
        sched_yield();
    }
}

void *cv_dots_ws(void) {
    static _Thread_local char ws[CV_DOTS_WS] __attribute__((aligned(64)));
    return ws;
}
