/* CUDA C++, for nvcc only. GEMM main loops of generated GEMM kernels, in
 * fp32/fp64 arithmetic.
 *
 * A kernel computes C[b] = sum over terms of A_t[b] @ B_t[b] and hands every
 * finished element to an epilogue functor, epi(b, i, j, acc), which computes
 * and stores the group's roots. Two main loops, picked by the host:
 *  - cv_gemm_tiled: 128x128 (or 64x64) block tiles, 8x8 (4x4) per thread,
 *    double-buffered shared memory. Any strides (scalar global loads).
 *  - cv_gemv: small m (up to 32). Reads each weight once per 4 rows: a block
 *    owns `cols` columns, its 32 warps split k, partial sums meet in shared
 *    memory. float4 loads of the weights where they are contiguous and aligned.
 *  - cv_gemm_tc: float32 on tensor cores (sm_80+), 3xTF32 for float32
 *    accuracy; A with k contiguous, B with n (or k) contiguous, 16-byte
 *    aligned rows. The host checks the layout; on older GPUs it is
 *    cv_gemm_tiled.
 * All take the epilogue the same way. Where the tiles are too few for the
 * SMs, the tiled loops split k in chunks (split-K, cv_term_chunk) and
 * cv_gemm_ksum adds the chunks' partial sums for the epilogue.
 */
#ifndef CUVIL_AOT_CUDA_GEMM_H
#define CUVIL_AOT_CUDA_GEMM_H

#include "cuvil_aot/cuda_kernel.h"

#define CV_GEMM_THREADS 256
#define CV_GEMV_THREADS 1024

template <class T>
CV_DEV void cv_load4(const T *p, T out[4]) {
#pragma unroll
    for (int i = 0; i < 4; i++) out[i] = p[i];
}
CV_DEV void cv_load4(const float *p, float out[4]) {
    const float4 v = *reinterpret_cast<const float4 *>(p);
    out[0] = v.x;
    out[1] = v.y;
    out[2] = v.z;
    out[3] = v.w;
}

/* One thread's share of a k-slab (8 deep) of the BM x 8 A tile and the
 * 8 x BN B tile: LA elements of A in row `ar` from k `ak`, LB of B in k-row
 * `bk` from column `bc`. Pointers advance a slab per load, so the loop keeps
 * few 64-bit values. */
template <class T, int BM, int BN>
struct cv_tile_loader {
    static constexpr int LA = BM / 32, LB = BN / 32, TPR = 8 / LA;
    const T *pa, *pb;
    int64_t a_cs, b_rs, b_cs, k, ka, kb;
    bool row_ok;
    int cols_ok; /* bit i: column bc + i exists */
    int ar, ak, bk, bc;
    T ra[LA], rb[LB];

    CV_MEMBER void init(const cv_gpu_term &t, int64_t bat, int64_t m, int64_t n, int64_t row0,
                        int64_t col0) {
        const int tid = threadIdx.x;
        ar = tid / TPR, ak = (tid % TPR) * LA, bk = tid / 32, bc = (tid % 32) * LB;
        a_cs = t.a_cs, b_rs = t.b_rs, b_cs = t.b_cs, k = t.k, ka = ak, kb = bk;
        const int64_t r = row0 + ar;
        row_ok = r < m;
        cols_ok = 0;
        for (int i = 0; i < LB; i++) cols_ok |= (col0 + bc + i < n) << i;
        /* Rows and columns past the end read row/column 0's addresses, never used. */
        pa = reinterpret_cast<const T *>(t.a) + bat * t.a_bs + (row_ok ? r : 0) * t.a_rs +
             ak * t.a_cs;
        pb = reinterpret_cast<const T *>(t.b) + bat * t.b_bs + bk * t.b_rs +
             (cols_ok & 1 ? col0 + bc : 0) * t.b_cs;
    }
    CV_MEMBER void load() {
#pragma unroll
        for (int i = 0; i < LA; i++) ra[i] = (row_ok && ka + i < k) ? pa[i * a_cs] : (T)0;
#pragma unroll
        for (int i = 0; i < LB; i++) rb[i] = ((cols_ok >> i) & 1) && kb < k ? pb[i * b_cs] : (T)0;
        pa += 8 * a_cs;
        pb += 8 * b_rs;
        ka += 8;
        kb += 8;
    }
    CV_MEMBER void store(T (*as)[BM], T (*bs)[BN]) const {
#pragma unroll
        for (int i = 0; i < LA; i++) as[ak + i][ar] = ra[i];
#pragma unroll
        for (int i = 0; i < LB; i++) bs[bk][bc + i] = rb[i];
    }
};

/* A 16 x 16 grid of threads; thread (tx, ty) owns rows ty*4 + i%4 + 64*(i/4)
 * and columns tx*4 + j%4 + 64*(j/4) of the tile: the 4-wide shared-memory
 * reads of a quarter warp are contiguous. */
template <class T, int BM, int BN>
CV_DEV void cv_tile_fma(const T (*as)[BM], const T (*bs)[BN], int tx, int ty,
                        T acc[BM / 16][BN / 16]) {
#pragma unroll
    for (int kk = 0; kk < 8; kk++) {
        T a[BM / 16], b[BN / 16];
#pragma unroll
        for (int g = 0; g < BM / 64; g++) cv_load4(&as[kk][64 * g + ty * 4], a + 4 * g);
#pragma unroll
        for (int g = 0; g < BN / 64; g++) cv_load4(&bs[kk][64 * g + tx * 4], b + 4 * g);
#pragma unroll
        for (int i = 0; i < BM / 16; i++)
#pragma unroll
            for (int j = 0; j < BN / 16; j++) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
}

template <class T, int BM, int BN>
CV_DEV void cv_tile_term(const cv_gpu_term &t, int64_t bat, int64_t m, int64_t n, int64_t row0,
                         int64_t col0, T (*as)[8][BM], T (*bs)[8][BN],
                         T acc[BM / 16][BN / 16]) {
    cv_tile_loader<T, BM, BN> ld;
    ld.init(t, bat, m, n, row0, col0);
    const int64_t ntiles = (t.k + 7) / 8;
    if (ntiles == 0) return;
    ld.load();
    ld.store(as[0], bs[0]);
    __syncthreads();
    for (int64_t kt = 0; kt < ntiles; kt++) {
        const int cur = (int)(kt & 1);
        if (kt + 1 < ntiles) ld.load(); /* in flight during the FMAs */
        cv_tile_fma<T, BM, BN>(as[cur], bs[cur], threadIdx.x % 16, threadIdx.x / 16, acc);
        /* The other buffer was last read before the previous barrier. */
        if (kt + 1 < ntiles) ld.store(as[cur ^ 1], bs[cur ^ 1]);
        __syncthreads();
    }
}

/* Split-K, for GEMMs whose tiles are too few to fill the SMs: the blocks of chunk s
 * of `split` each sum their tile over the s-th slice of every term's k (whole 8-deep
 * slabs) and leave the partial sums at part[s][bat][i][j]; cv_gemm_ksum adds the
 * chunks up in order and hands each total to the epilogue. split 1: no split. */
template <class T>
CV_DEV cv_gpu_term cv_term_chunk(const cv_gpu_term &t, int s, int split) {
    if (split <= 1) return t;
    const int64_t chunk = ((t.k + split - 1) / split + 7) / 8 * 8;
    const int64_t k0 = s * chunk < t.k ? s * chunk : t.k;
    cv_gpu_term c = t;
    c.a += k0 * t.a_cs * (int64_t)sizeof(T);
    c.b += k0 * t.b_rs * (int64_t)sizeof(T);
    c.k = t.k - k0 < chunk ? t.k - k0 : chunk;
    return c;
}

/* The epilogue of a tile of chunk s: its partial sums into part, or, without a
 * split (part NULL), the totals to epi. */
template <class T, class Epi>
struct cv_split_epi {
    const Epi &epi;
    T *part;
    int64_t m, n, nbatch;
    int s;
    CV_MEMBER void operator()(int64_t bat, int64_t i, int64_t j, T acc) const {
        if (part) part[((s * nbatch + bat) * m + i) * n + j] = acc;
        else epi(bat, i, j, acc);
    }
};

/* grid-strided over nbatch * m * n: the chunks' partial sums, added in chunk order
 * (the same total every run), through the epilogue. */
template <class T, class Epi>
CV_DEV void cv_gemm_ksum(const T *part, int split, int64_t m, int64_t n, int64_t nbatch,
                         const Epi &epi) {
    const int64_t total = nbatch * m * n;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        T sum = 0;
        for (int s = 0; s < split; s++) sum += part[s * total + e];
        const int64_t bat = e / (m * n), ij = e - bat * (m * n);
        epi(bat, ij / n, ij % n, sum);
    }
}

/* The B x B tile from (row0, col0) of every batch from grid.y (grid-strided), over
 * k-chunk s of `split` (cv_term_chunk). */
template <class T, int B, class Epi>
CV_DEV void cv_gemm_tile(const cv_gpu_term *terms, int nterms, int64_t m, int64_t n,
                         int64_t nbatch, int64_t row0, int64_t col0, int s, int split,
                         const Epi &epi) {
    __shared__ __align__(16) T as[2][8][B];
    __shared__ __align__(16) T bs[2][8][B];
    constexpr int TM = B / 16;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    for (int64_t bat = blockIdx.y; bat < nbatch; bat += gridDim.y) {
        T acc[TM][TM];
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TM; j++) acc[i][j] = 0;
        for (int t = 0; t < nterms; t++)
            cv_tile_term<T, B, B>(cv_term_chunk<T>(terms[t], s, split), bat, m, n, row0, col0,
                                  as, bs, acc);
#pragma unroll
        for (int i = 0; i < TM; i++) {
            const int64_t r = row0 + ty * 4 + (i % 4) + 64 * (i / 4);
#pragma unroll
            for (int j = 0; j < TM; j++) {
                const int64_t c = col0 + tx * 4 + (j % 4) + 64 * (j / 4);
                if (r < m && c < n) epi(bat, r, c, acc[i][j]);
            }
        }
    }
}

/* grid.x: split x row tiles x column tiles of B x B (128, or 64 when 128-tiles would
 * leave SMs idle), grid.y: batches (grid-strided); block: CV_GEMM_THREADS. With
 * split > 1 the partial sums go to part (cv_term_chunk). */
template <class T, int B, class Epi>
CV_DEV void cv_gemm_tiled(const cv_gpu_term *terms, int nterms, int64_t m, int64_t n,
                          int64_t nbatch, int split, T *part, const Epi &epi) {
    const int64_t tiles_n = (n + B - 1) / B, tiles = (m + B - 1) / B * tiles_n;
    const int64_t tile = blockIdx.x % tiles;
    const int s = (int)(blockIdx.x / tiles);
    const cv_split_epi<T, Epi> out{epi, split > 1 ? part : nullptr, m, n, nbatch, s};
    cv_gemm_tile<T, B>(terms, nterms, m, n, nbatch, (tile / tiles_n) * B, (tile % tiles_n) * B,
                       s, split, out);
}

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

/* The GEMV's partial sums: one array per (T, MR), not per epilogue type, so that the
 * GEMVs of a one-kernel (cuda.py) share it within the 48 KB of static shared memory. */
template <class T, int MR>
CV_DEV T (*cv_gemv_parts())[MR][32] {
    __shared__ T part[CV_GEMV_THREADS / 32][MR][32];
    return part;
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

/* Tensor-core main loop, float32 in and out (sm_80+).
 *
 * 3xTF32: each operand x is split into big = tf32(x) and small = tf32(x - big);
 * small_a*big_b + big_a*small_b + big_a*big_b keeps ~22 bits of each product
 * (float32 level) where plain TF32 keeps 11 (~3e-4). The tensor cores' own
 * float32 accumulation truncates: accumulating all of k there gave an error
 * growing with k (7e-6 at k = 1024 on the H200, cuBLAS 5.7e-7), so each
 * k-slab's sum is added to the accumulators with a rounded FADD.
 *
 * Block tile BM x 128 (BM = 128, or 64 where 128-row tiles would be fewer than
 * the SMs), k-slabs of 8 in CV_TC_STAGES shared-memory stages filled by cp.async
 * (16-byte chunks, zero-filled past m, n, k), 8 warps of BM/2 x 32, mma.sync
 * m16n8k8. Within a k-slab the fragment's k-columns (t, t+4) are read
 * from smem columns (2t, 2t+1) in A and B alike: the same permutation of k on
 * both sides leaves the sum unchanged and makes A's two values one 8-byte load.
 * Static shared memory only (33 KB at BM = 128: two blocks per SM) because the
 * launch passes no dynamic size. */
#define CV_TC_STAGES 4
#define CV_TC_BPAD 4 /* B rows of 132 floats: the fragment loads hit 32 banks */

/* One 16-byte chunk global -> shared; `bytes` (0..16) are read, the rest of
 * the chunk is zero-filled. */
CV_DEV void cv_cp_async16(void *smem, const void *gmem, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const uint32_t s = (uint32_t)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem),
                 "r"(bytes));
#endif
}
CV_DEV void cv_cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N>
CV_DEV void cv_cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

/* Round to the nearest tf32 (ties away) by integer arithmetic: 2 instructions
 * where cvt.rna.tf32 takes 4-5 on sm_90. Inf stays Inf, NaN stays NaN;
 * finite values within half a tf32 ulp of FLT_MAX round to Inf, as cvt.rna. */
CV_DEV uint32_t cv_tf32(float x) { return (__float_as_uint(x) + 0x1000u) & 0xffffe000u; }
CV_DEV void cv_split_tf32(float x, uint32_t &big, uint32_t &small) {
    big = cv_tf32(x);
    small = cv_tf32(x - __uint_as_float(big)); /* the difference is exact */
}

CV_DEV void cv_mma_tf32(float d[4], const uint32_t a[4], const uint32_t b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/* Shared-memory stages. A: [row][k] (k contiguous). B: [k][col] when BT is
 * false (n contiguous in memory), [col][k] when BT is true (k contiguous).
 * BM: the tile's rows (128, or 64 where 128-row tiles would leave SMs idle). */
template <bool BT, int BM>
struct cv_tc_smem {
    float a[CV_TC_STAGES][BM][8];
    float b[CV_TC_STAGES][BT ? 128 : 8][BT ? 8 : 128 + CV_TC_BPAD];
};

/* One thread's two chunks per k-slab: A row ar, k ak..ak+3 (the first 2 * BM
 * threads); B likewise (BT) or k-row bk, columns bc..bc+3. */
template <bool BT, int BM>
struct cv_tc_loader {
    const float *pa, *pb;
    int64_t b_step, k, ka, kb;
    int a_on, a_ok, b_cols; /* an A chunk is this thread's; its row exists; B columns
                               (or row, BT) left from bc */
    int ar, ak, bk, bc;

    CV_MEMBER void init(const cv_gpu_term &t, int64_t bat, int64_t m, int64_t n, int64_t row0,
                        int64_t col0) {
        const int tid = threadIdx.x;
        ar = tid >> 1, ak = (tid & 1) * 4;
        k = t.k, ka = ak;
        a_on = ar < BM;
        a_ok = a_on && row0 + ar < m;
        pa = reinterpret_cast<const float *>(t.a) + bat * t.a_bs + (a_ok ? row0 + ar : 0) * t.a_rs +
             ak;
        const float *b = reinterpret_cast<const float *>(t.b) + bat * t.b_bs;
        if (BT) { /* like A: column bc of the tile is a row of k values */
            bc = tid >> 1, bk = (tid & 1) * 4, kb = bk;
            b_cols = col0 + bc < n;
            pb = b + (b_cols ? col0 + bc : 0) * t.b_cs + bk;
            b_step = 8;
        } else {
            bk = tid >> 5, bc = (tid & 31) * 4, kb = bk;
            const int64_t left = n - (col0 + bc);
            b_cols = left <= 0 ? 0 : left >= 4 ? 4 : (int)left;
            pb = b + bk * t.b_rs + (b_cols ? col0 + bc : 0);
            b_step = 8 * t.b_rs;
        }
    }
    /* Chunks of k-slab `s` (this thread's next one) into stage `st`. */
    CV_MEMBER void load(cv_tc_smem<BT, BM> &sm, int st) {
        const int64_t kleft = k - ka;
        const int abytes = a_ok && kleft > 0 ? (kleft >= 4 ? 16 : (int)kleft * 4) : 0;
        if (a_on) cv_cp_async16(&sm.a[st][ar][ak], abytes ? pa : pa - ka, abytes);
        int bbytes;
        if (BT) {
            const int64_t kl = k - kb;
            bbytes = b_cols && kl > 0 ? (kl >= 4 ? 16 : (int)kl * 4) : 0;
            cv_cp_async16(&sm.b[st][bc][bk], bbytes ? pb : pb - kb, bbytes);
        } else {
            bbytes = kb < k ? b_cols * 4 : 0;
            cv_cp_async16(&sm.b[st][bk][bc], bbytes ? pb : pb - kb * (b_step / 8), bbytes);
        }
        pa += 8;
        pb += b_step;
        ka += 8;
        kb += 8;
    }
};

/* Warp (wm, wn) owns rows wm*BM/2 + [0, BM/2) and columns wn*32 + [0, 32) of the
 * tile: BM/32 x 4 mma tiles of 16x8; lane = 4g + t. */
template <bool BT, int BM>
CV_DEV void cv_tc_slab(const cv_tc_smem<BT, BM> &sm, int st, int wm, int wn, int g, int t,
                       float acc[BM / 32][4][4]) {
    uint32_t bb[4][2], bs[4][2];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int c = wn * 32 + j * 8 + g;
        float v0, v1;
        if (BT) {
            const float2 v = *reinterpret_cast<const float2 *>(&sm.b[st][c][2 * t]);
            v0 = v.x, v1 = v.y;
        } else {
            v0 = sm.b[st][2 * t][c], v1 = sm.b[st][2 * t + 1][c];
        }
        cv_split_tf32(v0, bb[j][0], bs[j][0]);
        cv_split_tf32(v1, bb[j][1], bs[j][1]);
    }
#pragma unroll
    for (int i = 0; i < BM / 32; i++) {
        const int r = wm * (BM / 2) + i * 16 + g;
        const float2 lo = *reinterpret_cast<const float2 *>(&sm.a[st][r][2 * t]);
        const float2 hi = *reinterpret_cast<const float2 *>(&sm.a[st][r + 8][2 * t]);
        uint32_t ab[4], as[4];
        cv_split_tf32(lo.x, ab[0], as[0]); /* (g, k t) */
        cv_split_tf32(hi.x, ab[1], as[1]); /* (g + 8, k t) */
        cv_split_tf32(lo.y, ab[2], as[2]); /* (g, k t + 4) */
        cv_split_tf32(hi.y, ab[3], as[3]); /* (g + 8, k t + 4) */
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float part[4] = {0, 0, 0, 0};
            cv_mma_tf32(part, as, bb[j]); /* the small terms first */
            cv_mma_tf32(part, ab, bs[j]);
            cv_mma_tf32(part, ab, bb[j]);
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] += part[e];
        }
    }
}

template <bool BT, int BM>
CV_DEV void cv_tc_term(const cv_gpu_term &t, int64_t bat, int64_t m, int64_t n, int64_t row0,
                       int64_t col0, cv_tc_smem<BT, BM> &sm, float acc[BM / 32][4][4]) {
    cv_tc_loader<BT, BM> ld;
    ld.init(t, bat, m, n, row0, col0);
    const int64_t slabs = (t.k + 7) / 8;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wm = warp >> 2, wn = warp & 3, g = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int s = 0; s < CV_TC_STAGES - 1; s++) {
        if (s < slabs) ld.load(sm, s);
        cv_cp_async_commit(); /* empty groups keep the count */
    }
    for (int64_t s = 0; s < slabs; s++) {
        cv_cp_async_wait<CV_TC_STAGES - 2>(); /* slab s has landed (this thread's chunks) */
        __syncthreads(); /* ... everyone's; and slab s - 1's stage is free again */
        const int64_t next = s + CV_TC_STAGES - 1;
        if (next < slabs) ld.load(sm, (int)(next % CV_TC_STAGES));
        cv_cp_async_commit();
        cv_tc_slab<BT, BM>(sm, (int)(s % CV_TC_STAGES), wm, wn, g, tq, acc);
    }
    cv_cp_async_wait<0>();
    __syncthreads(); /* the stages are free for the next term or batch */
}

/* grid.x: split x row tiles x column tiles of BM x 128, grid.y: batches
 * (grid-strided); block: CV_GEMM_THREADS. With split > 1 the partial sums go to
 * part (cv_term_chunk). */
template <bool BT, int BM, class Epi>
CV_DEV void cv_gemm_tc(const cv_gpu_term *terms, int nterms, int64_t m, int64_t n,
                       int64_t nbatch, int split, float *part, const Epi &epi) {
    const int64_t tiles_n = (n + 127) / 128, tiles = (m + BM - 1) / BM * tiles_n;
    const int64_t tile = blockIdx.x % tiles;
    const int s = (int)(blockIdx.x / tiles);
    const int64_t row0 = (tile / tiles_n) * BM, col0 = (tile % tiles_n) * 128;
    const cv_split_epi<float, Epi> out{epi, split > 1 ? part : nullptr, m, n, nbatch, s};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    for (int64_t c = col0; c < col0 + 128 && c < n; c += BM) { /* the tile in SIMT tiles */
        cv_gemm_tile<float, BM>(terms, nterms, m, n, nbatch, row0, c, s, split, out);
        __syncthreads(); /* the next one refills the same shared memory */
    }
#else
    __shared__ __align__(16) cv_tc_smem<BT, BM> sm;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wm = warp >> 2, wn = warp & 3, g = lane >> 2, tq = lane & 3;
    for (int64_t bat = blockIdx.y; bat < nbatch; bat += gridDim.y) {
        float acc[BM / 32][4][4];
#pragma unroll
        for (int i = 0; i < BM / 32; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[i][j][e] = 0;
        for (int t = 0; t < nterms; t++)
            cv_tc_term<BT, BM>(cv_term_chunk<float>(terms[t], s, split), bat, m, n, row0, col0,
                               sm, acc);
        /* acc[i][j]: rows g, g, g + 8, g + 8; columns 2t, 2t + 1, 2t, 2t + 1. */
#pragma unroll
        for (int i = 0; i < BM / 32; i++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int64_t r = row0 + wm * (BM / 2) + i * 16 + g + (e >> 1) * 8;
                if (r >= m) continue;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const int64_t c = col0 + wn * 32 + j * 8 + 2 * tq + (e & 1);
                    if (c < n) out(bat, r, c, acc[i][j][e]);
                }
            }
    }
#endif
}

#endif
