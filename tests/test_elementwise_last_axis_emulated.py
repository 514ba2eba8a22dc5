"""The GPU elementwise kernels' ``_v32`` entry (four elements a step along the last loop
variable: cuda_elementwise.py) run on the CPU against their ``_s32`` entry, without a GPU:
elementwise kernels have no barriers, so running each block's threads one after another
is what the device computes. The generated entries of real functions (a KV cache grown
by ``np.concatenate``, slices, a transpose that keeps the last axis, a broadcast operand,
float64 and uint8) are compiled by g++ under a few definitions of CUDA's names, and run
on random operands laid out as the host allows ``_v32`` (the last stride 1, the others and
the pointers multiples of four elements): the same element bodies, so every byte of every
output buffer, padding included, must come out equal. The device runs of the same
functions are tests/test_gpu_last_axis.py."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from conftest import load_source
from test_gpu_last_axis import SOURCE

from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.toolchain import nvcc

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or sys.platform != "linux",
                                reason="needs g++")

SHIM = r"""
#include <cmath>
#include <cstdint>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
#define __restrict__ __restrict
struct dim3_ { unsigned x, y, z; };
static dim3_ blockIdx, threadIdx, gridDim, blockDim;
typedef uint8_t cv_bool;
template <class T, int N> struct alignas(sizeof(T) * N) cv_vec { T v[N]; };
static inline float cv_maximumf(float a, float b) { return (a != a || a > b) ? a : b; }
static inline double cv_maximumd(double a, double b) { return (a != a || a > b) ? a : b; }
"""

DTYPES = {"float": np.float32, "double": np.float64, "uint8_t": np.uint8}


def _block(text: str, start: int) -> str:
    """The text from ``start`` to the end of the brace block that opens after it."""
    depth, i = 0, text.index("{", start)
    while True:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
        if depth == 0:
            return text[start:i]


def _elementwise(cu: str) -> list[str]:
    """The elementwise kernels of a unit with a ``_v32`` body."""
    names = re.findall(r"void __launch_bounds__\(\d+\) (\w+)_v32\(", cu)
    return [n for n in names if "__trap" not in _block(cu, cu.index(f"{n}_v32("))]


def _harness(cu: str, name: str) -> str:
    args = re.search(r"typedef struct \{[^}]*\} " + name + "_args;", cu).group(0)
    pieces = [_block(cu, cu.index(f"template <class I> static __device__ __forceinline__ void "
                                  f"{name}_{part}(")) for part in ("span", "strided")]
    entries = [_block(cu, cu.rindex('extern "C"', 0, cu.index(f"{name}_{e}(")))
               for e in ("s32", "v32")]
    run = "".join(f"""
extern "C" void run_{e}(const {name}_args *a, unsigned grid) {{
    gridDim = {{grid, 1, 1}}; blockDim = {{256, 1, 1}};
    for (unsigned b = 0; b < grid; b++)
        for (unsigned t = 0; t < 256; t++) {{
            blockIdx = {{b, 0, 0}}; threadIdx = {{t, 0, 0}};
            {name}_{e}(*a);
        }}
}}""" for e in ("s32", "v32"))
    return "\n".join([SHIM, args, *pieces, *entries, run])


def _operands(v32: str) -> list[tuple[type, bool, set[int]]]:
    """Per operand: its element, whether the kernel writes it, its loop variables."""
    ops = []
    for j, (const, ctype) in enumerate(re.findall(r"(const )?(\w+) \*__restrict__ p\d+ =", v32)):
        support = {int(v) for v in re.findall(rf"const int32_t s{j}_(\d+) =", v32)}
        ops.append((DTYPES[ctype], not const, support))
    return ops


def _layout(rng, n: list[int], support: set[int]) -> tuple[list[int], int]:
    """Strides (elements) as the host allows _v32: the last 1, the others multiples of 4
    over padded extents, or anything along a variable of size 1 (0 where the operand has
    no such variable), and the extent."""
    strides, step = [0] * len(n), 1
    for v in reversed(range(len(n))):
        if v in support:
            strides[v] = step
            pad = int(rng.integers(0, 3)) * 4 if v == len(n) - 1 else int(rng.integers(0, 2))
            step *= n[v] + pad
            step = -(-step // 4) * 4
            if n[v] == 1 and v < len(n) - 1:
                strides[v] = int(rng.integers(1, 8))  # never multiplied by more than 0
    return strides, step


def _trial(lib, name: str, nloops: int, ops, rng) -> None:
    """One random problem: both entries into poisoned outputs, byte for byte equal."""
    n = [int(rng.integers(1, 6)) for _ in range(nloops - 1)] + [4 * int(rng.integers(1, 5))]
    a = lib.Args()
    buffers = []
    for j, (dtype, written, support) in enumerate(ops):
        strides, extent = _layout(rng, n, support)
        raw = np.empty(extent * np.dtype(dtype).itemsize + 64, np.uint8)
        start = -raw.ctypes.data % 64  # 64-byte aligned
        buf = raw[start:start + extent * np.dtype(dtype).itemsize].view(dtype)
        buf[:] = rng.integers(0, 256, buf.shape) if dtype is np.uint8 else \
            rng.standard_normal(buf.shape)
        buffers.append((raw, buf, written))
        a.p[j] = buf.ctypes.data
        for v in range(nloops):
            a.s[j][v] = strides[v]
    for v in range(nloops):
        a.n[v] = n[v]
    outputs = []
    for entry, grid in (("s32", 3), ("v32", 2)):
        for _, buf, written in buffers:
            if written:
                buf.view(np.uint8)[:] = 0xAB  # poison: unwritten elements show
        getattr(lib, f"run_{entry}")(ctypes.byref(a), grid)
        outputs.append([buf.view(np.uint8).copy() for _, buf, written in buffers if written])
    for s32, v32 in zip(*outputs):
        np.testing.assert_array_equal(v32, s32, err_msg=f"{name} at n = {n}")


def test_v32_entries_match_the_strided_loop(tmp_path):
    module = load_source(tmp_path, SOURCE, "last_axis")
    targets = nvcc.GpuBuild(nvcc.Nvcc("nvcc", "", frozenset()), ("sm_90",)).targets
    files = pipeline.generate_sources(module, pipeline.Options(cpu_levels=(1,)), targets)[3]
    rng = np.random.default_rng(7)
    tested = []
    for unit, cu in sorted(files.items()):
        if not unit.endswith(".cu"):
            continue
        for name in _elementwise(cu):
            src = tmp_path / f"{name}.cpp"
            src.write_text(_harness(cu, name))
            so = tmp_path / f"{name}.so"
            subprocess.run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC", str(src), "-o",
                            str(so)], check=True, capture_output=True)
            ops = _operands(_block(cu, cu.rindex('extern "C"', 0, cu.index(f"{name}_v32("))))
            nloops = int(re.search(r"int64_t n\[(\d+)\];[^}]*\} " + name + "_args;",
                                   cu).group(1))

            class Args(ctypes.Structure):
                _fields_ = [("n", ctypes.c_int64 * nloops), ("p", ctypes.c_void_p * len(ops)),
                            ("s", (ctypes.c_int64 * nloops) * len(ops))]

            lib = ctypes.CDLL(str(so))
            lib.Args = Args
            for e in ("s32", "v32"):
                getattr(lib, f"run_{e}").argtypes = [ctypes.c_void_p, ctypes.c_uint]
            for _ in range(25):
                _trial(lib, name, nloops, ops, rng)
            tested.append(name)
    assert len(tested) == 4, tested  # grow, middle, wide, small: a kernel each
