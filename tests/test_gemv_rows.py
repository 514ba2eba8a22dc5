"""The float4 GEMV of 8-row tiles (native/include/cuvil_aot/cuda_gemv_rows.h: x @ w of an
(in, out) weight at 2 to 32 rows, a decode step's sequences folded into rows) without a
device: its 256 threads are fibers on the CPU (tests/gemv_rows_emulator.cpp), every block of
the grid the host launches runs, against float64 sums of the same values, the output
poisoned before. Random batches, rows (past whole tiles of 8), depths, widths (column tiles
of 8, 16 and 32), strides of A (rows padded, or columns apart: a transposed view), B per
batch or shared, one term or two. On a device: tests/test_gpu_dot_gemv.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import built_emulator
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or sys.platform != "linux",
                                reason="g++ and ucontext needed")


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    return built_emulator(tmp_path_factory.mktemp("emu"), "gemv_rows_emulator.cpp")


def emulate(exe: Path, nb: int, m: int, k: int, n: int, a_rs: int, a_cs: int, b_rs: int,
            terms: int, sm: int, seed: int) -> tuple[float, int]:
    """The largest error over sum |a w| of any output, and how many stayed poisoned."""
    args = [nb, m, k, n, a_rs, a_cs, b_rs, terms, sm, seed]
    out = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]), int(out[1])


@settings(max_examples=20, deadline=None)
@given(nb=st.integers(1, 4), m=st.integers(2, 32), k=st.integers(1, 700),
       n4=st.integers(1, 160), layout=st.sampled_from(["contiguous", "padded", "transposed"]),
       pad=st.integers(0, 3), terms=st.integers(1, 2), sm=st.sampled_from([4, 132]),
       seed=st.integers(0, 2**31 - 1))
def test_every_output_is_the_sum_of_its_products(emulator, nb, m, k, n4, layout, pad, terms,
                                                 sm, seed):
    n = 4 * n4
    a_rs, a_cs = {"contiguous": (0, 1), "padded": (k + 5, 1), "transposed": (1, m + 3)}[layout]
    err, poisoned = emulate(emulator, nb, m, k, n, a_rs, a_cs, n + 4 * pad, terms, sm, seed)
    assert poisoned == 0
    assert err < 1e-6  # float32 FMAs in a few partial sums: k * 2^-24 at most


@pytest.mark.parametrize("m, k, n", [(8, 768, 2304), (8, 768, 768), (8, 3072, 768),
                                     (16, 768, 3072)])
def test_the_decode_steps_shapes(emulator, m, k, n):
    """GPT-2's projections at 8 and 16 folded rows, the host's tiles for an H100's SMs."""
    err, poisoned = emulate(emulator, 1, m, k, n, 0, 1, n, 1, 132, m + k + n)
    assert poisoned == 0 and err < 1e-6
