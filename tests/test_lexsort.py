"""np.lexsort (frontend/scans.py: stable argsorts, the least significant key first) against
NumPy exactly: keys with many ties (small integers), float keys with NaNs (last, as NumPy
sorts them), mixed dtypes, one to three keys, keys as a tuple, a list or the rows of an
array, along each axis of 2-D keys, empty ones; NumPy's errors refused at the user's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import check_exact, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def keys_1d(a: cv.i64["N"], b: cv.i8["N"], c: cv.f32["N"]):
    return np.lexsort((a,)), np.lexsort((a, b)), np.lexsort([c, a, b]), np.lexsort((b, c))

@cv.optimize
def rows_as_keys(k: cv.i32[3, "A", "B"]):
    return np.lexsort(k), np.lexsort(k, axis=0), np.lexsort(k, axis=-2)

@cv.optimize
def tuple_2d(a: cv.f64["A", "B"], b: cv.i16["A", "B"]):
    return np.lexsort((a, b), axis=0), np.lexsort((a, b))
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("lexsort"), SOURCE)


def _floats(rng: np.random.Generator, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    x = rng.integers(-2, 3, shape).astype(dtype)
    x[rng.random(shape) < 0.2] = np.nan
    return x


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 60), seed=st.integers(0, 2**32 - 1))
def test_one_dimensional_keys(m, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = rng.integers(-2, 2, n).astype(np.int8)
    check_exact(m.keys_1d, a, b, _floats(rng, (n,), np.float32))


@settings(max_examples=30, deadline=None)
@given(a=st.integers(0, 7), b=st.integers(0, 9), seed=st.integers(0, 2**32 - 1))
def test_two_dimensional_keys(m, a: int, b: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    check_exact(m.rows_as_keys, rng.integers(0, 3, (3, a, b)).astype(np.int32))
    check_exact(m.tuple_2d, _floats(rng, (a, b), np.float64),
                rng.integers(0, 2, (a, b)).astype(np.int16))


REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def one_row(x: cv.f32["N"]):
    return np.lexsort(x)

@cv.optimize
def nothing(x: cv.f32["N"]):
    return np.lexsort(())

@cv.optimize
def shapes_differ(x: cv.f32[3], y: cv.f32[4]):
    return np.lexsort((x, y))
'''


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    x = np.ones(3, np.float32)
    cases = [(lambda: mod.one_row(x), "takes its rows as the keys"),
             (lambda: mod.nothing(x), "need sequence of keys"),
             (lambda: mod.shapes_differ(x, np.ones(4, np.float32)), "same shape")]
    for call, message in cases:
        with pytest.raises(cv.CompileError, match=message) as e:
            call()
        assert "^" in str(e.value)
