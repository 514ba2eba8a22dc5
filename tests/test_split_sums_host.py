"""The GPU's split-K sums (cuda_gemm_tiled.h's cv_gemm_ksum: 8 rows of one column a
thread, carried across a grid-strided loop) and the wgmma loop's work items (cuda_wg_work.h)
run on the host without a GPU (tests/data/split_sums_host.cpp): the chunks' partial sums of
every element added, through the epilogue, into a poisoned output, for ragged bands,
batches, narrow results and grids whose stride carries rows and batches; and a GEMM split
as the wgmma loop splits it, the tail alone or every tile, each item's sums handed to
cv_split_epi as its consumers do."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuvil_aot.compiler.toolchain import nvcc

ROOT = Path(__file__).resolve().parent.parent
NVCC = nvcc.find_nvcc()

# host code: nvcc hands a .cpp to the host compiler with CUDA's headers on its path
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc not found")


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    assert NVCC is not None
    out = tmp_path_factory.mktemp("ksum") / "ksum.so"
    subprocess.run([NVCC.path, "-std=c++17", "-O1", "-shared", "-Xcompiler", "-fPIC",
                    f"-I{ROOT / 'native' / 'include'}",
                    str(ROOT / "tests" / "data" / "split_sums_host.cpp"), "-o", str(out)],
                   check=True)
    so = ctypes.CDLL(str(out))
    so.ksum.argtypes = [ctypes.c_void_p, ctypes.c_int] + [ctypes.c_int64] * 4 + \
        [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
    so.wg_gemm.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int64] * 3 + [ctypes.c_int] * 2 + \
        [ctypes.c_int64] + [ctypes.c_void_p] * 3 + [ctypes.c_uint] * 2
    so.wg_gemm.restype = ctypes.c_int64
    return so


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 70), n=st.integers(1, 90), nb=st.integers(1, 3), split=st.integers(1, 5),
       blocks=st.integers(1, 4), threads=st.sampled_from([32, 64, 256]), seed=st.integers(0, 99))
def test_every_element_gets_its_chunks_summed(lib, m, n, nb, split, blocks, threads, seed):
    rng = np.random.default_rng(seed)
    part = rng.standard_normal((split, nb, m, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    out = np.full((nb, m, n), np.nan, np.float32)  # poisoned: every element must be written
    lib.ksum(part.ctypes.data, split, m, n, nb, 0, bias.ctypes.data, out.ctypes.data, blocks,
             threads)
    want = part.astype(np.float64).sum(axis=0) + bias
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 70), n=st.integers(1, 40), split=st.integers(1, 4),
       row0=st.integers(0, 69), blocks=st.integers(1, 3), seed=st.integers(0, 99))
def test_the_sums_of_the_rows_from_row0_leave_the_rows_above(lib, m, n, split, row0, blocks,
                                                              seed):
    """Rows [row0, m) summed from a part that holds those rows only; the rows above
    untouched (the wgmma loop's whole tiles wrote them)."""
    row0 = row0 % m
    rng = np.random.default_rng(seed)
    part = rng.standard_normal((split, m - row0, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    out = np.full((m, n), np.nan, np.float32)
    lib.ksum(part.ctypes.data, split, m, n, 1, row0, bias.ctypes.data, out.ctypes.data,
             blocks, 64)
    assert np.isnan(out[:row0]).all()
    np.testing.assert_allclose(out[row0:], part.astype(np.float64).sum(axis=0) + bias,
                               rtol=1e-6, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 700), n=st.integers(1, 300), k=st.integers(1, 400),
       bn=st.sampled_from([128, 192, 256]), split=st.integers(1, 5), tail=st.booleans(),
       seed=st.integers(0, 99))
def test_a_gemm_split_as_the_wgmma_loop_splits_it(lib, m, n, k, bn, split, tail, seed):
    """Every element once: whole tiles through the epilogue, the split ones' chunks (every
    tile's, or from row0 on, the tail's) through part and the sums; output and part
    poisoned. Fails with an item's tile, chunk or part row off."""
    rng = np.random.default_rng(seed)
    row_tiles = (m + 127) // 128
    row0 = 128 * int(rng.integers(0, row_tiles)) if tail and split > 1 else 0
    a, b = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (n, k)))
    bias = rng.standard_normal(n).astype(np.float32)
    out = np.full((m, n), np.nan, np.float32)
    part = np.full((max(split, 1), m - row0, n), np.nan, np.float32)
    items = lib.wg_gemm(a.ctypes.data, b.ctypes.data, m, n, k, bn, split, row0,
                        bias.ctypes.data, out.ctypes.data, part.ctypes.data, 2, 64)
    tiles = row_tiles * -(-n // bn)
    whole = row0 // 128 * -(-n // bn) if split > 1 else tiles
    assert items == whole + (tiles - whole) * (split if split > 1 else 1)
    want = a.astype(np.float64) @ b.astype(np.float64).T + bias
    spread = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)).T + np.abs(bias)
    assert np.all(np.abs(out - want) <= 1e-5 * spread + 1e-6), np.nanmax(np.abs(out - want))
