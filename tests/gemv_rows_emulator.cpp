/* The float4 GEMV of 8-row tiles (native/include/cuvil_aot/cuda_gemv_rows.h) run on the CPU
 * for tests/test_gemv_rows.py: a block's 256 threads are fibers (emulated_block.h); every
 * block of the grid the host would launch runs, one after another. What it checks is the kernel's own
 * logic (tiles, lanes, the k steps, the sums across lanes and warps, rows past m, strides);
 * the arithmetic is float32 FMAs, as on the device.
 *
 *   g++ -std=c++17 -O1 -I native/include tests/gemv_rows_emulator.cpp -o emu
 *   ./emu NB M K N A_RS A_CS B_RS TERMS SM SEED   (A_RS 0: K; B_RS: at least N, a multiple of
 *       4; TERMS 1 or 2: x @ w or x @ w + x2 @ w2 of depths K and K / 2 + 1; SM: the SMs
 *       the host sizes its tiles by) prints "max_rel_err poisoned_left"
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

/* --- the CUDA surface the header uses ------------------------------------------------ */
#define CV_DEV static inline
#define CV_MEMBER inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define EMU_THREADS 256 /* CV_GEMV_ROWS_THREADS */
#include "emulated_block.h"
static float cv_shfl_xor(float v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
struct alignas(16) float4 {
    float x, y, z, w;
};
template <class T>
static T __ldg(const T *p) {
    if (sizeof(T) == 16 && reinterpret_cast<uintptr_t>(p) % 16) abort(); /* float4 alignment */
    return *p;
}
static int __ffs(int x) { return __builtin_ffs(x); }
#include "cuvil_aot/cuda_driver.h" /* cv_gpu_term */

#define CUVIL_AOT_CUDA_GEMV_H /* cuda_gemv.h's buffer, as it sizes it */
#define CV_GEMV_THREADS 1024
#define CV_GEMV_MAX_MR 4
CV_DEV unsigned char *cv_gemv_buffer() {
    __shared__ __align__(16) unsigned char raw[CV_GEMV_THREADS / 32 * CV_GEMV_MAX_MR * 32 * sizeof(double)];
    return raw;
}
#include "cuvil_aot/cuda_gemv_rows.h"

/* --- one launch ------------------------------------------------------------------------- */
struct Store { /* the epilogue: out[bat][i][j] */
    float *out;
    int64_t m, n;
    void operator()(int64_t bat, int64_t i, int64_t j, float v) const {
        if (i < 0 || i >= m || j < 0 || j >= n) abort();
        out[(bat * m + i) * n + j] = v;
    }
};
static const cv_gpu_term *g_terms;
static int g_nterms, g_m, g_n, g_cols;
static int64_t g_nb;
static Store g_epi;
static void thread_main() { cv_gemv_vec_rows(g_terms, g_nterms, g_m, g_n, g_nb, g_cols, g_epi); }

int main(int argc, char **argv) {
    if (argc != 11) return 2;
    const int64_t nb = atoll(argv[1]);
    const int m = atoi(argv[2]), k = atoi(argv[3]), n = atoi(argv[4]);
    const int64_t a_rs = atoll(argv[5]) ? atoll(argv[5]) : k, a_cs = atoll(argv[6]);
    const int64_t b_rs = atoll(argv[7]);
    const int nterms = atoi(argv[8]), sm = atoi(argv[9]);
    const unsigned seed = (unsigned)atoll(argv[10]);
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    const int depth[2] = {k, k / 2 + 1};
    std::vector<std::vector<float>> as(2), bs(2);
    cv_gpu_term terms[2];
    for (int t = 0; t < nterms; t++) {
        const int kt = depth[t];
        cv_gpu_term &tm = terms[t];
        tm.k = kt;
        /* A: term 0 through the strides asked, term 1 contiguous; B: rows b_rs apart, one
         * per batch where the seed is odd (b_bs a multiple of 4), else shared */
        tm.a_rs = t == 0 ? a_rs : kt, tm.a_cs = t == 0 ? a_cs : 1;
        tm.a_bs = (m - 1) * tm.a_rs + (kt - 1) * tm.a_cs + 1;
        tm.b_rs = b_rs, tm.b_cs = 1, tm.b_bs = seed % 2 ? (kt * b_rs + 3) / 4 * 4 : 0;
        as[t].resize((size_t)(nb * tm.a_bs));
        bs[t].resize((size_t)((seed % 2 ? nb : 1) * (tm.b_bs ? tm.b_bs : kt * b_rs)) + 4);
        for (float &x : as[t]) x = normal(rng);
        for (float &x : bs[t]) x = normal(rng);
        tm.a = reinterpret_cast<const char *>(as[t].data());
        tm.b = reinterpret_cast<const char *>(bs[t].data());
    }
    std::vector<float> out((size_t)(nb * m * n), NAN); /* poisoned */
    /* the host's grid (gpu_launch.py): column tiles narrowed to one a SM or 8 columns */
    const int64_t groups8 = (m + 7) / 8;
    int cols = 32;
    while (cols > 8 && (n + cols - 1) / cols * groups8 * nb < sm) cols /= 2;
    g_terms = terms, g_nterms = nterms, g_m = m, g_n = n, g_cols = cols, g_nb = nb;
    g_epi = Store{out.data(), m, n};
    gridDim = dim3e{(unsigned)((n + cols - 1) / cols * groups8), (unsigned)(nb < 3 ? nb : 3), 1};
    run_grid(thread_main);
    double worst = 0;
    int64_t poisoned = 0;
    for (int64_t b = 0; b < nb; b++)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double ref = 0, mag = 0;
                for (int t = 0; t < nterms; t++) {
                    const cv_gpu_term &tm = terms[t];
                    const float *a = as[t].data() + b * tm.a_bs + i * tm.a_rs;
                    const float *w = bs[t].data() + b * tm.b_bs + j;
                    for (int64_t kk = 0; kk < tm.k; kk++) {
                        const double p = (double)a[kk * tm.a_cs] * w[kk * tm.b_rs];
                        ref += p, mag += fabs(p);
                    }
                }
                const float got = out[(size_t)((b * m + i) * n + j)];
                if (std::isnan(got)) poisoned++;
                else worst = fmax(worst, fabs(got - ref) / (mag + 1e-30));
            }
    printf("%.3g %lld\n", worst, (long long)poisoned);
    return 0;
}
