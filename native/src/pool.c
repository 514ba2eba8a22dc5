/* The persistent thread pool behind cv_parallel_for.
 *
 * One job runs at a time. A caller takes the pool with a try-lock (`busy`);
 * whoever fails runs its work inline instead of waiting, so two callers never
 * deadlock and a nested call from inside a task simply runs on its thread.
 * The caller publishes the job, bumps `gen` and takes part itself; chunks are
 * handed out by an atomic counter. Idle workers spin briefly on `gen` (so
 * back-to-back calls wake them in well under a microsecond) and then sleep on
 * a condition variable (a futex wake, a few microseconds).
 *
 * Job lifetime: a worker enters a job by incrementing `active` and then
 * checking that `job_gen` still names the job it saw; the caller closes the
 * job by clearing `job_gen` and then waits for `active` to drain. Both sides
 * use sequentially consistent atomics, so either the worker sees the job
 * closed or the caller sees the worker inside; a late worker never touches a
 * finished job's fn/ctx.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

#define CV_MAX_THREADS 1024
/* At most this many chunks per thread: enough that a thread slowed down
 * (preempted, or given heavier chunks) leaves little to wait for at the end,
 * few enough that taking a chunk (one atomic add) stays negligible. */
#define CV_CHUNKS_PER_THREAD 16
/* Pause iterations a worker spins before it sleeps (~30-60 us on x86). */
#define CV_SPIN_ITERS 2000

static struct {
    pthread_mutex_t lock; /* guards the sleep/wake handshake only */
    pthread_cond_t wake;
    atomic_int busy;      /* the try-lock a caller holds for one job */
    atomic_int nthreads;  /* wanted total, caller included; 0 = default */
    int nworkers;         /* worker threads running */
    pthread_t *threads;
    atomic_uint gen;      /* bumped to publish a job or a stop */
    atomic_uint job_gen;  /* gen of the open job, 0 when closed */
    atomic_int sleepers;
    atomic_int stop;
    atomic_int active;    /* workers inside the current job */
    cv_range_fn fn;       /* the job, valid while job_gen != 0 */
    void *ctx;
    int64_t n, nchunks;
    atomic_int_fast64_t next, done;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static _Thread_local int in_task;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static int count_cpus(void) {
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The CPUs this process may use, counted once (a syscall per call is not
 * free at microsecond scale). */
static int default_threads(void) {
    static atomic_int cached;
    int n = atomic_load_explicit(&cached, memory_order_relaxed);
    if (!n) {
        n = count_cpus();
        atomic_store_explicit(&cached, n, memory_order_relaxed);
    }
    return n;
}

int cv_num_threads(void) {
    int n = atomic_load(&pool.nthreads);
    if (!n)
        n = default_threads();
    return n > CV_MAX_THREADS ? CV_MAX_THREADS : n;
}

/* Run chunks of the open job until none is left. */
static void run_chunks(void) {
    int64_t per = pool.n / pool.nchunks, rem = pool.n % pool.nchunks;
    for (;;) {
        int64_t c = atomic_fetch_add(&pool.next, 1);
        if (c >= pool.nchunks)
            return;
        int64_t begin = c * per + (c < rem ? c : rem);
        pool.fn(pool.ctx, begin, begin + per + (c < rem));
        atomic_fetch_add(&pool.done, 1);
    }
}

static unsigned wait_for_gen(unsigned seen) {
    unsigned g;
    for (int i = 0; i < CV_SPIN_ITERS; i++) {
        if ((g = atomic_load(&pool.gen)) != seen)
            return g;
        cpu_relax();
    }
    pthread_mutex_lock(&pool.lock);
    atomic_fetch_add(&pool.sleepers, 1);
    while ((g = atomic_load(&pool.gen)) == seen)
        pthread_cond_wait(&pool.wake, &pool.lock);
    atomic_fetch_sub(&pool.sleepers, 1);
    pthread_mutex_unlock(&pool.lock);
    return g;
}

static void *worker_main(void *arg) {
    unsigned seen = (unsigned)(uintptr_t)arg;
    in_task = 1; /* anything a worker runs is inside a task */
    for (;;) {
        seen = wait_for_gen(seen);
        if (atomic_load(&pool.stop))
            return NULL;
        atomic_fetch_add(&pool.active, 1);
        if (atomic_load(&pool.job_gen) == seen)
            run_chunks();
        atomic_fetch_sub(&pool.active, 1);
    }
}

/* Publish a new generation and wake sleeping workers. Returns it. */
static unsigned bump_gen(int open_job) {
    unsigned g = atomic_load(&pool.gen) + 1;
    if (g == 0)
        g = 1; /* 0 means "no job" in job_gen */
    if (open_job)
        atomic_store(&pool.job_gen, g);
    atomic_store(&pool.gen, g);
    if (atomic_load(&pool.sleepers) > 0) {
        pthread_mutex_lock(&pool.lock);
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.lock);
    }
    return g;
}

/* After fork only the forking thread exists in the child: forget the
 * workers and every lock state they or other threads held. */
static void reset_after_fork(void) {
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.wake, NULL);
    free(pool.threads);
    pool.threads = NULL;
    pool.nworkers = 0;
    atomic_store(&pool.sleepers, 0);
    atomic_store(&pool.active, 0);
    atomic_store(&pool.job_gen, 0);
    atomic_store(&pool.stop, 0);
    atomic_store(&pool.busy, 0);
    in_task = 0;
}

static void register_atfork(void) { pthread_atfork(NULL, NULL, reset_after_fork); }

/* Start the workers (busy held). On failure runs with whatever started. */
static void start_workers(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_atfork);
    int want = cv_num_threads() - 1;
    pool.threads = want > 0 ? malloc(sizeof(pthread_t) * (size_t)want) : NULL;
    if (!pool.threads)
        return;
    uintptr_t seen = atomic_load(&pool.gen);
    while (pool.nworkers < want &&
           pthread_create(&pool.threads[pool.nworkers], NULL, worker_main, (void *)seen) == 0)
        pool.nworkers++;
}

/* Stop and join every worker (busy held). */
static void stop_workers(void) {
    if (!pool.threads)
        return;
    atomic_store(&pool.stop, 1);
    bump_gen(0);
    for (int i = 0; i < pool.nworkers; i++)
        pthread_join(pool.threads[i], NULL);
    atomic_store(&pool.stop, 0);
    free(pool.threads);
    pool.threads = NULL;
    pool.nworkers = 0;
}

static int try_acquire(void) {
    int expected = 0;
    return atomic_compare_exchange_strong(&pool.busy, &expected, 1);
}

static void run_inline(int64_t n, cv_range_fn fn, void *ctx) {
    int outer = in_task;
    in_task = 1;
    fn(ctx, 0, n);
    in_task = outer;
}

/* Wait for the chunks others took, then close the job. */
static void finish_job(void) {
    for (long spins = 0; atomic_load(&pool.done) < pool.nchunks; spins++) {
        if (spins < CV_SPIN_ITERS)
            cpu_relax();
        else
            sched_yield(); /* a long chunk: let others use this core */
    }
    atomic_store(&pool.job_gen, 0);
    while (atomic_load(&pool.active) > 0)
        cpu_relax();
}

void cv_parallel_for(int64_t n, int64_t grain, cv_range_fn fn, void *ctx) {
    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    int nthreads = cv_num_threads();
    if (n <= grain || nthreads <= 1 || in_task || !try_acquire()) {
        run_inline(n, fn, ctx);
        return;
    }
    if (!pool.threads)
        start_workers();
    int64_t nchunks = (int64_t)(pool.nworkers + 1) * CV_CHUNKS_PER_THREAD;
    if (nchunks > n / grain)
        nchunks = n / grain;
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.nchunks = nchunks;
    atomic_store(&pool.next, 0);
    atomic_store(&pool.done, 0);
    bump_gen(1);
    in_task = 1;
    run_chunks();
    in_task = 0;
    finish_job();
    atomic_store(&pool.busy, 0);
}

int cv_set_num_threads(int n) {
    if (n < 0 || n > CV_MAX_THREADS || in_task)
        return -1;
    /* Resizing waits for the running job; configuring is rare. */
    while (!try_acquire())
        sched_yield();
    if (n != atomic_load(&pool.nthreads)) {
        stop_workers(); /* the next parallel call starts the new count */
        atomic_store(&pool.nthreads, n);
    }
    atomic_store(&pool.busy, 0);
    return 0;
}
