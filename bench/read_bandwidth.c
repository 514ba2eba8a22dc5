/* Memory read bandwidth of this machine: every CPU summing its share of a 256 MiB float32
 * array with 512-bit loads (four accumulators), best of five passes. What a kernel that
 * streams weights from memory can reach at most (bench/RESULTS_decode_batches.md).
 *
 *   cc -O3 -mavx512f -fopenmp read_bandwidth.c -o read_bandwidth && ./read_bandwidth
 */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    const size_t n = (size_t)64 << 20;
    float *a = aligned_alloc(64, n * sizeof(float));
    if (!a)
        return 1;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) /* each thread touches the pages it will read */
        a[i] = 1.0f;
    double best = 0, total = 0;
    for (int pass = 0; pass < 5; pass++) {
        double t0 = omp_get_wtime();
        float sum = 0;
#pragma omp parallel reduction(+ : sum)
        {
            __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
#pragma omp for schedule(static)
            for (size_t i = 0; i < n; i += 64) {
                s0 = _mm512_add_ps(s0, _mm512_load_ps(a + i));
                s1 = _mm512_add_ps(s1, _mm512_load_ps(a + i + 16));
                s2 = _mm512_add_ps(s2, _mm512_load_ps(a + i + 32));
                s3 = _mm512_add_ps(s3, _mm512_load_ps(a + i + 48));
            }
            sum += _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
        }
        double gbs = n * sizeof(float) / (omp_get_wtime() - t0) / 1e9;
        best = gbs > best ? gbs : best;
        total += sum;
    }
    printf("read bandwidth: %.1f GB/s (%d threads; checksum %.0f)\n", best, omp_get_max_threads(),
           total);
    free(a);
    return 0;
}
