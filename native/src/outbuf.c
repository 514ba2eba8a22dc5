/* Memory for the arrays generated wrappers allocate, with a small cache of
 * large blocks.
 *
 * A fresh 64 MiB output costs the kernel's page faults and page zeroing on
 * every call (softmax 4096x4096: ~40% of the call), and so does each large
 * intermediate of a call (a BERT-base layer's dozen at 8 x 128: 52 ms a call
 * against 40). Blocks of at least
 * CV_OUT_MIN bytes that come back are kept (at most CV_OUT_SLOTS blocks and
 * `limit` bytes, oldest evicted first) and handed to the next allocation
 * they fit, already mapped. The functions have the signatures of NumPy's
 * PyDataMemAllocator: the wrappers install them as the memory handler of the
 * output arrays they make (pywrap.h), so NumPy returns a block here when the
 * array dies, from any thread, also after its module is gone (this library is
 * never unloaded).
 *
 * Each block starts with a header that records its usable size (realloc needs
 * it; NumPy passes the array's size to free, which may be smaller); the data
 * follow 64 bytes later, 64-byte aligned.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#define CV_OUT_HEADER 64
#define CV_OUT_MIN ((size_t)1 << 20)
#define CV_OUT_HUGE ((size_t)4 << 20)
#define CV_OUT_SLOTS 32 /* a call's large intermediates and outputs (pywrap.h's cv_buffer) */
#define CV_OUT_DEFAULT_LIMIT ((size_t)256 << 20)

typedef struct {
    size_t cap; /* usable bytes after the header */
} block_header;

static struct {
    pthread_mutex_t lock;
    size_t limit; /* bytes the cache may hold; 0 turns it off */
    size_t held;
    int n;
    char *slot[CV_OUT_SLOTS]; /* cached data pointers, oldest first */
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER, .limit = CV_OUT_DEFAULT_LIMIT};

static size_t cap_of(void *p) { return ((block_header *)((char *)p - CV_OUT_HEADER))->cap; }

static void release(void *p) { free((char *)p - CV_OUT_HEADER); }

static void *fresh(size_t n) {
    if (n >= CV_OUT_MIN)
        n = (n + 4095) & ~(size_t)4095; /* page multiples: sizes that differ a little fit */
    if (n > SIZE_MAX - CV_OUT_HEADER - 4096)
        return NULL;
    void *raw;
    if (posix_memalign(&raw, 64, CV_OUT_HEADER + n) != 0)
        return NULL;
    ((block_header *)raw)->cap = n;
    if (n >= CV_OUT_HUGE) /* as NumPy does: fewer faults and TLB misses (THP "madvise") */
        madvise((void *)(((uintptr_t)raw + 4095) & ~(uintptr_t)4095), n, MADV_HUGEPAGE);
    return (char *)raw + CV_OUT_HEADER;
}

/* Takes slot i out of the cache (lock held). */
static void *remove_at(int i) {
    void *p = cache.slot[i];
    cache.held -= cap_of(p);
    memmove(&cache.slot[i], &cache.slot[i + 1], (size_t)(cache.n - i - 1) * sizeof cache.slot[0]);
    cache.n--;
    return p;
}

/* The smallest cached block that holds n bytes without wasting more than an
 * eighth of itself, taken out of the cache; NULL when none fits. */
static void *take(size_t n) {
    pthread_mutex_lock(&cache.lock);
    int best = -1;
    for (int i = 0; i < cache.n; i++) {
        size_t cap = cap_of(cache.slot[i]);
        if (cap >= n && cap - n <= cap / 8 && (best < 0 || cap < cap_of(cache.slot[best])))
            best = i;
    }
    void *p = best >= 0 ? remove_at(best) : NULL;
    pthread_mutex_unlock(&cache.lock);
    return p;
}

void *cv_out_malloc(void *ctx, size_t n) {
    (void)ctx;
    void *p = n >= CV_OUT_MIN ? take(n) : NULL;
    return p ? p : fresh(n);
}

void *cv_out_calloc(void *ctx, size_t nelem, size_t elsize) {
    if (elsize && nelem > SIZE_MAX / elsize)
        return NULL;
    void *p = cv_out_malloc(ctx, nelem * elsize);
    if (p)
        memset(p, 0, nelem * elsize);
    return p;
}

void cv_out_free(void *ctx, void *p, size_t size) {
    (void)ctx;
    (void)size; /* the header knows the block's real size */
    if (!p)
        return;
    size_t cap = cap_of(p);
    void *victims[CV_OUT_SLOTS];
    int k = 0;
    pthread_mutex_lock(&cache.lock);
    if (cap >= CV_OUT_MIN && cap <= cache.limit) {
        while (cache.n > 0 && (cache.n == CV_OUT_SLOTS || cache.held + cap > cache.limit))
            victims[k++] = remove_at(0); /* oldest first */
        cache.slot[cache.n++] = p;
        cache.held += cap;
        p = NULL;
    }
    pthread_mutex_unlock(&cache.lock);
    for (int i = 0; i < k; i++)
        release(victims[i]);
    if (p)
        release(p);
}

void *cv_out_realloc(void *ctx, void *p, size_t n) {
    if (!p)
        return cv_out_malloc(ctx, n);
    void *q = cv_out_malloc(ctx, n);
    if (!q)
        return NULL; /* p stays valid, as realloc promises */
    size_t old = cap_of(p);
    memcpy(q, p, old < n ? old : n);
    cv_out_free(ctx, p, old);
    return q;
}

void cv_out_cache_limit(size_t limit) {
    void *victims[CV_OUT_SLOTS];
    pthread_mutex_lock(&cache.lock);
    cache.limit = limit;
    int k = 0;
    while (cache.n > 0 && cache.held > cache.limit)
        victims[k++] = remove_at(0); /* oldest first */
    pthread_mutex_unlock(&cache.lock);
    for (int i = 0; i < k; i++)
        release(victims[i]);
}

void cv_out_cache_state(size_t *limit, size_t *held, int *blocks) {
    pthread_mutex_lock(&cache.lock);
    *limit = cache.limit;
    *held = cache.held;
    *blocks = cache.n;
    pthread_mutex_unlock(&cache.lock);
}

/* After fork only the forking thread exists: another may have held the lock. */
static void reset_after_fork(void) { pthread_mutex_init(&cache.lock, NULL); }

static void register_atfork(void) { pthread_atfork(NULL, NULL, reset_after_fork); }

void cv_out_init(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_atfork);
}
