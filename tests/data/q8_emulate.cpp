// cuda_q8.h's cv_gemv_q8 run on the host (tests/test_int8_weights.py, for machines without a
// GPU): CUDA's names mocked, a block as std::threads (one per thread) whose shuffles meet at
// their warp's barrier and __syncthreads at the block's, blocks one after another. Random shapes (m 1..16, batches, k
// odd or a multiple of the group, groups 0 (per channel), 8, 16, 24, 32, 64, q's rows
// misaligned or padded, x misaligned) against a float64 sum of the dequantized weight,
// within 4 x (k + 4) x 2^-24 x sum |x w|. Prints "0/N failed" and exits 0 when all pass.
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <random>
#define __CUDACC__ 1
#define __device__
#define __forceinline__ inline
#define __global__
#define __launch_bounds__(...)
#define __grid_constant__
#define __shared__ static /* blocks run one after another */
struct dim3_ { unsigned x, y, z; };
thread_local dim3_ threadIdx, blockIdx;
dim3_ gridDim{1, 1, 1}, blockDim{256, 1, 1};
struct int4 { int x, y, z, w; };
struct float4 { float x, y, z, w; };
inline int4 make_int4(int a, int b, int c, int d) { return {a, b, c, d}; }
template <class T> T __ldg(const T *p) { return *p; }
unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    uint64_t v = (uint64_t)y << 32 | x;
    unsigned r = 0;
    for (int i = 0; i < 4; i++) r |= (unsigned)(v >> (8 * ((s >> (4 * i)) & 7)) & 0xff) << (8 * i);
    return r;
}
float __int_as_float(int i) { float f; memcpy(&f, &i, sizeof f); return f; }
typedef struct { const char *a; int64_t a_rs, a_cs, a_bs; const char *b; int64_t b_rs, b_cs, b_bs; int64_t k; } cv_gpu_term;
static std::barrier<> *warp_bar[32], *block_bar;
static float xch[32][32];
float __shfl_xor_sync(unsigned, float v, int off) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    warp_bar[w]->arrive_and_wait(); xch[w][lane] = v; warp_bar[w]->arrive_and_wait();
    float r = xch[w][lane ^ off]; warp_bar[w]->arrive_and_wait(); return r;
}
void __syncthreads() { block_bar->arrive_and_wait(); }
#include "cuvil_aot/cuda_q8.h"
struct Epi { float *out; int64_t n, m; void operator()(int64_t b, int64_t i, int64_t j, float acc) const { out[(b * m + i) * n + j] = acc; } };

int run(int mr, int64_t nb, int64_t m, int64_t n, int64_t k, int64_t group, int qoff, int xoff, int64_t qpad, unsigned seed) {
    std::mt19937 rng(seed);
    int64_t q_os = k + qpad;
    std::vector<int8_t> qbuf(n * q_os + 64);
    int8_t *q = qbuf.data() + qoff;
    for (auto &v : qbuf) v = (int8_t)((int)(rng() % 255) - 127);
    int64_t ng = group ? k / group : 1;
    std::vector<float> s(n * ng), xb(nb * m * k + 16), out(nb * m * n, NAN);
    for (auto &v : s) v = (rng() % 1000) / 50000.f;
    for (auto &v : xb) v = (rng() % 2001) / 1000.f - 1.f;
    float *x = xb.data() + xoff;
    cv_gpu_term t{(const char *)x, k, 1, m * k, nullptr, 0, 0, 0, k};
    int64_t vec = group == 0 || (group % 16 == 0 && ((uintptr_t)q % 16) == 0 && q_os % 16 == 0);
    cv_q8_weight w{q, s.data(), q_os, group, group ? ng : 1, group ? 1 : 0, vec};
    Epi epi{out.data(), n, m};
    const int bt = CV_GEMV_Q8_BLOCK, per = CV_GEMV_Q8_PER_BLOCK;
    gridDim = {(unsigned)((n + per - 1) / per > 3 ? 3 : (n + per - 1) / per), (unsigned)nb, 1};
    blockDim = {(unsigned)bt, 1, 1};
    std::vector<std::barrier<> *> bars;
    for (int wi = 0; wi < bt / 32; wi++) bars.push_back(warp_bar[wi] = new std::barrier<>(32));
    std::barrier<> blk(bt); block_bar = &blk;
    for (unsigned bx = 0; bx < gridDim.x; bx++) for (unsigned by = 0; by < gridDim.y; by++) {
        std::vector<std::thread> th; /* the block's threads at once: its barriers need them all */
        for (int tid = 0; tid < bt; tid++) th.emplace_back([&, tid] {
            threadIdx = {(unsigned)tid, 0, 0}; blockIdx = {bx, by, 0};
            if (mr == 1) cv_gemv_q8<1>(t, w, m, n, nb, epi); else cv_gemv_q8<4>(t, w, m, n, nb, epi);
        });
        for (auto &h : th) h.join();
    }
    for (auto *b : bars) delete b;
    for (int64_t bb = 0; bb < nb; bb++) for (int64_t i = 0; i < m; i++) for (int64_t o = 0; o < n; o++) {
        double e = 0, mag = 0;
        for (int64_t p = 0; p < k; p++) {
            double wv = (double)q[o * q_os + p] * s[o * ng + (group ? p / group : 0)];
            e += x[(bb * m + i) * k + p] * wv; mag += std::fabs(x[(bb * m + i) * k + p] * wv);
        }
        double err = std::fabs(out[(bb * m + i) * n + o] - e) / (mag * (k + 4) * 6e-8 + 1e-30);
        if (!(err <= 4)) { printf("FAIL mr=%d nb=%ld m=%ld n=%ld k=%ld g=%ld qoff=%d xoff=%d pad=%ld at %ld %ld %ld: %g vs %g\n", mr, nb, m, n, k, group, qoff, xoff, qpad, bb, i, o, out[(bb*m+i)*n+o], e); return 1; }
    }
    return 0;
}
int main(int argc, char **argv) {
    int fails = 0, cases = 0;
    std::mt19937 rng(argc > 2 ? (unsigned)atoi(argv[2]) : 1u);
    const int count = argc > 1 ? atoi(argv[1]) : 60;
    for (int it = 0; it < count; it++) {
        int64_t m = 1 + rng() % 16, nb = 1 + rng() % 2, n = 1 + rng() % 40;
        int64_t groups[] = {0, 0, 16, 32, 64, 24, 8};
        int64_t g = groups[rng() % 7];
        int64_t k = g ? g * (1 + rng() % 6) : 1 + rng() % 300;
        int qoff = rng() % 3 == 0 ? rng() % 16 : 0, xoff = rng() % 2 ? 0 : rng() % 4;
        int64_t pad = rng() % 2 ? 0 : rng() % 17;
        int mr = m == 1 ? 1 : 4;
        fails += run(mr, nb, m, n, k, g, qoff, xoff, pad, rng()); cases++;
    }
    /* a decode step's usual case: one row, per channel, aligned rows and x, k % 16 == 0 */
    for (int64_t k : {16, 48, 272, 1040})
        for (int64_t pad : {0, 16, 32}) {
            fails += run(1, 1 + (int64_t)(rng() % 2), 1, 1 + rng() % 40, k, 0, 0, 0, pad, rng());
            cases++;
        }
    printf("%d/%d failed\n", fails, cases);
    return fails != 0;
}
