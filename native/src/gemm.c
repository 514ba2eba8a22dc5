/* GEMM with a fused epilogue (runtime.h): the driver for float32 and
 * float64, instantiated from gemm_impl.h, over the kernels of the usable
 * ISA level (gemm_kernels.h), picked per call so a lowered cpu_level takes
 * effect at once. */
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "frozen.h"
#include "gemm_kernels.h"
#include "gemm_reuse.h"
#include "gemm_ws.h"
#include "internal.h"

/* Below this many flops one thread does the whole GEMM: waking the pool
 * costs a few microseconds, about what 2 MFLOP take on one core. */
#define CV_GEMM_TINY_FLOPS (2.0 * (1 << 20))
/* A batch whose packed A, B and accumulator fit in this is computed by one
 * thread at a time when batches do not share B (parallel over batches). */
#define CV_GEMM_SOLO_BYTES ((size_t)2 << 20)
/* B is packed whatever the rows. Reading it where it is (the micro-kernel stepping B's
 * row stride) ran 64-256 rows of x @ w 0.81-0.95x the packed time on a Zen 5 VM but
 * 1.3-1.6x on an Intel Xeon VM (each k-step a new page and one of 4 L1 sets; GPT-2's
 * 1 x 128 prefill 13.3 -> 8.6 ms packed, bench/ab_native.py), so it was taken out. */
/* Up to this many rows (all batches) against one B take the streamed path: B packed a
 * column unit at a time per thread, into L2, not whole into a shared buffer first (GPT-2's
 * four projections, B row-major, 2 threads, Zen 4, bench/gemm_ab.py: 64 rows 0.79x the
 * time, 128 rows 0.89x (W.T: 0.90x), 256 rows 0.87x, 512 and 1024 rows 0.97-0.99x). */
#define CV_GEMM_STREAM_ROWS 1024
/* Rows of B packed at a time across a column unit's panels. */
#define CV_GEMM_PACK_ROWS 32
/* Packed A and packed B of one step each stay below this (L3-sized). */
#define CV_GEMM_GROUP_BYTES ((size_t)32 << 20)
/* The small-m path: at most this many rows; column chunks whose sums fit
 * in SMALL_TILE bytes (L1/L2), SMALL_SPLIT chunks per thread if they stay
 * SMALL_RUN bytes wide; at least SMALL_GRAIN bytes of B per task. */
#define CV_GEMM_SMALL_M 32
/* A product below TINY_FLOPS (its B sits in cache) takes row groups of at
 * most this many rows: wider column chunks (32x128x64 and 27x200x150 ran
 * 1.08-1.12x slower in one group). Larger products take one group, so B is
 * streamed once: packing A and B cost more there than the unpacked rows
 * kernel (in-process A/B, 2 threads, against the packed path: 17x768x3072
 * 0.77x the time, 24x3072x768 0.53x, 32x3072x768 0.52x, 20x512x1000 0.56x;
 * 32x128x64: 3.9 -> 2.0 us). */
#define CV_GEMM_SMALL_M_TINY 16
/* From this many rows a frozen (in, out) weight runs the dots kernel on its transpose: the
 * rows kernel keeps up to 4 rows of sums a pass over B (RMAX), so more rows pass again
 * (frozen / plain time, 8 weights from memory, Zen 4: 768 x 3072 at 3-4 rows 1.12-1.17,
 * at 8 0.61, at 16 0.57; 3072 x 768 at 2-4 rows 0.60-0.64, at 8-16 0.57-0.60). */
#define CV_GEMM_DOTS_FORM_M 5
#define CV_GEMM_SMALL_TILE ((int64_t)32 << 10)
#define CV_GEMM_SMALL_SPLIT 1 /* one contiguous run of columns per thread: each streams
                                 its part of every row in one piece, which the prefetcher
                                 follows (2 threads, 1x768x3072: 82 -> 61 us) */
#define CV_GEMM_SMALL_RUN ((int64_t)1 << 10)
#define CV_GEMM_SMALL_GRAIN ((int64_t)128 << 10)
/* One row of A: k split over the threads (gemm_ksplit.h) from this many bytes of B,
 * up to this many columns and threads. */
#define CV_GEMM_KSPLIT_BYTES ((double)(1 << 20))
#define CV_GEMM_KSPLIT_COLS 8192
#define CV_GEMM_KSPLIT_THREADS 4


#define CV_GLUE_(a, b) a##_##b
#define CV_GLUE(a, b) CV_GLUE_(a, b)
#define CV_GLUE3_(a, b, c) a##_##b##_##c
#define CV_GLUE3(a, b, c) CV_GLUE3_(a, b, c)
#define FN(name) CV_GLUE(name, SFX)
#define KERNELS(isa) CV_GLUE3(cv_kernels, SFX, isa)

#define T float
#define TI int32_t
#define SFX f32
#include "gemm_impl.h"
#undef T
#undef TI
#undef SFX

#define T double
#define TI int64_t
#define SFX f64
#include "gemm_impl.h"
