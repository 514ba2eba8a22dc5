"""The GPU's split-K sums (cuda_gemm_tiled.h's cv_gemm_ksum: 8 rows of one column a
thread, carried across a grid-strided loop) run on the host without a GPU
(tests/data/split_sums_host.cpp): the chunks' partial sums of every element added, through
the epilogue, into a poisoned output, for ragged bands, batches, narrow results and grids
whose stride carries rows and batches."""

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
    so.ksum.argtypes = [ctypes.c_void_p, ctypes.c_int] + [ctypes.c_int64] * 3 + \
        [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
    return so


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 70), n=st.integers(1, 90), nb=st.integers(1, 3), split=st.integers(1, 5),
       blocks=st.integers(1, 4), threads=st.sampled_from([32, 64, 256]), seed=st.integers(0, 99))
def test_every_element_gets_its_chunks_summed(lib, m, n, nb, split, blocks, threads, seed):
    rng = np.random.default_rng(seed)
    part = rng.standard_normal((split, nb, m, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    out = np.full((nb, m, n), np.nan, np.float32)  # poisoned: every element must be written
    lib.ksum(part.ctypes.data, split, m, n, nb, bias.ctypes.data, out.ctypes.data, blocks,
             threads)
    want = part.astype(np.float64).sum(axis=0) + bias
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
