"""What the CUDA kernels and the host code that launches them (gpu_launch.py) agree on:
each kind's entry points, in the order of the module's kernel table, and the block
sizes, vector widths and row lengths the kernels are written for."""

from __future__ import annotations

from cuvil_aot.compiler.ir.group import Kind

BLOCK = 256  # elementwise, warp-per-row and tiled GEMM blocks
# Block-per-row teams. Measured on the H200 (softmax 4096 x 4096; bench/gpu/gpu_rows.md):
# re-reading the row from L1 takes 61-68 us with 256 threads (67 with 512, 115 with 1024);
# the cached kernel (row and exp in registers, loads as selects so a pass's loads overlap,
# x * (1/sum)) 42 us, against 35.7 for a hand-written kernel of the same plan.
ROW_BLOCK = 256
GEMV_BLOCK = 1024
VEC = 4  # elements per step of a _flat kernel
# Many rows of up to 64 (a pooling's 7 x 7): 8 lanes per row. A warp per row has one
# row's loads in flight per warp: the ResNet head's pooling at batch 256 (26 MB) took
# 21.1 us so, 8.5 with 8 lanes per row (CUPTI, bench/gpu/h200_2026-11-30c/).
QUARTER = 8
QUARTER_ROW_MAX = 64  # the longest row that a quarter warp (_q32) takes
ROW_CACHE = 16  # elements per thread a cached block-per-row kernel keeps in registers
ROW_RUN = 4  # _bcu32: a thread's elements in runs of 4, moved as one vector each

DOT_ROWS = DOT_COLS = 4  # a dot GEMV's tile (cv_gemv_dot: 8 warps, 4 rows x 4 columns)
DOT_MMA_COLS = 16  # its tile on tensor cores (float32, m <= 16: cuda_gemv.h's CV_DOT_MMA_COLS)
DOT_VARIANT = 8  # a one-kernel's v[g] for a GEMM phase run by the dot GEMV (else: its rows)
# The dot GEMV's tiles of 8 columns (fewer tiles than SMs: a block per SM at most) on 16
# warps, each walking a sixteenth of k: with 8, a 16 x 3072 x 768 GEMV waited on six
# rounds of loads a warp, at a fifth of the copy rate (bench/gpu/h100_2026-12-05b/)
DOT_WIDE_BLOCK = 512

ENTRIES = {Kind.ELEMENTWISE: ("s32", "s64", "flat", "v32"),
           Kind.ROW: ("w32", "w64", "b32", "b64", "bc32", "bcu32", "q32"),
           Kind.GEMM: ("tiled", "tiled64", "gemv1", "gemv4", "ksum", "dot", "dotw"),
           Kind.SCAN: ("r32", "r64"),  # cuda_scan.py: 32- or 64-bit offsets
           Kind.LOOP: ()}  # none of its own: its body's kernels (run_time_loops.py)
# float32 only: tensor cores, B with n (tc64) or k (tct64) contiguous; tiles of 64 rows (as
# fast as 128 or faster at every shape of bench/gpu/tct_probe.cu on the H200)
GEMM_TC = ("tc64", "tct64")
# float32 only: the float4 GEMV of up to 8 rows a tile (cuda_gemv_rows.h), blocks of
# GEMV_ROWS_BLOCK threads
GEMV_ROWS = ("gemv8",)
GEMV_ROWS_BLOCK = 256
