/* Helpers for the GPU half of generated wrappers (include after pywrap.h):
 * which path a call takes, argument descriptions, launch-shape choices. */
#ifndef CUVIL_AOT_GPU_WRAP_H
#define CUVIL_AOT_GPU_WRAP_H

#include "cuvil_aot/cuda_driver.h"
#include "cuvil_aot/cuda_q8.h"
#include "cuvil_aot/cuda_transpose.h"
#include "cuvil_aot/pywrap.h"

/* By CV_DT_* */
static const char *const cv_dtype_names[] = {"bool",    "int32",   "int64", "float16",
                                             "float32", "float64", "int8",  "int16",
                                             "uint8",   "uint64",  "bfloat16"};
static const int cv_dtype_sizes[] = {1, 4, 8, 2, 4, 8, 1, 2, 1, 8, 2};

/* One kernel's launch, planned before any is made (see gpu_wrapper._launches). */
typedef struct cv_gpu_plan {
    int kid;
    uint32_t grid, gy, block;
    int run;
    uint32_t sum_grid; /* a GEMM's split-K: its _ksum launch (0: none) */
    uint32_t smem;     /* dynamic shared memory (the wgmma main loop's) */
    int wg;            /* a GEMM on the wgmma main loop: its argument has tensor maps */
    uint32_t tr;       /* ... over transposed copies: bit 2t + side (cv_gpu_wg_transposed) */
} cv_gpu_plan;

/* Whether a call may be a GPU call: its first argument that is not a Python
 * or NumPy scalar is something else than a NumPy array. The GPU path then
 * decides (and hands back to the CPU path what is no device array). */
static int cv_gpu_candidate(PyObject *const *argv, int n) {
    for (int i = 0; i < n; i++) {
        PyObject *o = argv[i];
        if (PyArray_Check(o)) return 0;
        if (PyFloat_Check(o) || PyLong_Check(o) || PyArray_IsScalar(o, Generic)) continue;
        return 1;
    }
    return 0;
}

/* "float32 device array of shape (2, 3) on cuda:0", or the CPU description. */
static void cv_gpu_describe(PyObject *obj, const cv_gpu_array *a, int is_device, char *buf,
                            size_t size) {
    if (!is_device) {
        cv_describe(obj, buf, size);
        return;
    }
    int len = snprintf(buf, size, "%s device array of shape (",
                       a->dtype >= 0 ? cv_dtype_names[a->dtype] : "unsupported-dtype");
    for (int d = 0; d < a->ndim && len < (int)size; d++)
        len += snprintf(buf + len, size - len, d ? ", %lld" : "%lld", (long long)a->shape[d]);
    if (len < (int)size)
        snprintf(buf + len, size - len, "%s on cuda:%d", a->ndim == 1 ? ",)" : ")", a->device);
}

static int cv_gpu_is_c_contiguous(const cv_gpu_array *a) {
    int64_t expect = 1;
    for (int d = a->ndim - 1; d >= 0; d--) {
        if (a->shape[d] == 0) return 1;
        if (a->shape[d] != 1 && a->strides[d] != expect) return 0;
        expect *= a->shape[d];
    }
    return 1;
}

/* Byte range [lo, hi) an array touches; empty arrays touch nothing. */
static void cv_gpu_extent(const cv_gpu_array *a, uintptr_t *lo, uintptr_t *hi) {
    intptr_t first = 0, last = 0, size = a->dtype >= 0 ? cv_dtype_sizes[a->dtype] : 1;
    for (int d = 0; d < a->ndim; d++) {
        if (a->shape[d] == 0) {
            *lo = *hi = 0;
            return;
        }
        intptr_t span = (intptr_t)a->strides[d] * (a->shape[d] - 1) * size;
        if (span < 0) first += span; else last += span;
    }
    *lo = (uintptr_t)a->data + first;
    *hi = (uintptr_t)a->data + last + size;
}

static int cv_gpu_overlaps(const cv_gpu_array *x, const cv_gpu_array *y) {
    uintptr_t xl, xh, yl, yh;
    cv_gpu_extent(x, &xl, &xh);
    cv_gpu_extent(y, &yl, &yh);
    return xl < yh && yl < xh;
}

/* Whether every offset of a kernel's operands, and its flat index, fit in 31
 * bits: n[nloops] sizes, s[nops][nloops] element strides, `total` points. */
static int cv_gpu_fits32(const int64_t *n, int nloops, const int64_t *s, int nops,
                         int64_t total) {
    const int64_t limit = INT32_MAX / 2; /* room for one grid-stride step past the end */
    if (total > limit) return 0;
    for (int j = 0; j < nops; j++) {
        int64_t reach = 0;
        for (int v = 0; v < nloops; v++) {
            int64_t st = s[j * nloops + v];
            reach += (n[v] > 0 ? n[v] - 1 : 0) * (st < 0 ? -st : st);
        }
        if (reach > limit) return 0;
    }
    return 1;
}

/* Whether the float4 GEMV's 32-bit index math holds for a term of an m x n
 * product: n, and every offset within one batch of A (m x k) and B (k x n). */
static int cv_gpu_term_fits32(const cv_gpu_term *t, int64_t m, int64_t n) {
    const int64_t limit = INT32_MAX / 2, k = t->k > 0 ? t->k - 1 : 0;
    const int64_t a = (m - 1) * (t->a_rs < 0 ? -t->a_rs : t->a_rs) +
                      k * (t->a_cs < 0 ? -t->a_cs : t->a_cs);
    const int64_t b = k * (t->b_rs < 0 ? -t->b_rs : t->b_rs) + n;
    return n <= limit && a <= limit && b <= limit;
}

/* Split-K for a GEMM of `tiles` block tiles (batches included), fewer than the SMs:
 * k-chunks for about two blocks per SM, each chunk at least CV_SPLIT_MIN_K deep over all
 * terms (`depth`: their k summed), the partial sums at most CV_SPLIT_MAX_SUMS elements
 * (`total`: the result's). 1: no split. */
#define CV_SPLIT_MIN_K 128
#define CV_SPLIT_MAX_SUMS ((int64_t)1 << 24)
static int cv_gpu_split(int64_t tiles, int64_t depth, int64_t total, int sm_count) {
    int64_t split = 2 * (int64_t)sm_count / (tiles > 0 ? tiles : 1);
    if (split > depth / CV_SPLIT_MIN_K) split = depth / CV_SPLIT_MIN_K;
    if (split > 16) split = 16;
    while (split > 1 && split * total > CV_SPLIT_MAX_SUMS) split--;
    return split > 1 ? (int)split : 1;
}

/* A TMA tensor map, as CUtensorMap (cuda.h, which host code need not include): the
 * wgmma main loop's argument holds them (cuda_wgmma.py; the CUDA side's cv_tmap is
 * CUtensorMap itself, cuda_gemm_wgmma.h). */
typedef struct cv_tmap {
    _Alignas(128) uint64_t opaque[16];
} cv_tmap;

/* The map of one operand of the wgmma main loop: nb batches (bs elements apart; 0: one
 * batch for all) of `rows` rows of k contiguous elements, ld apart, in boxes of box_k x
 * box_rows x 1, swizzled as `swizzle` (CUtensorMapSwizzle). 1 when made; 0 where TMA
 * cannot read it (16-byte alignment of the base, ld and bs; sizes past its 32-bit
 * coordinates) or the driver refused. */
static int cv_gpu_wg_box_map(const cv_gpu_api *gpu, cv_tmap *map, int elem, const char *base,
                             int64_t rows, int64_t k, int64_t ld, int64_t nb, int64_t bs,
                             int box_k, int box_rows, int swizzle) {
    const int64_t big = (int64_t)1 << 31, per16 = 16 / elem; /* elements in 16 bytes */
    if (((uintptr_t)base & 15) || ld <= 0 || ld % per16 || bs < 0 || bs % per16 ||
        rows <= 0 || k <= 0 || rows >= big || k >= big || nb >= big)
        return 0;
    const uint64_t dims[3] = {(uint64_t)k, (uint64_t)rows, (uint64_t)(bs ? nb : 1)};
    const uint64_t strides[2] = {(uint64_t)ld * elem, (uint64_t)(bs ? bs : ld * rows) * elem};
    const uint32_t box[3] = {(uint32_t)box_k, (uint32_t)box_rows, 1};
    enum { FLOAT32 = 7, BFLOAT16 = 9 }; /* CUtensorMapDataType */
    return gpu->tensor_map(map, elem == 2 ? BFLOAT16 : FLOAT32, 3, base, dims, strides, box,
                           swizzle) == 0;
}

enum { CV_TMAP_SWIZZLE_NONE = 0, CV_TMAP_SWIZZLE_128B = 3 }; /* CUtensorMapSwizzle */

/* A K-major operand as the header's cv_wg_make_map makes it: rows of 128 bytes of k a
 * box, the 128-byte swizzle. */
static int cv_gpu_wg_map_of(const cv_gpu_api *gpu, cv_tmap *map, int elem, const char *base,
                            int64_t rows, int64_t k, int64_t ld, int64_t nb, int64_t bs,
                            int box_rows) {
    return cv_gpu_wg_box_map(gpu, map, elem, base, rows, k, ld, nb, bs, 128 / elem, box_rows,
                             CV_TMAP_SWIZZLE_128B);
}

static int cv_gpu_wg_map(const cv_gpu_api *gpu, cv_tmap *map, const char *base, int64_t rows,
                         int64_t k, int64_t ld, int64_t nb, int64_t bs, int box_rows) {
    return cv_gpu_wg_map_of(gpu, map, 4, base, rows, k, ld, nb, bs, box_rows);
}

/* cv_gpu_wg_maps for bfloat16 operands (the bf16 kind, boxes of 64 x rows): K-major
 * both, 16-byte aligned rows (k % 8 == 0 where they are packed). */
static int cv_gpu_wg_maps_bf16(const cv_gpu_api *gpu, cv_tmap *maps, const cv_gpu_term *t,
                               int nterms, int64_t m, int64_t n, int64_t nb, int bn) {
    for (int i = 0; i < nterms; i++)
        if (t[i].a_cs != 1 || t[i].b_rs != 1 ||
            !cv_gpu_wg_map_of(gpu, &maps[2 * i], 2, t[i].a, m, t[i].k, t[i].a_rs, nb, t[i].a_bs,
                              128) ||
            !cv_gpu_wg_map_of(gpu, &maps[2 * i + 1], 2, t[i].b, n, t[i].k, t[i].b_cs, nb,
                              t[i].b_bs, bn))
            return 0;
    return 1;
}

/* Every term's maps (A: m rows, boxes of 128; B: n rows, boxes of bn) into maps[2t],
 * maps[2t + 1]: 1 when all were made, both operands K-major (A's k and B's k contiguous). */
static int cv_gpu_wg_maps(const cv_gpu_api *gpu, cv_tmap *maps, const cv_gpu_term *t,
                          int nterms, int64_t m, int64_t n, int64_t nb, int bn) {
    for (int i = 0; i < nterms; i++)
        if (t[i].a_cs != 1 || t[i].b_rs != 1 ||
            !cv_gpu_wg_map(gpu, &maps[2 * i], t[i].a, m, t[i].k, t[i].a_rs, nb, t[i].a_bs, 128) ||
            !cv_gpu_wg_map(gpu, &maps[2 * i + 1], t[i].b, n, t[i].k, t[i].b_cs, nb, t[i].b_bs, bn))
            return 0;
    return 1;
}

/* Whether a GEMM of `rows` (batches included) and `flops` runs sooner on the wgmma main loop
 * after `copies` transposes of `elems` floats in all (each read and written once: 8 bytes,
 * at 3 TB/s, and 2 us a launch) than on cv_gemm_tc over the operands as they are. 3xTF32
 * (x3) rates measured at GPT-2's projections (bench/gpu/wg_copies.py, H200 2026-12-03,
 * bench/gpu/h200_2026-12-03b/wg_copies.txt): 1024 rows, cv_gemm_tc 23-37 TFLOP/s against
 * wgmma 33-54 (the copies 1.5-2.4 TB/s: 3-8 us); 128 rows, cv_gemm_tc 18-21 against wgmma
 * 5-19, where the copies never paid. One TF32 product: 60 against 200, estimates. */
static int cv_gpu_wg_transpose_pays(int64_t rows, double flops, int64_t elems, int copies,
                                    int x3) {
    const double tc = x3 ? 28e12 : 60e12, wg = x3 ? 40e12 : 200e12;
    return rows >= 256 && flops / tc > flops / wg + (double)elems * 8 / 2e12 + copies * 2e-6;
}

/* 3xTF32 over operands as they are where every term's B is N-major (b_cs 1, b_rs not: x @
 * w of an (in, out) weight) and A K-major: the kernel transposes B's tiles in shared
 * memory as it splits them (cuda_wg_split.h, cv_wg_split_nmajor), no copies. B's map
 * reads k rows of n in boxes of bn / 2 columns (each consumer's half) x 32 rows of k,
 * unswizzled; A's as cv_gpu_wg_maps. 1 when every map was made and the wgmma main loop
 * pays at these rows (cv_gpu_wg_transpose_pays without copies: 256 rows or more). */
static int cv_gpu_wg_maps_nmajor(const cv_gpu_api *gpu, cv_tmap *maps, const cv_gpu_term *t,
                                 int nterms, int64_t m, int64_t n, int64_t nb, int bn) {
    int64_t depth = 0;
    for (int i = 0; i < nterms; i++) depth += t[i].k;
    if (!cv_gpu_wg_transpose_pays(m * nb, 2.0 * m * n * depth * nb, 0, 0, 1)) return 0;
    for (int i = 0; i < nterms; i++)
        if (t[i].a_cs != 1 || t[i].b_cs != 1 || t[i].b_rs == 1 ||
            !cv_gpu_wg_map(gpu, &maps[2 * i], t[i].a, m, t[i].k, t[i].a_rs, nb, t[i].a_bs, 128) ||
            !cv_gpu_wg_box_map(gpu, &maps[2 * i + 1], 4, t[i].b, t[i].k, n, t[i].b_rs, nb,
                               t[i].b_bs, bn / 2, 32, CV_TMAP_SWIZZLE_NONE))
            return 0;
    return 1;
}

/* The floats of the K-major copy of term t's operand `side` (0: A, m x k; 1: B, k x n):
 * rows of k rounded up to 4 (16-byte rows for TMA), m (A) or n (B) of them, per batch
 * where the operand has batches; 0 where it is K-major already (A's k or B's k
 * contiguous: mapped as it is) or empty. */
static int64_t cv_gpu_wg_copy_size(const cv_gpu_term *t, int side, int64_t m, int64_t n,
                                   int64_t nb) {
    if (side ? t->b_rs == 1 : t->a_cs == 1) return 0;
    const int64_t bs = side ? t->b_bs : t->a_bs;
    return (bs ? nb : 1) * (side ? n : m) * ((t->k + 3) / 4 * 4);
}

/* The transpose of term t's operand `side` into `out` (cuda_transpose.h) into *tr, and t
 * rewritten to read the copy: K-major, rows ld apart, batches rows * ld apart (0: one). */
static void cv_gpu_wg_copy(cv_gpu_term *t, int side, int64_t m, int64_t n, int64_t nb,
                           float *out, cv_transpose_args *tr) {
    const int64_t ld = (t->k + 3) / 4 * 4;
    if (side) { /* B[p, j] at p * b_rs + j * b_cs: rows j, columns p */
        *tr = (cv_transpose_args){(const float *)t->b, out, n, t->k, t->b_bs ? nb : 1, t->b_cs,
                                  t->b_rs, t->b_bs, ld};
        t->b = (const char *)out;
        t->b_rs = 1, t->b_cs = ld, t->b_bs = t->b_bs ? n * ld : 0;
    } else { /* A[i, p] at i * a_rs + p * a_cs: rows i, columns p */
        *tr = (cv_transpose_args){(const float *)t->a, out, m, t->k, t->a_bs ? nb : 1, t->a_rs,
                                  t->a_cs, t->a_bs, ld};
        t->a = (const char *)out;
        t->a_rs = ld, t->a_cs = 1, t->a_bs = t->a_bs ? m * ld : 0;
    }
}

/* Whether term t's operand `side`, K-major as it is, has what cv_gpu_wg_map needs of its
 * layout: a 16-byte aligned base, rows and batches (16 bytes) apart. */
static int cv_gpu_wg_aligned(const cv_gpu_term *t, int side) {
    const char *base = side ? t->b : t->a;
    const int64_t ld = side ? t->b_cs : t->a_rs, bs = side ? t->b_bs : t->a_bs;
    return !((uintptr_t)base & 15) && ld > 0 && ld % 4 == 0 && bs >= 0 && bs % 4 == 0;
}

/* The wgmma main loop over K-major copies (TF32 wgmma reads K-major tiles only): every
 * term's operand that is not K-major (B with n contiguous: x @ w of an (in, out) weight;
 * A with m contiguous; or strided either way) copied, transposed, into scratch memory of
 * the call (mem[2t + side], on[2t + side] set: the caller frees it), its copy's launch
 * described in tr[2t + side], t[] rewritten to read the copies, and every term's maps made
 * into maps (cv_gpu_wg_maps). Returns the copies as a mask (bit 2t + side, > 0), 0 where
 * no operand needs one, an operand K-major as it is cannot be mapped (its rows not 16-byte
 * aligned: k % 4 != 0 in a contiguous x), the copies do not pay
 * (cv_gpu_wg_transpose_pays), the device has no memory pools or a map is refused (t[]
 * unchanged), -1 on error (raised). */
static int cv_gpu_wg_transposed(const cv_gpu_api *gpu, int dev, uintptr_t stream,
                                cv_tmap *maps, cv_gpu_term *t, int nterms, int64_t m,
                                int64_t n, int64_t nb, int bn, int x3, cv_transpose_args *tr,
                                cv_gpu_array *mem, int *on) {
    cv_gpu_term wt[8];
    int mask = 0, copies = 0;
    int64_t elems = 0, depth = 0;
    if (nterms > 4) return 0;
    for (int i = 0; i < nterms; i++) {
        depth += t[i].k;
        for (int side = 0; side < 2; side++) {
            const int64_t e = cv_gpu_wg_copy_size(&t[i], side, m, n, nb);
            if (e > 0) mask |= 1 << (2 * i + side), elems += e, copies++;
            else if (!cv_gpu_wg_aligned(&t[i], side)) return 0; /* no map: no copies either */
        }
    }
    if (!mask || !cv_gpu_wg_transpose_pays(m * nb, 2.0 * m * n * depth * nb, elems, copies,
                                           x3))
        return 0;
    memcpy(wt, t, nterms * sizeof *t);
    for (int c = 0; c < 2 * nterms; c++) {
        if (!(mask >> c & 1)) continue;
        const int64_t e = cv_gpu_wg_copy_size(&t[c / 2], c % 2, m, n, nb);
        const int r = gpu->scratch(dev, CV_DT_FLOAT32, 1, &e, stream, &mem[c]);
        if (r) return r < 0 ? -1 : 0; /* 1: no pools */
        on[c] = 1;
        cv_gpu_wg_copy(&wt[c / 2], c % 2, m, n, nb, (float *)mem[c].data, &tr[c]);
    }
    if (!cv_gpu_wg_maps(gpu, maps, wt, nterms, m, n, nb, bn)) return 0;
    memcpy(t, wt, nterms * sizeof *t);
    return mask;
}

/* Split-K of the wgmma main loop (one block per SM, a persistent grid over its work items:
 * the 128 x bn tiles of m x n, batches included, cv_wg_item), from a model of its time in
 * a tile's whole-k time T. Every tile in s chunks: rounds(s) / s * T (rounds: ceil(tiles *
 * s / sms)), plus the partial sums each chunk writes and _ksum reads (8 bytes an element of
 * the split rows, at 2.2 TB/s) and _ksum's launch (4 us); unsplit, rounds(1) * T. T from
 * the rate of an SM: 3xTF32 (x3 1) 75 TFLOP/s over 132 SMs, one TF32 product (0) 369,
 * bfloat16 (2) 678 (bench/gpu/h200_2026-12-03, wgmma_probe.cu). The 3xTF32 rate and the
 * sums' cost are fitted to one call's kernels, each GEMM split as modelled before and never
 * (bench/gpu/h200_2026-12-04, kernel_seq_split_*.txt): unsplit 1024 x 768 x 768 took 43.7
 * us, 4096 x 768 x 768 87.7 (two rounds); the sums of 1024 x 768 in two chunks 9.3, of
 * 4096 x 768 26.8. So 1024 x 768 x 768 (48 tiles) gets 2 (34.1 against 43.7 us), 1024 x
 * 768 x 3072 gets 5, and 192 tiles at k = 768 (4096 x 768 x 768, 1024 x 3072 x 768) are
 * not split (87.7 against 94.7 us; 84.0-93.3 against 86.8-91.3), while 4096 x 768 x 3072
 * is (253 against 298).
 * With `tail` (one batch): only the last, partial round's tiles may be split, the rows of
 * tiles before them whole (*row0: the first split row; the grid's blocks take whole tiles
 * first, then chunks, round-robin): ceil(whole / sms) * T * (1 - 1/s) + rounds(whole +
 * tail * s) * T / s, the sums of the tail's rows only. GPT-2's 1024 x 2304 x 768 (144
 * tiles): 126 whole and 18 in 6 chunks, ~62 us by the model against 88 unsplit; the
 * 192-tile GEMMs in 2 (~79 against 88). CUVIL_AOT_CUDA_WG_TAIL=0 turns the tail split off.
 * Only the rows of whole tiles within whole rounds are tried (and one row of tiles fewer):
 * the host runs this per GEMM and call. Chunks at least CV_WG_SPLIT_MIN_K deep (`depth`:
 * the terms' k summed; with 256, GPT-2 8 x 128's QKV split its tail in 3: its four wgmma
 * GEMMs 224.0-224.8 us a call against 219.8 with chunks of 128, the sums 28.9 against
 * 30.4-30.5, H100, bench/gpu/h100_2026-12-05c/abtree_split128.txt), at most 16, the sums
 * at most CV_SPLIT_MAX_SUMS; a chunk past a term's k is empty (its partial sums zero).
 * 1: no split. */
#define CV_WG_SPLIT_MIN_K 128
static int cv_gpu_wg_split(int64_t m, int64_t n, int64_t nb, int64_t depth, int sm_count,
                           int bn, int x3, int tail, int64_t *row0) {
    const int64_t tiles_n = (n + bn - 1) / bn, row_tiles = (m + 127) / 128;
    const int64_t tiles = row_tiles * tiles_n * nb;
    *row0 = 0;
    if (tiles <= 0) return 1;
    const double rate = (x3 == 1 ? 75e12 : x3 == 2 ? 678e12 : 369e12) / 132,
                 tile = 2.0 * 128 * bn * depth / rate;
    int best = 1;
    double best_t = (double)((tiles + sm_count - 1) / sm_count) * tile;
    /* rows of whole tiles: none, or (tail) those within whole rounds and one fewer */
    const int64_t full = tail && nb == 1 ? tiles / sm_count * sm_count / tiles_n : 0;
    const int64_t tried[3] = {0, full - 1 > 0 ? full - 1 : 0, full};
    for (int c = 0; c < 3; c++) {
        const int64_t rt = tried[c], whole = rt * tiles_n, rest = tiles - whole;
        const double total = (double)(nb * m - rt * 128) * n; /* the split elements */
        if (rest <= 0 || (c > 0 && rt == tried[c - 1])) continue;
        for (int s = 2; s <= 16 && s <= depth / CV_WG_SPLIT_MIN_K; s++) {
            if (s * total > CV_SPLIT_MAX_SUMS) break;
            const int64_t work = whole + rest * s, grid = work < sm_count ? work : sm_count;
            const double t = (double)((whole + grid - 1) / grid) * tile * (1 - 1.0 / s) +
                             (double)((work + grid - 1) / grid) * tile / s +
                             s * total * 8 / 2.2e12 + 4e-6;
            if (t < best_t) best = s, best_t = t, *row0 = rt * 128;
        }
    }
    return best;
}

/* The bfloat16 wgmma's tile width: `narrow` (192) where its tiles of 128 rows fill the SMs
 * in fewer columns' time, rounds x width, than `wide` (256) ones; BERT-base's N = 768 at
 * 4096 rows: 128 narrow tiles in one round (132 SMs) against 96 wide. */
static int cv_gpu_wg_bn(int64_t m, int64_t n, int64_t nb, int sm_count, int narrow, int wide) {
    const int64_t rows = (m + 127) / 128 * nb;
    const int64_t rn = (rows * ((n + narrow - 1) / narrow) + sm_count - 1) / sm_count;
    const int64_t rw = (rows * ((n + wide - 1) / wide) + sm_count - 1) / sm_count;
    return rn * narrow < rw * wide ? narrow : wide;
}

/* Blocks for `work` items of `block` threads, at most enough to fill the
 * device `waves` times over (the kernels loop grid-stride). */
static uint32_t cv_gpu_grid(int64_t work, int block, int sm_count, int per_sm) {
    int64_t blocks = (work + block - 1) / block, cap = (int64_t)sm_count * per_sm;
    if (blocks > cap) blocks = cap;
    return (uint32_t)(blocks > 0 ? blocks : 1);
}

/* A block per `block` items of work, as many as the grid holds: no block loops. For
 * kernels whose work per item is a few loads and stores, where the scheduler's order
 * of fresh blocks beats a grid-stride loop (H200, bench/gpu/chain_probe.cu: 16M-element
 * chain 49.4 us against 51.6 with sm x 8 blocks; softmax 4096 x 4096 a block per row
 * 36.5 us against 38.6). */
static uint32_t cv_gpu_grid_all(int64_t work, int block) {
    int64_t blocks = (work + block - 1) / block;
    if (blocks > 0x7fffffff) blocks = 0x7fffffff;
    return (uint32_t)(blocks > 0 ? blocks : 1);
}

/* Checks an out= array of a GPU call: a device array of the dtype, shape and
 * device of the result, writeable. Fills *o (release it). */
static int cv_gpu_check_out(const cv_runtime_api *api, const char *fname, int index,
                            PyObject *obj, int dtype, int ndim, const int64_t *shape, int device,
                            cv_gpu_array *o) {
    char got[200];
    int r = api->gpu->array(obj, o);
    if (r < 0) return -1;
    int bad_shape = r && o->ndim != ndim;
    for (int d = 0; r && !bad_shape && d < ndim; d++) bad_shape = o->shape[d] != shape[d];
    if (!r || o->dtype != dtype || bad_shape || o->device != device || o->readonly) {
        cv_gpu_describe(obj, o, r, got, sizeof got);
        if (r) api->gpu->release(o);
        PyErr_Format(r && bad_shape ? PyExc_ValueError : PyExc_TypeError,
                     "%s(): out[%d] must be a writeable %s device array of the result's shape on "
                     "cuda:%d, got %s", fname, index, cv_dtype_names[dtype], device, got);
        return -1;
    }
    return 0;
}

/* A GPU call on a module built without CUDA kernels. */
/* CudaError: the module has GPU kernels, but none for this function (`why`). */
static PyObject *cv_gpu_refused(const char *fname, const char *why) {
    PyObject *mod = PyImport_ImportModule("cuvil_aot.errors");
    PyObject *type = mod ? PyObject_GetAttrString(mod, "CudaError") : NULL;
    Py_XDECREF(mod);
    if (type) {
        PyErr_Format(type, "%s(): called with device arrays, but %s", fname, why);
        Py_DECREF(type);
    }
    return NULL;
}

static PyObject *cv_gpu_unavailable(const char *fname) {
    PyObject *mod = PyImport_ImportModule("cuvil_aot.errors");
    PyObject *type = mod ? PyObject_GetAttrString(mod, "CudaError") : NULL;
    Py_XDECREF(mod);
    if (type) {
        PyErr_Format(type, "%s(): called with device arrays, but this module was built without "
                     "CUDA kernels (no nvcc at build time, or no CUDA architectures asked for)",
                     fname);
        Py_DECREF(type);
    }
    return NULL;
}

#endif
