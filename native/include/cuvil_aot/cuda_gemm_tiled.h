/* CUDA C++, for nvcc only. The SIMT GEMM main loop (cv_gemm_tiled: block tiles of
 * 128x128 or 64x64, any strides) and split-K (cv_term_chunk, cv_gemm_ksum), which the
 * tensor-core loop shares. See cuda_gemm.h. */
#ifndef CUVIL_AOT_CUDA_GEMM_TILED_H
#define CUVIL_AOT_CUDA_GEMM_TILED_H

#include "cuvil_aot/cuda_kernel.h"

#define CV_GEMM_THREADS 256

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
 * few 64-bit values. S: the operands' stored type (cv_bf16 where a bfloat16 GEMM
 * has no wgmma, computed in T = float), T where not given. */
template <class T, int BM, int BN, class S = T>
struct cv_tile_loader {
    static constexpr int LA = BM / 32, LB = BN / 32, TPR = 8 / LA;
    const S *pa, *pb;
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
        pa = reinterpret_cast<const S *>(t.a) + bat * t.a_bs + (row_ok ? r : 0) * t.a_rs +
             ak * t.a_cs;
        pb = reinterpret_cast<const S *>(t.b) + bat * t.b_bs + bk * t.b_rs +
             (cols_ok & 1 ? col0 + bc : 0) * t.b_cs;
    }
    CV_MEMBER void load() {
#pragma unroll
        for (int i = 0; i < LA; i++) ra[i] = (row_ok && ka + i < k) ? (T)pa[i * a_cs] : (T)0;
#pragma unroll
        for (int i = 0; i < LB; i++) rb[i] = ((cols_ok >> i) & 1) && kb < k ? (T)pb[i * b_cs] : (T)0;
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

template <class T, int BM, int BN, class S = T>
CV_DEV void cv_tile_term(const cv_gpu_term &t, int64_t bat, int64_t m, int64_t n, int64_t row0,
                         int64_t col0, T (*as)[8][BM], T (*bs)[8][BN],
                         T acc[BM / 16][BN / 16]) {
    cv_tile_loader<T, BM, BN, S> ld;
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

/* Hands f the functor that runs epi's elements: epi itself. A unit's shared functor,
 * which picks its GEMM's epilogue by tag per element, overloads this to pick it once
 * (codegen/cuda_gemm.py); found by argument-dependent lookup where a main loop calls it. */
template <class E, class F>
CV_DEV void cv_epi_with(const E &epi, F &&f) {
    f(epi);
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
 * split (part NULL), the totals to epi. The split covers rows [row0, row0 + m) of each
 * batch (the wgmma loop's tail split: the rows above come in whole tiles), part holding
 * those rows only. */
template <class T, class Epi>
struct cv_split_epi {
    const Epi &epi;
    T *part;
    int64_t m, n, nbatch;
    int s;
    int64_t row0 = 0;
    CV_MEMBER void operator()(int64_t bat, int64_t i, int64_t j, T acc) const {
        if (part) part[((s * nbatch + bat) * m + i - row0) * n + j] = acc;
        else epi(bat, i, j, acc);
    }
    /* Rows i0 .. i0 + R of column j (R, or the first `count` where CHECK), their values
     * `stride` apart: whether to the partial sums and which functor (cv_epi_with) are
     * decided once, so the rows' epilogues are one straight block that the scheduler
     * interleaves. Per element, those branches cut the block at every row, and an erf GELU
     * ran as a dependent chain at 0.37 instructions a cycle per scheduler (ncu, H200). */
    template <int R, bool CHECK>
    CV_MEMBER void rows(int64_t bat, int64_t i0, int64_t j, const T *v, int stride,
                        int count) const {
        if (part) {
            for (int r = 0; r < (CHECK ? count : R); r++)
                part[((s * nbatch + bat) * m + i0 - row0 + r) * n + j] = v[r * stride];
            return;
        }
        cv_epi_with(epi, [&](const auto &e) {
#pragma unroll(CHECK ? 1 : R) /* the edges' bands: one copy of the epilogue */
            for (int r = 0; r < R; r++)
                if (!CHECK || r < count) e(bat, i0 + r, j, v[r * stride]);
        });
    }
};

/* The chunks' partial sums, added in chunk order (the same total every run), through the
 * epilogue: of rows [row0, m) of each batch, part holding those rows only (row0 > 0: the
 * wgmma loop's tail split, cv_wg_item). A thread's item is CV_KSUM_ROWS rows of one column, the lanes along the columns
 * (coalesced); items grid-strided over nbatch x bands x n. The rows go to the epilogue as
 * the wgmma loop's do (cv_split_epi::rows: the functor picked once, the rows one straight
 * block whose index products the compiler strength-reduces): per element, the generated
 * epilogue's 64-bit index math took ~130 instructions per warp's element, and BERT's
 * 4096 x 768 sums of 2 chunks 29 us where the bytes need ~11 (ncu, H200). (band, bat, j) of
 * the first item and of the grid's step are divided out once and then carried: an int64
 * division is a call of ~70 instructions. Every partial sum of an item is loaded before
 * its first store, through the read-only path: the epilogue's stores may alias `part` as
 * far as the compiler knows. */
template <class T, class Epi>
CV_DEV void cv_gemm_ksum(const T *part, int split, int64_t m, int64_t n, int64_t nbatch,
                         const Epi &epi, int64_t row0 = 0) {
    constexpr int R = CV_KSUM_ROWS;
    m -= row0; /* the split rows: bands of them, part's planes of them */
    const int64_t bands = (m + R - 1) / R, total = nbatch * bands * n, plane = nbatch * m * n;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (e >= total) return;
    int64_t j = e % n, band = e / n % bands, bat = e / n / bands;
    const int64_t dj = step % n, dband = step / n % bands, db = step / n / bands;
    const cv_split_epi<T, Epi> out{epi, nullptr, m, n, nbatch, 0};
    for (; e < total; e += step) {
        const int64_t i0 = band * R;
        const int rows = m - i0 < R ? (int)(m - i0) : R;
        const T *p = part + (bat * m + i0) * n + j;
        T v[R];
#pragma unroll
        for (int r = 0; r < R; r++) v[r] = 0;
        for (int s = 0; s < split; s++, p += plane)
#pragma unroll
            for (int r = 0; r < R; r++)
                if (r < rows) v[r] += cv_ldg(p + r * n);
        if (rows == R) {
            out.template rows<R, false>(bat, row0 + i0, j, v, 1, R);
        } else { /* the last band: one copy of the epilogue, v shifted (an index that
                  * varies would put v in local memory) */
            for (int r = 0; r < rows; r++) {
                epi(bat, row0 + i0 + r, j, v[0]);
#pragma unroll
                for (int q = 0; q + 1 < R; q++) v[q] = v[q + 1];
            }
        }
        j += dj, band += dband, bat += db;
        if (j >= n) j -= n, band++; /* j, dj < n: one carry at most; likewise band */
        if (band >= bands) band -= bands, bat++;
    }
}

/* A finished B x B tile to the epilogue, a band of 16 rows (one per ty) at a time
 * through shared memory `stage` (16 x B): one call site of epi, in a loop, where
 * calling it from the registers would inline it TM x TM times (nvcc's time), and
 * consecutive threads hand it consecutive columns (coalesced stores). */
template <class T, int B, class Epi>
CV_DEV void cv_tile_out(const T (&acc)[B / 16][B / 16], T *stage, int64_t bat, int64_t m,
                        int64_t n, int64_t row0, int64_t col0, const Epi &epi) {
    constexpr int TM = B / 16;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll 1
    for (int i = 0; i < TM; i++) {
        __syncthreads(); /* the stage is free: the k-loop's, or the last band's, reads done */
#pragma unroll
        for (int ii = 0; ii < TM; ii++)
            if (ii == i) /* acc indexed by constants only: it stays in registers */
#pragma unroll
                for (int j = 0; j < TM; j++)
                    stage[ty * B + tx * 4 + (j % 4) + 64 * (j / 4)] = acc[ii][j];
        __syncthreads();
        const int64_t r0 = row0 + (i % 4) + 64 * (i / 4);
#pragma unroll 1
        for (int e = threadIdx.x; e < 16 * B; e += CV_GEMM_THREADS) {
            const int64_t r = r0 + (e / B) * 4, c = col0 + e % B;
            if (r < m && c < n) epi(bat, r, c, stage[e]);
        }
    }
    __syncthreads(); /* the stage is the next batch's A tiles */
}

/* The B x B tile from (row0, col0) of every batch from grid.y (grid-strided), over
 * k-chunk s of `split` (cv_term_chunk). */
template <class T, int B, class Epi, class S = T>
CV_DEV void cv_gemm_tile(const cv_gpu_term *terms, int nterms, int64_t m, int64_t n,
                         int64_t nbatch, int64_t row0, int64_t col0, int s, int split,
                         const Epi &epi) {
    __shared__ __align__(16) T as[2][8][B];
    __shared__ __align__(16) T bs[2][8][B];
    constexpr int TM = B / 16;
    static_assert(sizeof(as) >= 16 * B * sizeof(T), "cv_tile_out stages its bands in as");
    for (int64_t bat = blockIdx.y; bat < nbatch; bat += gridDim.y) {
        T acc[TM][TM];
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TM; j++) acc[i][j] = 0;
        for (int t = 0; t < nterms; t++)
            cv_tile_term<T, B, B, S>(cv_term_chunk<S>(terms[t], s, split), bat, m, n, row0, col0,
                                  as, bs, acc);
        cv_tile_out<T, B>(acc, &as[0][0][0], bat, m, n, row0, col0, epi);
    }
}

/* grid.x: split x row tiles x column tiles of B x B (128, or 64 when 128-tiles would
 * leave SMs idle), grid.y: batches (grid-strided); block: CV_GEMM_THREADS. With
 * split > 1 the partial sums go to part (cv_term_chunk). S: the operands' stored type. */
template <class T, int B, class S = T, class Epi>
CV_DEV void cv_gemm_tiled(const cv_gpu_term *terms, int nterms, int64_t m, int64_t n,
                          int64_t nbatch, int split, T *part, const Epi &epi) {
    const int64_t tiles_n = (n + B - 1) / B, tiles = (m + B - 1) / B * tiles_n;
    const int64_t tile = blockIdx.x % tiles;
    const int s = (int)(blockIdx.x / tiles);
    const cv_split_epi<T, Epi> out{epi, split > 1 ? part : nullptr, m, n, nbatch, s};
    cv_gemm_tile<T, B, cv_split_epi<T, Epi>, S>(terms, nterms, m, n, nbatch, (tile / tiles_n) * B, (tile % tiles_n) * B,
                       s, split, out);
}

#endif
