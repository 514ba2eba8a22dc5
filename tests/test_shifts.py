"""<<, >>, np.left_shift and np.right_shift (Op.LSHIFT / Op.RSHIFT; codegen/ops_c.py)
against NumPy exactly, on random values of every integer dtype pair NumPy's resolution
gives a loop for (and bool, whose loop is int8), shift amounts from negative to past the
width (NumPy's 0, or -1 for a right shift of a negative value), Python ints, augmented
assignment, and a 4-bit unpacking as quantized models write it; outputs poisoned before
the call. The GPU code is compiled by nvcc for sm_90 where nvcc is found."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import check_exact, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st

SOURCE = '''
import numpy as np
import cuvil_aot as cv

PAIRS = ["i8[N], i8[N]", "u8[N], u8[N]", "i16[N], i64[N]", "i32[N], i32[N]",
         "i64[N], i64[N]", "u64[N], u64[N]", "bool_[N], bool_[N]", "u8[N], i64[N]",
         "i32[N], u8[N]"]

@cv.optimize(signatures=PAIRS)
def shifts(a, b):
    return a << b, a >> b, np.left_shift(a, b), np.right_shift(a, 3), a << 2, 1 << b

@cv.optimize
def unpack(q: cv.u8["N"]):
    return np.stack([(q >> 4) & 15, q & 15], axis=-1).reshape(-1)

@cv.optimize
def shifted_in_place(q: cv.i32["N"], k: int):
    y = q.copy()
    y <<= k
    y >>= 1
    return y
'''

DTYPES = [("int8", "int8"), ("uint8", "uint8"), ("int16", "int64"), ("int32", "int32"),
          ("int64", "int64"), ("uint64", "uint64"), ("bool", "bool"), ("uint8", "int64"),
          ("int32", "uint8")]


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("shifts"), SOURCE)


def _values(rng: np.random.Generator, dtype: str, n: int, amounts: bool) -> np.ndarray:
    if dtype == "bool":
        return rng.random(n) < 0.5
    info = np.iinfo(dtype)
    if amounts:  # negative (signed only) to past the widest width
        return rng.integers(-3 if info.min < 0 else 0, 70, n).astype(dtype)
    return rng.integers(max(info.min, -2**62), min(info.max, 2**62), n).astype(dtype)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 40))
def test_against_numpy(m, seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    for da, db in DTYPES:
        with np.errstate(all="ignore"):
            check_exact(m.shifts, _values(rng, da, n, False), _values(rng, db, n, True))
    check_exact(m.unpack, rng.integers(0, 256, n).astype(np.uint8))
    check_exact(m.shifted_in_place, rng.integers(-1000, 1000, n).astype(np.int32),
                int(rng.integers(0, 40)))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_gpu_code_compiles(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, SOURCE, cuda_archs=("sm_90",))
    assert mod.unpack(np.arange(4, dtype=np.uint8)).tolist() == [0, 0, 0, 1, 0, 2, 0, 3]
