/* The dots kernel alone on the BERT-base layer's three x @ w.T shapes at 16 rows
 * (16x768x768, 16x768x3072, 16x3072x768, distinct weights, one after the other), run
 * by this probe's own threads (a spin barrier, each thread one contiguous half of the
 * columns in chunks of 512, as the runtime's small path splits them), so the pool and
 * the epilogue are out of the picture. Several runtime builds are timed in turn (ABBA)
 * through their cv_kernels_f32_avx512 table; each thread's busy time is also kept,
 * to see imbalance. Output: bench/cpu_dots16_probe.txt.
 *
 *   L=$(python -c "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))")
 *   gcc -O2 -pthread bench/cpu_dots16_probe.c -o /tmp/dp -Wl,--no-as-needed -ldl \
 *       -L$L -lpython3.11 -Wl,-rpath,$L && /tmp/dp 2 /tmp/a.so /tmp/b.so
 * (the runtime .so wants libpython's symbols; THREADS 1 or 2, at most 8 builds) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*dots_fn)(int64_t m, int64_t k, const float *a, int64_t a_rs, const float *b,
                        int64_t b_cs, int64_t ncols, float *c, int64_t ldc, int accumulate);
/* the head of cv_kernels_f32 (gemm_kernels.h): 7 ints, then 5 function pointers */
typedef struct {
    int ints[7];
    void *kern, *kern_short, *pack_b, *rows;
    dots_fn dots;
} kernels;

#define M 16
#define W 512
#define NSHAPES 3
#define MAXB 8
static const int64_t K[NSHAPES] = {768, 768, 3072}, N[NSHAPES] = {768, 3072, 768};
static float *x[NSHAPES], *w[NSHAPES], *want[NSHAPES];
static dots_fn fns[MAXB];
static int nthreads;
static atomic_int gen, done;
static volatile int cur; /* the build the next call runs */
static double busy[2];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static float *cbuf[2];

/* Thread t's share of every shape: columns [n t / T, n (t + 1) / T) in chunks of W. */
static void share(int t, int check) {
    double t0 = now();
    for (int s = 0; s < NSHAPES; s++) {
        int64_t j0 = N[s] * t / nthreads, j1 = N[s] * (t + 1) / nthreads;
        for (int64_t j = j0; j < j1; j += W) {
            int64_t cols = j1 - j < W ? j1 - j : W;
            fns[cur](M, K[s], x[s], K[s], w[s] + j * K[s], K[s], cols, cbuf[t], W, 0);
            for (int i = 0; check && i < M; i++)
                for (int64_t q = 0; q < cols; q++) {
                    float d = cbuf[t][i * W + q] - want[s][i * N[s] + j + q];
                    if (d > 1e-3f || d < -1e-3f) {
                        printf("wrong: shape %d row %d col %ld\n", s, i, (long)(j + q));
                        exit(1);
                    }
                }
        }
    }
    busy[t] += now() - t0;
}

static void *worker(void *arg) {
    (void)arg;
    cpu_set_t cs;
    CPU_ZERO(&cs);
    CPU_SET(1, &cs);
    pthread_setaffinity_np(pthread_self(), sizeof cs, &cs);
    for (int g = 1;; g++) {
        while (atomic_load(&gen) < g)
            __builtin_ia32_pause();
        share(1, 0);
        atomic_fetch_add(&done, 1);
    }
    return NULL;
}

static void call(int check) {
    if (nthreads == 2)
        atomic_fetch_add(&gen, 1);
    share(0, check);
    if (nthreads == 2) {
        while (atomic_load(&done) < atomic_load(&gen))
            __builtin_ia32_pause();
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 3)
        return fprintf(stderr, "usage: %s THREADS BUILD.so...\n", argv[0]), 1;
    nthreads = atoi(argv[1]);
    int nb = argc - 2;
    for (int b = 0; b < nb; b++) {
        void *h = dlopen(argv[2 + b], RTLD_NOW | RTLD_LOCAL);
        const kernels *kt = h ? dlsym(h, "cv_kernels_f32_avx512") : NULL;
        if (!kt)
            return fprintf(stderr, "%s: %s\n", argv[2 + b], dlerror()), 1;
        fns[b] = kt->dots;
    }
    srand(1);
    double flop = 0, bytes = 0;
    for (int s = 0; s < NSHAPES; s++) {
        x[s] = aligned_alloc(64, M * K[s] * 4);
        w[s] = aligned_alloc(64, N[s] * K[s] * 4);
        want[s] = malloc(M * N[s] * 4);
        for (int64_t i = 0; i < M * K[s]; i++)
            x[s][i] = (float)rand() / RAND_MAX - 0.5f;
        for (int64_t i = 0; i < N[s] * K[s]; i++)
            w[s][i] = ((float)rand() / RAND_MAX - 0.5f) * 0.05f;
        for (int i = 0; i < M; i++)
            for (int64_t j = 0; j < N[s]; j++) {
                double d = 0;
                for (int64_t p = 0; p < K[s]; p++)
                    d += (double)x[s][i * K[s] + p] * w[s][j * K[s] + p];
                want[s][i * N[s] + j] = (float)d;
            }
        flop += 2.0 * M * K[s] * N[s];
        bytes += 4.0 * K[s] * N[s];
    }
    for (int t = 0; t < 2; t++)
        cbuf[t] = aligned_alloc(64, M * W * 4);
    cpu_set_t cs;
    CPU_ZERO(&cs);
    CPU_SET(0, &cs);
    pthread_setaffinity_np(pthread_self(), sizeof cs, &cs);
    pthread_t th;
    if (nthreads == 2)
        pthread_create(&th, NULL, worker, NULL);
    for (int b = 0; b < nb; b++) { /* check (thread 0's share; thread 1's as the same code) */
        cur = b;
        call(1);
    }
    enum { SAMPLES = 40, REPS = 20 };
    static double times[MAXB][SAMPLES], bsy[MAXB][2];
    for (int s = 0; s < SAMPLES; s++)
        for (int q = 0; q < nb; q++) {
            int b = s % 2 ? nb - 1 - q : q;
            cur = b;
            busy[0] = busy[1] = 0;
            double t0 = now();
            for (int r = 0; r < REPS; r++)
                call(0);
            times[b][s] = (now() - t0) / REPS;
            bsy[b][0] += busy[0] / REPS / SAMPLES;
            bsy[b][1] += busy[1] / REPS / SAMPLES;
        }
    printf("%d thread(s), 16x768x768 then 16x768x3072 then 16x3072x768 (%.1f MB of weights)\n",
           nthreads, bytes / 1e6);
    for (int b = 0; b < nb; b++) {
        qsort(times[b], SAMPLES, sizeof(double), cmp);
        double med = times[b][SAMPLES / 2];
        printf("  %s: median %7.1f us (%5.1f GFLOP/s, %5.1f GB/s)  min %7.1f  busy %.1f / %.1f "
               "us\n",
               argv[2 + b], med * 1e6, flop / med / 1e9, bytes / med / 1e9, times[b][0] * 1e6,
               bsy[b][0] * 1e6, bsy[b][1] * 1e6);
    }
    return 0;
}
