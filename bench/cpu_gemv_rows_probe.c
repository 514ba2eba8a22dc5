/* GPT-2's four decode GEMVs (x @ W, W (K, N) row-major: 768x2304, 768x768, 768x3072,
 * 3072x768, 28 MB, each its own call) on this probe's own 2 threads (spin barrier, as the
 * runtime's pool), several ways interleaved, medians of samples: column halves (as the
 * small path splits them) through the runtime's rows kernel (a build's
 * cv_kernels_f32_avx512, dlopen'd) or 8 rows at a time with a prefetch 8 rows on, and k
 * halves (each thread one contiguous half of W's bytes, its partial sums in L1/L2, the
 * second thread to finish adds both) through the runtime's kernel or 1, 8 or 16 rows at a
 * time, with or without a prefetch. W comes from malloc (16 bytes past a page start, as
 * NumPy's large arrays) with the 2 MB pages NumPy asks for at 4 MB and more, unless
 * HUGE=0. Output: bench/cpu_gemv_rows_probe.txt.
 *
 *   L=$(python -c "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))")
 *   gcc -O2 -march=native -pthread bench/cpu_gemv_rows_probe.c -o /tmp/gp \
 *       -Wl,--no-as-needed -ldl -L$L -lpython3.11 -Wl,-rpath,$L && /tmp/gp /tmp/ga.so
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

typedef void (*rows_fn)(int64_t m, int64_t k, const float *a, int64_t a_rs, int64_t a_cs,
                        const float *b, int64_t b_rs, int64_t ncols, float *c, int64_t ldc,
                        int accumulate);
typedef struct { /* the head of cv_kernels_f32 (gemm_kernels.h) */
    int ints[7];
    void *kern, *kern_short, *pack_b;
    rows_fn rows;
} kernels;

#define NS 4
static const int64_t K[NS] = {768, 768, 768, 3072}, N[NS] = {2304, 768, 3072, 768};
static float *x[NS], *w[NS], *y[NS], *want[NS];
static float *part[2];         /* per-thread partial sums (k halves) or column-half sums */
static rows_fn rt;
static int mode, shape;
static atomic_int gen, done, fin;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* c[0, n) += sum over rows p of [p0, p1) of a[p] W[p, j0 : j0 + n), R rows at a time,
 * one vector of c per step (R streams of W); pf: each line's `pf` bytes on prefetched. */
static inline __attribute__((always_inline)) void
rows_r(int R, const float *a, const float *W, int64_t ldw, int64_t p0, int64_t p1, int64_t n,
       float *c, int64_t pf) {
    for (int64_t p = p0; p < p1; p += R) {
        __m512 av[16];
        for (int i = 0; i < R; i++)
            av[i] = _mm512_set1_ps(a[p + i]);
        const float *b = W + p * ldw;
        for (int64_t j = 0; j < n; j += 16) {
            for (int i = 0; pf && i < R; i++)
                _mm_prefetch((const char *)(b + i * ldw + j) + pf, _MM_HINT_T0);
            __m512 s = _mm512_load_ps(c + j);
            for (int i = 0; i < R; i++)
                s = _mm512_fmadd_ps(av[i], _mm512_loadu_ps(b + i * ldw + j), s);
            _mm512_store_ps(c + j, s);
        }
    }
}

static const char *names[] = {
    "columns: runtime rows kernel",
    "columns: 8 rows, prefetch 8 rows on",
    "k: runtime rows kernel",
    "k: 8 rows at a time",
    "k: 8 rows, prefetch 8 rows on",
    "k: 16 rows at a time",
    "k: 1 row, prefetch 8 KB on",
    "k: 1 row, prefetch 16 KB on",
};
#define NMODES 8

/* Thread t's share of shape s in the current mode. */
static void share(int t) {
    int s = shape;
    int64_t k = K[s], n = N[s];
    float *c = part[t];
    if (mode <= 1) { /* columns [j0, j1): 64-column groups split as the small path does */
        int64_t width = (n / 64 + 1) / 2 * 64, j0 = t * width, j1 = t ? n : width;
        if (mode == 0)
            rt(1, k, x[s], k, 1, w[s] + j0, n, j1 - j0, c, j1 - j0, 0);
        else {
            memset(c, 0, (j1 - j0) * 4);
            rows_r(8, x[s], w[s] + j0, n, 0, k, j1 - j0, c, 8 * n * 4);
        }
        memcpy(y[s] + j0, c, (j1 - j0) * 4);
        return;
    }
    int64_t h = k / 2, p0 = t * h, p1 = t ? k : h;
    memset(c, 0, n * 4);
    if (mode == 2)
        rt(1, p1 - p0, x[s] + p0, k, 1, w[s] + p0 * n, n, n, c, n, 0);
    else if (mode == 3)
        rows_r(8, x[s], w[s], n, p0, p1, n, c, 0);
    else if (mode == 4)
        rows_r(8, x[s], w[s], n, p0, p1, n, c, 8 * n * 4);
    else if (mode == 5)
        rows_r(16, x[s], w[s], n, p0, p1, n, c, 0);
    else
        rows_r(1, x[s], w[s], n, p0, p1, n, c, mode == 6 ? 8192 : 16384);
    if (atomic_fetch_add(&fin, 1) % 2 == 1) /* the second to finish adds both halves */
        for (int64_t j = 0; j < n; j += 16)
            _mm512_storeu_ps(y[s] + j, _mm512_add_ps(_mm512_load_ps(part[0] + j),
                                                     _mm512_load_ps(part[1] + j)));
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
        share(1);
        atomic_fetch_add(&done, 1);
    }
    return NULL;
}

static void call(void) {
    for (shape = 0; shape < NS; shape++) {
        atomic_fetch_add(&gen, 1);
        share(0);
        while (atomic_load(&done) < atomic_load(&gen))
            __builtin_ia32_pause();
    }
}

static int cmp(const void *a, const void *b) {
    double u = *(const double *)a, v = *(const double *)b;
    return (u > v) - (u < v);
}

static float *alloc(size_t bytes, int huge) {
    char *p = malloc(bytes);
    if (huge && bytes >= ((size_t)4 << 20)) { /* as NumPy's allocator */
        uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
        madvise((void *)a, (uintptr_t)p + bytes - a, MADV_HUGEPAGE);
    }
    return (float *)p;
}

int main(int argc, char **argv) {
    if (argc < 2)
        return fprintf(stderr, "usage: %s RUNTIME.so\n", argv[0]), 1;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    const kernels *kt = h ? dlsym(h, "cv_kernels_f32_avx512") : NULL;
    if (!kt)
        return fprintf(stderr, "%s: %s\n", argv[1], dlerror()), 1;
    rt = kt->rows;
    const char *hv = getenv("HUGE");
    int huge = !hv || atoi(hv);
    srand(1);
    double bytes = 0;
    for (int s = 0; s < NS; s++) {
        x[s] = aligned_alloc(64, K[s] * 4);
        w[s] = alloc(K[s] * N[s] * 4, huge);
        y[s] = aligned_alloc(64, N[s] * 4);
        want[s] = malloc(N[s] * 4);
        for (int64_t i = 0; i < K[s]; i++)
            x[s][i] = (float)rand() / RAND_MAX - 0.5f;
        for (int64_t i = 0; i < K[s] * N[s]; i++)
            w[s][i] = ((float)rand() / RAND_MAX - 0.5f) * 0.05f;
        for (int64_t j = 0; j < N[s]; j++) {
            double d = 0;
            for (int64_t p = 0; p < K[s]; p++)
                d += (double)x[s][p] * w[s][p * N[s] + j];
            want[s][j] = (float)d;
        }
        bytes += 4.0 * K[s] * N[s];
    }
    for (int t = 0; t < 2; t++)
        part[t] = aligned_alloc(64, 4096 * 4);
    cpu_set_t cs;
    CPU_ZERO(&cs);
    CPU_SET(0, &cs);
    pthread_setaffinity_np(pthread_self(), sizeof cs, &cs);
    pthread_t th;
    pthread_create(&th, NULL, worker, NULL);
    for (mode = 0; mode < NMODES; mode++) { /* check every mode */
        call();
        for (int s = 0; s < NS; s++)
            for (int64_t j = 0; j < N[s]; j++)
                if (y[s][j] - want[s][j] > 1e-3f || want[s][j] - y[s][j] > 1e-3f)
                    return printf("%s: wrong at shape %d col %ld\n", names[mode], s, (long)j), 1;
    }
    enum { SAMPLES = 40, REPS = 20 };
    static double times[NMODES][SAMPLES];
    for (int s = 0; s < SAMPLES; s++)
        for (int q = 0; q < NMODES; q++) {
            mode = s % 2 ? NMODES - 1 - q : q;
            double t0 = now();
            for (int r = 0; r < REPS; r++)
                call();
            times[mode][s] = (now() - t0) / REPS;
        }
    printf("four GEMVs in turn (%.1f MB of weights, %s pages), %d samples x %d calls:\n",
           bytes / 1e6, huge ? "2 MB" : "4 KB", SAMPLES, REPS);
    for (int q = 0; q < NMODES; q++) {
        qsort(times[q], SAMPLES, sizeof(double), cmp);
        double med = times[q][SAMPLES / 2];
        printf("  %-38s median %6.1f us (%5.1f GB/s)  min %6.1f\n", names[q], med * 1e6,
               bytes / med / 1e9, times[q][0] * 1e6);
    }
    return 0;
}
