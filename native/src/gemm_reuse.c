/* The reuse-distance estimate of gemm_reuse.h: a small table of the matrices last
 * streamed, each with the running count of bytes streamed at its last use. */
#include "gemm_reuse.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#define SLOTS 64 /* matrices remembered; the least recently used one is replaced */

typedef struct {
    const void *p;
    int64_t bytes;
    int64_t seen; /* `streamed` right after its last use */
} slot;

static slot table[SLOTS];
static int64_t streamed; /* bytes of all the uses recorded */
static atomic_flag busy = ATOMIC_FLAG_INIT;

static int64_t limit; /* half the L3: set at the first use */

/* Half the L3 as sysfs gives it (sysconf's cpuid answer can be wrong in a VM: 320 MB
 * for this 32 MB one), 32 MB where none is given. */
static int64_t half_l3(void) {
    long kb = 0;
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    if (f) {
        if (fscanf(f, "%ldK", &kb) != 1)
            kb = 0;
        fclose(f);
    }
    return (kb > 0 ? (int64_t)kb << 10 : (int64_t)32 << 20) / 2;
}

/* After fork only the forking thread exists: another may have held the flag. */
static void reset_after_fork(void) { atomic_flag_clear(&busy); }

static void register_atfork(void) { pthread_atfork(NULL, NULL, reset_after_fork); }

int cv_reuse_cold(const void *p, int64_t bytes) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_atfork);
    while (atomic_flag_test_and_set_explicit(&busy, memory_order_acquire))
        ;
    if (!limit)
        limit = half_l3();
    slot *hit = 0, *oldest = &table[0];
    for (int s = 0; s < SLOTS; s++) {
        if (table[s].p == p && table[s].bytes == bytes)
            hit = &table[s];
        if (table[s].seen < oldest->seen)
            oldest = &table[s];
    }
    int cold = !hit || streamed - hit->seen > limit;
    slot *mine = hit ? hit : oldest;
    streamed += bytes;
    *mine = (slot){p, bytes, streamed};
    atomic_flag_clear_explicit(&busy, memory_order_release);
    return cold;
}
