/* CUDA C++, for nvcc only. The GEMV main loop (cv_gemv: m up to 32, each weight read
 * once per 4 rows; float4 loads where the weights allow). See cuda_gemm.h. */
#ifndef CUVIL_AOT_CUDA_GEMV_H
#define CUVIL_AOT_CUDA_GEMV_H

#include "cuvil_aot/cuda_gemv_mma.h"
#include "cuvil_aot/cuda_kernel.h"

#define CV_GEMV_THREADS 1024

template <class T>
struct cv_is_float {
    static constexpr bool value = false;
};
template <>
struct cv_is_float<float> {
    static constexpr bool value = true;
};

/* One thread's share of one term: rows k = first, first + step, ... of B (column
 * `col`) against MR rows of A, LOADS loads of B in flight per step (the last
 * step's loads predicated, not one at a time). With MR = 4 each B load brings 4
 * loads of A; more of them spill in a one-kernel's 64 registers. */
template <class T, int MR>
CV_DEV void cv_gemv_term(const cv_gpu_term &t, int64_t bat, int64_t m, int64_t row0, int64_t col,
                         int64_t first, int64_t step, T acc[MR]) {
    constexpr int LOADS = MR == 1 ? 8 : 4;
    const T *a = reinterpret_cast<const T *>(t.a) + bat * t.a_bs;
    const T *b = reinterpret_cast<const T *>(t.b) + bat * t.b_bs + col * t.b_cs;
    int64_t arow[MR];
#pragma unroll
    for (int r = 0; r < MR; r++) arow[r] = (row0 + r < m ? row0 + r : m - 1) * t.a_rs;
    for (int64_t k = first; k < t.k; k += LOADS * step) {
        T w[LOADS];
#pragma unroll
        for (int u = 0; u < LOADS; u++)
            w[u] = k + u * step < t.k ? __ldg(b + (k + u * step) * t.b_rs) : T(0);
#pragma unroll
        for (int u = 0; u < LOADS; u++)
            if (k + u * step < t.k)
#pragma unroll
                for (int r = 0; r < MR; r++)
                    acc[r] = fma(__ldg(a + arow[r] + (k + u * step) * t.a_cs), w[u], acc[r]);
    }
}

/* The GEMV's partial sums: one buffer for every GEMV of a kernel, whatever its T, MR
 * and epilogue, so that a one-kernel (cuda.py) holding float and double GEMVs of both
 * row counts stays within the 48 KB of static shared memory (one array per (T, MR) took
 * 60 KB in an attention module computing in both). The phases run one after another. */
#define CV_GEMV_MAX_MR 4
CV_DEV unsigned char *cv_gemv_buffer() {
    __shared__ __align__(16) unsigned char raw[CV_GEMV_THREADS / 32 * CV_GEMV_MAX_MR * 32 *
                                               sizeof(double)];
    return raw;
}

template <class T, int MR>
CV_DEV T (*cv_gemv_parts())[MR][32] {
    static_assert(MR <= CV_GEMV_MAX_MR && sizeof(T) <= sizeof(double), "GEMV parts fit");
    return reinterpret_cast<T (*)[MR][32]>(cv_gemv_buffer());
}

/* Nothing runs after a GEMV tile (see cv_gemv's `after`). */
struct cv_gemv_nothing_after {
    CV_MEMBER void operator()(int64_t, int, int64_t, int64_t) const {}
};

/* Tiles of MR rows x `cols` columns (8, 16 or 32), block-stride over grid.x (one
 * tile per block when grid.x is their number), batches over grid.y; block: up to
 * CV_GEMV_THREADS. The tile's columns are `runs` runs of run = cols / runs
 * consecutive columns, n / runs apart (runs = 1: cols consecutive columns). A lane
 * owns a column, `cols` lanes cover a row of B, and each warp's lanes step through
 * its share of k; partial sums meet in shared memory. after(row0, MR, col0, run)
 * runs once the tile's epilogue is stored, on the whole block. */
template <class T, int MR, class Epi, class After>
CV_DEV void cv_gemv_tile(const cv_gpu_term *terms, int nterms, int64_t m, int64_t n,
                         int64_t nbatch, int cols, int runs, int64_t col0, int64_t row0,
                         const Epi &epi, const After &after) {
    T (*part)[MR][32] = cv_gemv_parts<T, MR>();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const int per_warp = 32 / cols, run = cols / runs;
    const int64_t apart = n / runs;
    const int mine = lane % cols;
    const int64_t in_run = col0 + mine % run, col = in_run + (mine / run) * apart;
    const int64_t first = (int64_t)warp * per_warp + lane / cols, step = (int64_t)nwarps * per_warp;
    for (int64_t bat = blockIdx.y; bat < nbatch; bat += gridDim.y) {
        T acc[MR];
#pragma unroll
        for (int r = 0; r < MR; r++) acc[r] = 0;
        if (in_run < apart)
            for (int t = 0; t < nterms; t++)
                cv_gemv_term<T, MR>(terms[t], bat, m, row0, col, first, step, acc);
#pragma unroll
        for (int r = 0; r < MR; r++) {
            for (int off = 16; off >= cols; off >>= 1) acc[r] += cv_shfl_xor(acc[r], off);
            if (lane < cols) part[warp][r][lane] = acc[r];
        }
        __syncthreads();
        if (threadIdx.x < MR * cols) {
            const int r = threadIdx.x / cols, c = threadIdx.x % cols;
            T sum = 0;
            for (int w = 0; w < nwarps; w++) sum += part[w][r][c];
            if (row0 + r < m && col0 + c % run < apart)
                epi(bat, row0 + r, col0 + c % run + (c / run) * apart, sum);
        }
        __syncthreads(); /* part[] is reused by the next batch; the stores are seen */
        after(row0, MR, col0, run);
    }
}

/* The float4 GEMV's share of one term, as cv_gemv_term with 4 columns from `col`
 * and 32-bit offsets within the batch (the host checked they fit: cv_gpu_term_fits32). */
CV_DEV void cv_gemv_term4(const cv_gpu_term &t, int64_t bat, int row, int col, int first,
                          int step, float acc[4]) {
    const float *a = reinterpret_cast<const float *>(t.a) + bat * t.a_bs + row * (int)t.a_rs;
    const float *b = reinterpret_cast<const float *>(t.b) + bat * t.b_bs + col;
    const int k_end = (int)t.k, b_rs = (int)t.b_rs, a_cs = (int)t.a_cs;
    for (int k = first; k < k_end; k += 4 * step) {
        float4 w[4];
#pragma unroll
        for (int u = 0; u < 4; u++)
            w[u] = k + u * step < k_end
                       ? __ldg(reinterpret_cast<const float4 *>(b + (k + u * step) * b_rs))
                       : float4{0, 0, 0, 0};
#pragma unroll
        for (int u = 0; u < 4; u++)
            if (k + u * step < k_end) {
                const float x = __ldg(a + (k + u * step) * a_cs);
                acc[0] = fmaf(x, w[u].x, acc[0]), acc[1] = fmaf(x, w[u].y, acc[1]);
                acc[2] = fmaf(x, w[u].z, acc[2]), acc[3] = fmaf(x, w[u].w, acc[3]);
            }
    }
}

/* Two terms' shares at once, as cv_gemv_term4 each but two rows of each term per step:
 * the loads of both terms in flight before the first FMA, where one term after the
 * other waits for two round trips to memory (the LSTM step's x @ wx + h @ wh: two rows
 * of each per thread). Two rows, not four: 64 registers (1024 threads) hold four float4
 * loads in flight; with eight, ptxas issued three and waited for them before the rest. */
CV_DEV void cv_gemv_terms4x2(const cv_gpu_term &t0, const cv_gpu_term &t1, int64_t bat, int row,
                             int col, int first, int step, float acc[4]) {
    const cv_gpu_term *t[2] = {&t0, &t1};
    const float *a[2], *b[2];
    int k_end[2], b_rs[2], a_cs[2];
#pragma unroll
    for (int j = 0; j < 2; j++) {
        a[j] = reinterpret_cast<const float *>(t[j]->a) + bat * t[j]->a_bs + row * (int)t[j]->a_rs;
        b[j] = reinterpret_cast<const float *>(t[j]->b) + bat * t[j]->b_bs + col;
        k_end[j] = (int)t[j]->k, b_rs[j] = (int)t[j]->b_rs, a_cs[j] = (int)t[j]->a_cs;
    }
    const int k_max = k_end[0] > k_end[1] ? k_end[0] : k_end[1];
    for (int k = first; k < k_max; k += 2 * step) {
        float4 w[2][2];
        float x[2][2];
#pragma unroll
        for (int j = 0; j < 2; j++)
#pragma unroll
            for (int u = 0; u < 2; u++) {
                const int kk = k + u * step;
                x[j][u] = kk < k_end[j] ? __ldg(a[j] + kk * a_cs[j]) : 0.f;
            }
#pragma unroll
        for (int j = 0; j < 2; j++)
#pragma unroll
            for (int u = 0; u < 2; u++) {
                const int kk = k + u * step;
                w[j][u] = kk < k_end[j] ? __ldg(reinterpret_cast<const float4 *>(b[j] + kk * b_rs[j]))
                                        : float4{0, 0, 0, 0};
            }
        /* Rows past k add 0 * 0, so no branch stands between the loads; the sums start
         * with the last load's, so ptxas issues every load before the first FMA. */
#pragma unroll
        for (int j = 1; j >= 0; j--)
#pragma unroll
            for (int u = 1; u >= 0; u--) {
                acc[0] = fmaf(x[j][u], w[j][u].x, acc[0]), acc[1] = fmaf(x[j][u], w[j][u].y, acc[1]);
                acc[2] = fmaf(x[j][u], w[j][u].z, acc[2]), acc[3] = fmaf(x[j][u], w[j][u].w, acc[3]);
            }
    }
}

/* cv_gemv's float4 path: tiles of one row, lanes of 4 columns, the rest as
 * cv_gemv_tile. Its index math is 32-bit and shifts (cols and runs are powers of
 * two): at batch 1 every warp of the block issues all of it, and the 64-bit
 * divisions and offsets of the general tile made the LSTM step's tile 5.5 us
 * against 3.8 hand-written (H200, bench/gpu/lstm_probe.cu). */
template <class Epi, class After>
CV_DEV void cv_gemv_vec(const cv_gpu_term *terms, int nterms, int m, int n, int64_t nbatch,
                        int cols, int runs, const Epi &epi, const After &after) {
    float (*part)[1][32] = cv_gemv_parts<float, 1>();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const int lanes_log = __ffs(cols) - 3, run_log = __ffs(cols) - __ffs(runs);
    const int lanes = 1 << lanes_log, run = 1 << run_log, apart = n >> (__ffs(runs) - 1);
    const int mine = (lane & (lanes - 1)) * 4, in_run = mine & (run - 1);
    const int col_off = (mine >> run_log) * apart;
    const int first = (warp << (5 - lanes_log)) + (lane >> lanes_log);
    const int step = nwarps << (5 - lanes_log), tiles_n = (apart + run - 1) >> run_log;
    for (int tile = blockIdx.x; tile < tiles_n * m; tile += gridDim.x) {
        const int row = tile / tiles_n, col0 = (tile - row * tiles_n) << run_log;
        for (int64_t bat = blockIdx.y; bat < nbatch; bat += gridDim.y) {
            float acc[4] = {0, 0, 0, 0};
            if (col0 + in_run < apart) {
                const int col = col0 + in_run + col_off;
                int t = 0;
                for (; t + 1 < nterms; t += 2)
                    cv_gemv_terms4x2(terms[t], terms[t + 1], bat, row, col, first, step, acc);
                if (t < nterms) cv_gemv_term4(terms[t], bat, row, col, first, step, acc);
            }
#pragma unroll
            for (int e = 0; e < 4; e++) {
#pragma unroll
                for (int off = 16; off >= 2; off >>= 1)
                    if (off >= lanes) acc[e] += cv_shfl_xor(acc[e], off);
                if (lane < lanes) part[warp][0][mine + e] = acc[e];
            }
            __syncthreads();
            if ((int)threadIdx.x < cols) {
                const int c = threadIdx.x;
                float sum = 0;
#pragma unroll 8
                for (int w = 0; w < nwarps; w++) sum += part[w][0][c];
                if (col0 + (c & (run - 1)) < apart)
                    epi(bat, row, col0 + (c & (run - 1)) + (c >> run_log) * apart, sum);
            }
            __syncthreads(); /* part[] is reused by the next batch; the stores are seen */
            after(row, 1, col0, run);
        }
    }
}

/* vec: B read as float4 (cv_gemv_vec; the host checked: float32, one row per tile,
 * n % 4 == 0, B's columns contiguous and its rows 16-byte aligned, 32-bit offsets;
 * with runs > 1, whole float4s per run). Not with MR = 4, whose 16 accumulators
 * would spill in 64 registers. runs > 1 (a one-kernel's GEMV with its consumer,
 * cuda_one.py): the host checked that runs divides n and cols, both powers of two. */
template <class T, int MR, class Epi, class After = cv_gemv_nothing_after>
CV_DEV void cv_gemv(const cv_gpu_term *terms, int nterms, int64_t m, int64_t n, int64_t nbatch,
                    int cols, int vec, const Epi &epi, int runs = 1,
                    const After &after = After()) {
    if (cols <= 0) return; /* a one-kernel's arguments when the host skipped an empty GEMM */
    if constexpr (cv_is_float<T>::value && MR == 1) {
        if (vec) return cv_gemv_vec(terms, nterms, (int)m, (int)n, nbatch, cols, runs, epi, after);
    }
    const int64_t run = cols / runs, apart = n / runs;
    const int64_t tiles_n = (apart + run - 1) / run, tiles = tiles_n * ((m + MR - 1) / MR);
    for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x)
        cv_gemv_tile<T, MR>(terms, nterms, m, n, nbatch, cols, runs, (tile % tiles_n) * run,
                            (tile / tiles_n) * MR, epi, after);
}

/* The GEMV of a transposed B (x @ w.T with w's rows along k: b_rs == 1), where cv_gemv's
 * lanes, which own columns, would read w K floats apart. Here a team of CV_DOT_TEAM warps
 * owns a tile of MR rows x NC columns, its lanes step along k (reading w's rows coalesced,
 * 4 floats at a time where `vec`), each warp a share of k so that many loads are in flight
 * per column; shuffles and shared memory add the shares up. A warp per tile, stepping
 * through all of k, was latency-bound: a BERT-base layer's GEMMs at 1 x 16 took 21 us each
 * so (H200, bench/gpu/kernel_profile.py). Tiles block-stride over grid.x (as many teams per
 * block as its multiple of 256 threads holds), batches over grid.y. */
#define CV_DOT_TEAM 8

template <class T, int MR, int NC, int LOADS>
CV_DEV void cv_gemv_dot_step(const T *a, const int64_t arow[MR], int64_t a_cs, const T *b[NC],
                             int64_t b_rs, int64_t k, int64_t step, int64_t k_end,
                             T acc[MR][NC]) {
    T w[LOADS][NC];
#pragma unroll
    for (int u = 0; u < LOADS; u++)
#pragma unroll
        for (int c = 0; c < NC; c++)
            w[u][c] = k + u * step < k_end ? __ldg(b[c] + (k + u * step) * b_rs) : T(0);
#pragma unroll
    for (int u = 0; u < LOADS; u++)
        if (k + u * step < k_end)
#pragma unroll
            for (int r = 0; r < MR; r++) {
                const T x = __ldg(a + arow[r] + (k + u * step) * a_cs);
#pragma unroll
                for (int c = 0; c < NC; c++) acc[r][c] = fma(x, w[u][c], acc[r][c]);
            }
}

/* The float4 share: 4 consecutive k per lane (A's and B's rows contiguous along k and
 * 16-byte aligned, k % 4 == 0: the host's `vec`); one float4 per column in flight, which
 * keeps a one-kernel's 64 registers. */
template <int MR, int NC>
CV_DEV void cv_gemv_dot_step4(const float *a, const int64_t arow[MR], const float *b[NC],
                              int64_t k, float acc[MR][NC]) {
    float4 w[NC];
#pragma unroll
    for (int c = 0; c < NC; c++) w[c] = __ldg(reinterpret_cast<const float4 *>(b[c] + k));
#pragma unroll
    for (int r = 0; r < MR; r++) {
        const float4 x = __ldg(reinterpret_cast<const float4 *>(a + arow[r] + k));
#pragma unroll
        for (int c = 0; c < NC; c++)
            acc[r][c] = fmaf(x.w, w[c].w, fmaf(x.z, w[c].z, fmaf(x.y, w[c].y,
                        fmaf(x.x, w[c].x, acc[r][c]))));
    }
}

template <class T, int MR, int NC>
CV_DEV void cv_gemv_dot_term(const cv_gpu_term &t, int64_t bat, int64_t m, int64_t n,
                             int64_t row0, int64_t col0, int64_t first, int64_t step, int vec,
                             T acc[MR][NC]) {
    const T *a = reinterpret_cast<const T *>(t.a) + bat * t.a_bs;
    const T *b[NC];
    int64_t arow[MR];
#pragma unroll
    for (int c = 0; c < NC; c++) /* past n: the last column again, its sums not stored */
        b[c] = reinterpret_cast<const T *>(t.b) + bat * t.b_bs + (col0 + c < n ? col0 + c : n - 1) * t.b_cs;
#pragma unroll
    for (int r = 0; r < MR; r++) arow[r] = (row0 + r < m ? row0 + r : m - 1) * t.a_rs;
    if constexpr (cv_is_float<T>::value) {
        if (vec) {
            for (int64_t k = first * 4; k < t.k; k += step * 4)
                cv_gemv_dot_step4<MR, NC>(a, arow, b, k, acc);
            return;
        }
    }
    for (int64_t k = first; k < t.k; k += 4 * step)
        cv_gemv_dot_step<T, MR, NC, 4>(a, arow, t.a_cs, b, t.b_rs, k, step, t.k, acc);
}

template <class T, int MR, int NC, class Epi>
CV_DEV void cv_gemv_dot_fma(const cv_gpu_term *terms, int nterms, int64_t m, int64_t n,
                            int64_t nbatch, int vec, const Epi &epi) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int team = warp / CV_DOT_TEAM, member = warp % CV_DOT_TEAM;
    const int teams = (blockDim.x >> 5) / CV_DOT_TEAM;
    static_assert(CV_GEMV_THREADS / 32 * MR * NC * sizeof(T) <= CV_GEMV_THREADS / 32 *
                  CV_GEMV_MAX_MR * 32 * sizeof(double), "the team's sums fit the GEMV's buffer");
    T (*part)[CV_DOT_TEAM][MR * NC] = reinterpret_cast<T (*)[CV_DOT_TEAM][MR * NC]>(cv_gemv_buffer());
    const int64_t tiles_n = (n + NC - 1) / NC, tiles = tiles_n * ((m + MR - 1) / MR);
    const int64_t first = (int64_t)member * 32 + lane, step = CV_DOT_TEAM * 32;
    for (int64_t bat = blockIdx.y; bat < nbatch; bat += gridDim.y)
        for (int64_t base = (int64_t)blockIdx.x * teams; base < tiles; base += (int64_t)gridDim.x * teams) {
            const int64_t tile = base + team; /* every thread reaches the barriers below */
            const int64_t col0 = (tile % tiles_n) * NC, row0 = (tile / tiles_n) * MR;
            T acc[MR][NC];
#pragma unroll
            for (int r = 0; r < MR; r++)
#pragma unroll
                for (int c = 0; c < NC; c++) acc[r][c] = 0;
            if (tile < tiles)
                for (int t = 0; t < nterms; t++)
                    cv_gemv_dot_term<T, MR, NC>(terms[t], bat, m, n, row0, col0, first, step, vec, acc);
#pragma unroll
            for (int r = 0; r < MR; r++)
#pragma unroll
                for (int c = 0; c < NC; c++) {
                    T v = acc[r][c];
#pragma unroll
                    for (int off = 16; off > 0; off >>= 1) v += cv_shfl_xor(v, off);
                    if (lane == 0) part[team][member][r * NC + c] = v;
                }
            __syncthreads();
            if (tile < tiles && member == 0 && lane < MR * NC) {
                T sum = 0;
                for (int w = 0; w < CV_DOT_TEAM; w++) sum += part[team][w][lane];
                const int64_t row = row0 + lane / NC, col = col0 + lane % NC;
                if (row < m && col < n) epi(bat, row, col, sum);
            }
            __syncthreads(); /* part[] is reused by the next tile */
        }
}

/* The dot GEMV: on tensor cores where it may (sm_80+, float32, up to 16 rows, `vec`:
 * cuda_gemv_mma.h), else the FMA loop above. vec == 2: the host found tiles of 16
 * columns too few for the SMs; 8 columns a tile then, 4 chunks in flight per warp
 * (bench/gpu/gemv_mma_probe.cu: 16 x 3072 x 768 in 10.1 us so, 14.9 in tiles of 16). */
#define CV_DOT_MMA_COLS 16 /* cv_gemv_dot_mma<2, 2>'s tile (vec == 1) */
template <class T, int MR, int NC, class Epi>
CV_DEV void cv_gemv_dot(const cv_gpu_term *terms, int nterms, int64_t m, int64_t n,
                        int64_t nbatch, int vec, const Epi &epi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (cv_is_float<T>::value) {
        static_assert(CV_GEMV_THREADS / 32 * 16 * CV_DOT_MMA_COLS * sizeof(float) <=
                          CV_GEMV_THREADS / 32 * CV_GEMV_MAX_MR * 32 * sizeof(double),
                      "the warps' sums fit the GEMV's buffer");
        if (vec == 2 && m <= 16)
            return cv_gemv_dot_mma<1, 4>(terms, nterms, m, n, nbatch, cv_gemv_buffer(), epi);
        if (vec && m <= 16)
            return cv_gemv_dot_mma<CV_DOT_MMA_COLS / 8, 2>(terms, nterms, m, n, nbatch,
                                                           cv_gemv_buffer(), epi);
    }
#endif
    cv_gemv_dot_fma<T, MR, NC>(terms, nterms, m, n, nbatch, vec, epi);
}

/* The dot GEMV where the host found tiles of 16 columns fewer than the SMs (vec == 2:
 * float32, up to 16 rows, float4 rows), on a block of 16 warps: each tile's k shared by
 * twice the warps of cv_gemv_dot's block, so half the rounds of loads a warp. Before
 * sm_80, cv_gemv_dot's FMA loop (its teams follow the block's warps). */
template <class T, class Epi>
CV_DEV void cv_gemv_dot_wide(const cv_gpu_term *terms, int nterms, int64_t m, int64_t n,
                             int64_t nbatch, const Epi &epi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (cv_is_float<T>::value)
        cv_gemv_dot_mma<1, 4>(terms, nterms, m, n, nbatch, cv_gemv_buffer(), epi);
    else
#endif
        cv_gemv_dot<T, 4, 4>(terms, nterms, m, n, nbatch, 2, epi);
}

#endif
