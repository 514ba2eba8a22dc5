/* ThreadSanitizer check of the runtime's shared state (issue 4): the thread pool
 * (pool.c) and the output-block cache (outbuf.c), driven from several threads at
 * once as Python threads drive them (the GIL released around kernels):
 *  - callers race for the pool: one runs the job with the workers, the others
 *    inline; nested calls from inside a task run inline;
 *  - jobs back to back, and resizes (cv_set_num_threads) between them;
 *  - output blocks allocated, grown and freed from every thread, the cache
 *    resized meanwhile.
 * Every element each job writes is checked afterwards (poisoned first). Built and
 * run by tests/test_concurrency.py (CI), which first runs it with `control` as its
 * argument: a job whose chunks all add to one plain counter; TSan must report that
 * race, or its silence on the real run proves nothing. Checked by hand: publishing
 * the job after bump_gen, closing a job without waiting for `active`, and leaving
 * take()'s lock early are each reported (the results stayed right in the second).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CALLERS 4
#define ROUNDS 300
#define N 4096

typedef struct {
    int *out;       /* element i of the range is out[i] */
    int64_t offset; /* ... element offset + i of the whole array */
    int value;
} fill_job;

static void fill(void *ctx, int64_t begin, int64_t end) {
    const fill_job *job = ctx;
    for (int64_t i = begin; i < end; i++) job->out[i] = job->value + (int)(job->offset + i);
}

static void nested(void *ctx, int64_t begin, int64_t end) {
    const fill_job *job = ctx;
    fill_job inner = {job->out + begin, job->offset + begin, job->value};
    cv_parallel_for(end - begin, 16, fill, &inner); /* inside a task: runs inline */
}

static atomic_int failures;

static void check(const int *out, int value) {
    for (int i = 0; i < N; i++)
        if (out[i] != value + i) {
            atomic_fetch_add(&failures, 1);
            return;
        }
}

static void *caller(void *arg) {
    const int id = (int)(intptr_t)arg;
    int *out = malloc(N * sizeof *out);
    for (int round = 0; round < ROUNDS; round++) {
        fill_job job = {out, 0, id * 100000 + round};
        memset(out, 0xff, N * sizeof *out); /* poisoned: an unwritten element shows */
        cv_parallel_for(N, 64, round % 3 ? fill : nested, &job);
        check(out, job.value);
        /* outputs: allocate, grow, free, from every thread */
        size_t size = ((size_t)1 << 20) + (size_t)(round % 5) * 4096;
        char *block = cv_out_malloc(NULL, size);
        if (!block) {
            atomic_fetch_add(&failures, 1);
            continue;
        }
        block[0] = (char)round;
        block[size - 1] = (char)id;
        char *grown = cv_out_realloc(NULL, block, size * 2);
        if (!grown || grown[0] != (char)round || grown[size - 1] != (char)id)
            atomic_fetch_add(&failures, 1);
        cv_out_free(NULL, grown ? grown : block, size * 2);
        if (id == 0 && round % 50 == 25) {
            cv_set_num_threads(round % 100 == 25 ? 3 : 0); /* resize between jobs */
            cv_out_cache_limit(round % 100 == 25 ? ((size_t)8 << 20) : ((size_t)256 << 20));
        }
    }
    free(out);
    return NULL;
}

static int plain_counter;
static atomic_int racers;

static void racy(void *ctx, int64_t begin, int64_t end) {
    (void)ctx;
    /* Hold the first chunks until a second thread runs one (or ~2 s pass): on a loaded
       machine the caller may otherwise take every chunk itself, and one thread cannot
       race. Relaxed atomics order nothing, so the planted race stays visible to TSan. */
    atomic_fetch_add_explicit(&racers, 1, memory_order_relaxed);
    for (long spin = 0; spin < 20000000L; spin++) {
        if (atomic_load_explicit(&racers, memory_order_relaxed) >= 2) break;
        sched_yield();
    }
    for (int64_t i = begin; i < end; i++) plain_counter++; /* the planted race */
}

int main(int argc, char **argv) {
    cv_out_init();
    cv_set_num_threads(4);
    if (argc > 1 && strcmp(argv[1], "control") == 0) {
        for (int i = 0; i < 20; i++) cv_parallel_for(N, 16, racy, NULL);
        printf("control: counter %d\n", plain_counter);
        return 0;
    }
    pthread_t threads[CALLERS];
    for (int i = 0; i < CALLERS; i++)
        pthread_create(&threads[i], NULL, caller, (void *)(intptr_t)i);
    for (int i = 0; i < CALLERS; i++) pthread_join(threads[i], NULL);
    const int bad = atomic_load(&failures);
    printf("%d callers x %d rounds: %d wrong results\n", CALLERS, ROUNDS, bad);
    return bad != 0;
}
