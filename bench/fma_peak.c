/* The FMA peak of this machine, measured: one thread per CPU, each issuing independent
 * 512-bit single-precision FMAs (12 accumulators: more than FMA latency x FMA pipes on
 * the CPUs we run, so the pipes, not the dependency chains, set the rate). Prints the
 * GFLOP/s of all threads together. Built and run by bench/worker.py's floors().
 *
 *   cc -O3 -mavx512f -pthread fma_peak.c -o fma_peak && ./fma_peak
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define ACC 12
#define ITERS 20000000L

static volatile float sink;

static void *chains(void *arg) {
    (void)arg;
    __m512 acc[ACC];
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < ACC; i++) acc[i] = _mm512_set1_ps((float)i);
    for (long n = 0; n < ITERS; n++) {
#pragma GCC unroll 12
        for (int i = 0; i < ACC; i++) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    }
    __m512 s = acc[0];
    for (int i = 1; i < ACC; i++) s = _mm512_add_ps(s, acc[i]);
    sink = _mm512_reduce_add_ps(s);
    return NULL;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(void) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus > 256) cpus = 256;
    pthread_t th[256];
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now();
        for (long c = 0; c < cpus; c++) pthread_create(&th[c], NULL, chains, NULL);
        for (long c = 0; c < cpus; c++) pthread_join(th[c], NULL);
        double flops = 2.0 * 16 * ACC * ITERS * cpus / (now() - t0);
        if (flops > best) best = flops;
    }
    printf("%ld %.1f\n", cpus, best / 1e9);
    return 0;
}
