/* CUDA C++, for nvcc only (and the host tests, tests/data/split_sums_host.cpp). The work
 * of the Hopper GEMM main loop (cuda_gemm_wgmma.h): which tile, batch and k-chunk an item
 * is, and which k-blocks a chunk holds. Pure functions: the producer and the consumers
 * each call them, so they agree. */
#ifndef CUVIL_AOT_CUDA_WG_WORK_H
#define CUVIL_AOT_CUDA_WG_WORK_H

#include "cuvil_aot/cuda_kernel.h"

/* Term t's k-chunk s of `split` (split-K): its first k and its BK-deep k-blocks. Chunks
 * are whole k-blocks, so a box never reaches into the next chunk (TMA zero-fills past k
 * only); cv_gemm_ksum adds the chunks' partial sums whatever their bounds. */
template <int BK>
CV_DEV void cv_wg_chunk(int64_t k, int s, int split, int64_t &k0, int &blocks) {
    const int64_t chunk = split > 1 ? ((k + split - 1) / split + BK - 1) / BK * BK : k;
    k0 = s * chunk < k ? s * chunk : k;
    const int64_t kn = k - k0 < chunk ? k - k0 : chunk;
    blocks = (int)((kn + BK - 1) / BK);
}

/* Work item w of the wgmma loop: tile `tile` (128 x BN, column tiles fastest) of batch
 * `bat`, k-chunk s of `split`. The first `whole` tile-batches (tb = bat * tiles + tile)
 * are an item each, all of k (split 1); every later one comes in `split` chunks, all
 * first chunks, then all second ones, ... With whole 0 every tile is split (the tiles too
 * few for the SMs); with whole = tiles * nb none is; in between only the tail, the last
 * round's tiles, is (cv_gpu_wg_split: rows from row0 on, one batch). Items: whole +
 * (tiles * nb - whole) * split. */
struct cv_wg_it {
    int64_t tile, bat;
    int s, split;
};
CV_DEV cv_wg_it cv_wg_item(int64_t w, int64_t tiles, int64_t nb, int64_t whole, int split) {
    if (w < whole) return {w % tiles, w / tiles, 0, 1};
    const int64_t rest = tiles * nb - whole, r = w - whole, tb = whole + r % rest;
    return {tb % tiles, tb / tiles, (int)(r / rest), split};
}

/* The items of a GEMM of `tiles` 128-row tiles a batch, `tiles_n` to a row of them: with
 * split > 1 the tiles of rows row0 and on (a multiple of 128; 0: all) in chunks, those
 * before whole (`whole` of them, as cv_wg_item takes it). */
CV_DEV int64_t cv_wg_items(int64_t tiles, int64_t tiles_n, int64_t nb, int split, int64_t row0,
                           int64_t &whole) {
    whole = split > 1 ? row0 / 128 * tiles_n : tiles * nb;
    return whole + (tiles * nb - whole) * (split > 1 ? split : 1);
}

#endif
