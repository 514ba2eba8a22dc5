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
 *    memory.
 * Both take the epilogue the same way, so a tensor-core main loop can
 * replace cv_gemm_tiled without touching the generated code.
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

/* grid.x: row tiles * column tiles of B x B (128, or 64 when 128-tiles would
 * leave SMs idle), grid.y: batches (grid-strided); block: CV_GEMM_THREADS. */
template <class T, int B, class Epi>
CV_DEV void cv_gemm_tiled(const cv_gpu_term *terms, int nterms, int64_t m, int64_t n,
                          int64_t nbatch, const Epi &epi) {
    __shared__ __align__(16) T as[2][8][B];
    __shared__ __align__(16) T bs[2][8][B];
    constexpr int TM = B / 16;
    const int64_t tiles_n = (n + B - 1) / B;
    const int64_t row0 = (blockIdx.x / tiles_n) * B, col0 = (blockIdx.x % tiles_n) * B;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    for (int64_t bat = blockIdx.y; bat < nbatch; bat += gridDim.y) {
        T acc[TM][TM];
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TM; j++) acc[i][j] = 0;
        for (int t = 0; t < nterms; t++)
            cv_tile_term<T, B, B>(terms[t], bat, m, n, row0, col0, as, bs, acc);
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

/* One thread's share of one term: rows k = first, first + step, ... of B
 * against MR rows of A. Four loads in flight per step keep the memory busy. */
template <class T, int MR>
CV_DEV void cv_gemv_term(const cv_gpu_term &t, int64_t bat, int64_t m, int64_t row0, int64_t col,
                         int64_t first, int64_t step, T acc[MR]) {
    const T *a = reinterpret_cast<const T *>(t.a) + bat * t.a_bs;
    const T *b = reinterpret_cast<const T *>(t.b) + bat * t.b_bs + col * t.b_cs;
    int64_t arow[MR];
#pragma unroll
    for (int r = 0; r < MR; r++) arow[r] = (row0 + r < m ? row0 + r : m - 1) * t.a_rs;
    int64_t k = first;
    for (; k + 3 * step < t.k; k += 4 * step) {
        T w[4];
#pragma unroll
        for (int u = 0; u < 4; u++) w[u] = __ldg(b + (k + u * step) * t.b_rs);
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int r = 0; r < MR; r++)
                acc[r] = fma(__ldg(a + arow[r] + (k + u * step) * t.a_cs), w[u], acc[r]);
    }
    for (; k < t.k; k += step) {
        const T w = __ldg(b + k * t.b_rs);
#pragma unroll
        for (int r = 0; r < MR; r++) acc[r] = fma(__ldg(a + arow[r] + k * t.a_cs), w, acc[r]);
    }
}

/* grid.x: row groups of MR * column groups of `cols` (8, 16 or 32), grid.y:
 * batches; block: CV_GEMV_THREADS. Lane l of a warp owns column l % cols and
 * every (32 / cols)-th k of its warp's share. */
template <class T, int MR, class Epi>
CV_DEV void cv_gemv(const cv_gpu_term *terms, int nterms, int64_t m, int64_t n, int64_t nbatch,
                    int cols, const Epi &epi) {
    __shared__ T part[CV_GEMV_THREADS / 32][MR][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const int per_warp = 32 / cols;
    const int64_t tiles_n = (n + cols - 1) / cols;
    const int64_t col0 = (blockIdx.x % tiles_n) * cols, row0 = (blockIdx.x / tiles_n) * MR;
    const int64_t col = col0 + lane % cols;
    const int64_t first = (int64_t)warp * per_warp + lane / cols, step = (int64_t)nwarps * per_warp;
    for (int64_t bat = blockIdx.y; bat < nbatch; bat += gridDim.y) {
        T acc[MR];
#pragma unroll
        for (int r = 0; r < MR; r++) acc[r] = 0;
        if (col < n)
            for (int t = 0; t < nterms; t++)
                cv_gemv_term<T, MR>(terms[t], bat, m, row0, col, first, step, acc);
#pragma unroll
        for (int r = 0; r < MR; r++)
            for (int off = 16; off >= cols; off >>= 1) acc[r] += cv_shfl_xor(acc[r], off);
        if (lane < cols)
#pragma unroll
            for (int r = 0; r < MR; r++) part[warp][r][lane] = acc[r];
        __syncthreads();
        if (threadIdx.x < MR * cols) {
            const int r = threadIdx.x / cols, c = threadIdx.x % cols;
            T sum = 0;
            for (int w = 0; w < nwarps; w++) sum += part[w][r][c];
            if (row0 + r < m && col0 + c < n) epi(bat, row0 + r, col0 + c, sum);
        }
        __syncthreads(); /* part[] is reused by the next batch */
    }
}

#endif
