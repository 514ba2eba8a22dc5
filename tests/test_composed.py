"""NumPy functions composed exactly of the IR's operations (frontend/composed.py) against
NumPy on random shapes with ±NaN, ±inf, -0.0 and huge values among the data: np.isnan,
np.isinf, np.isfinite, np.signbit (the sign of -0.0 and of -NaN too), np.nan_to_num
(NumPy's own bits on the real dtype), np.fmax, np.fmin, np.ptp, np.nansum, np.column_stack,
np.reciprocal,
np.trunc, np.fix, np.positive, np.any/np.all/np.count_nonzero and .any/.all (axes, keepdims,
empty axes), np.flip, np.roll (static and symbolic lengths, several axes, negative and
large shifts), np.ravel, np.diff (n of 0 to 3, booleans), np.atleast_1d/2d, np.hstack,
np.vstack. What cannot be known at compile time, an integer reciprocal and nan_to_num writing
into its argument are refused at the user's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import check, check_exact, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[A,B]", "f64[A,B]", "i32[A,B]"])
def classify(x):
    return (np.isnan(x), np.isinf(x), np.isfinite(x), np.trunc(x), np.fix(x), np.positive(x),
            np.nan_to_num(x), np.nan_to_num(x, nan=-1.0, posinf=7.0, neginf=-7.0),
            np.signbit(x))

@cv.optimize(signatures=["f32[A,B]", "f64[A,B]"])
def reciprocal(x):
    return np.reciprocal(x)

@cv.optimize(signatures=["f32[A,B], f32[A,B]", "f64[A,B], f32[B]", "i32[A,B], i32[A,B]"])
def nan_aware(x, y):
    return np.fmax(x, y), np.fmin(x, y), np.fmax(x, 0.5), np.ptp(x, axis=0, keepdims=True)

@cv.optimize(signatures=["f32[A,B]", "i32[A,B]"])
def nan_sums(x):
    return np.nansum(x), np.nansum(x, axis=1, keepdims=True)

@cv.optimize(signatures=["f32[A,B]", "bool[A,B]", "i64[A,B]"])
def logic(x):
    return (np.any(x), np.all(x), np.count_nonzero(x), np.any(x, axis=0), x.all(axis=1),
            x.any(keepdims=True), np.all(x, axis=(0, 1), keepdims=True),
            np.count_nonzero(x, axis=1), np.count_nonzero(x, axis=0, keepdims=True))

@cv.optimize
def moves(x: cv.f32["A", "B"], y: cv.f32[4, 5]):
    return (np.flip(x), np.flip(x, axis=1), np.flip(y, axis=(0, 1)), np.roll(x, 2),
            np.roll(x, -3, axis=1), np.roll(y, (1, 7), axis=(0, 1)), np.roll(y, 11, axis=0),
            np.ravel(x), np.diff(x), np.diff(x, n=2, axis=0), np.diff(y, n=0),
            np.diff(x > 0, axis=1))

@cv.optimize
def stacks(v: cv.f32["N"], x: cv.f32["A", "N"], s: float):
    return (np.hstack([v, v * 2]), np.hstack((x, x)), np.vstack([v, v]), np.vstack((x, v)),
            np.atleast_1d(s), np.atleast_2d(v), np.atleast_2d(x, v)[1],
            np.column_stack((v, v * 3)), np.column_stack([x.T, v]))

@cv.optimize(signatures=["f32[A], f64[B], i32[C]"])
def grids(x, y, z):
    return (*np.meshgrid(x, y), *np.meshgrid(x, y, z, indexing="ij"), *np.meshgrid(x, y, z),
            *np.meshgrid(y, x, sparse=True), *np.meshgrid(x))

@cv.optimize(signatures=["f32[A,B], f64[B], i32[A,1]", "f32[A,B], f64[1], i32[1,B]"])
def broadcasts(x, v, c):
    return np.broadcast_arrays(x, v, c)
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def int_reciprocal(x: cv.i32["N"]):
    return np.reciprocal(x)

@cv.optimize
def run_time_shift(x: cv.f32["N"], k: int):
    return np.roll(x, k)

@cv.optimize
def in_place(x: cv.f32["N"]):
    np.nan_to_num(x, copy=False)
    return x
'''

SPECIAL = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30, -1e-30, 2.5, -2.5,
                    7.0])


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("composed"), SOURCE)


def _data(r: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    x = r.standard_normal(shape) * 3
    x.flat[:] = np.where(r.random(x.size) < 0.3, r.choice(SPECIAL, x.size), x.ravel())
    if dtype.startswith("i"):
        return np.clip(np.nan_to_num(x), -9, 9).round().astype(dtype)
    return x.astype(dtype)


@settings(max_examples=25, deadline=None)
@given(a=st.integers(0, 6), b=st.integers(0, 6), seed=st.integers(0, 2**32 - 1))
def test_against_numpy(m, a: int, b: int, seed: int) -> None:
    r = np.random.default_rng(seed)
    for dtype in ("float32", "float64", "int32"):
        check_exact(m.classify, _data(r, (a, b), dtype))
    with np.errstate(divide="ignore"):
        for dtype in ("float32", "float64"):
            check_exact(m.reciprocal, _data(r, (a, b), dtype))
    for dtypes in (("float32", "float32"), ("float64", "float32"), ("int32", "int32")):
        y = _data(r, (a, b) if dtypes[0] != "float64" else (b,), dtypes[1])
        if a:  # np.ptp of an empty axis raises in NumPy
            check_exact(m.nan_aware, _data(r, (a, b), dtypes[0]), y)
    for dtype in ("float32", "int32"):  # sums: NumPy's to rounding, not its order
        x = _data(r, (a, b), dtype)
        check(m.nan_sums, np.where(np.isinf(x), 1.0, x).astype(dtype))
    for x in (_data(r, (a, b), "float32"), r.random((a, b)) < 0.5,
              r.integers(0, 2, (a, b)).astype(np.int64)):
        check_exact(m.logic, x)
    check(m.moves, _data(r, (a, b), "float32"), r.standard_normal((4, 5)).astype(np.float32))
    check(m.stacks, r.standard_normal(b).astype(np.float32),
          r.standard_normal((a, b)).astype(np.float32), 1.5)


@settings(max_examples=25, deadline=None)
@given(a=st.integers(0, 5), b=st.integers(0, 5), c=st.integers(0, 5),
       seed=st.integers(0, 2**32 - 1))
def test_grids_and_broadcasts(m, a: int, b: int, c: int, seed: int) -> None:
    """np.meshgrid ('xy' and 'ij', three inputs, sparse, one input) and
    np.broadcast_arrays: NumPy's shapes, dtypes and values, every output written."""
    r = np.random.default_rng(seed)
    check_exact(m.grids, _data(r, (a,), "float32"), _data(r, (b,), "float64"),
           _data(r, (c,), "int32"))
    check_exact(m.broadcasts, _data(r, (a, b), "float32"), _data(r, (b,), "float64"),
           _data(r, (a, 1), "int32"))
    check_exact(m.broadcasts, _data(r, (a, b), "float32"), _data(r, (1,), "float64"),
           _data(r, (1, b), "int32"))


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    with pytest.raises(cv.CompileError, match="np.reciprocal of integers") as e:
        mod.int_reciprocal(np.ones(3, np.int32))
    assert "^" in str(e.value) and "1 / x" in str(e.value)
    with pytest.raises(cv.CompileError, match="shift must be an int known at compile time"):
        mod.run_time_shift(np.ones(3, np.float32), 1)
    with pytest.raises(cv.CompileError, match=r"np.nan_to_num\(copy=False\) is not supported"):
        mod.in_place(np.ones(3, np.float32))


def test_fmax_fmin_edges(m) -> None:
    """Signed zeros (of equal values the second), NaN on either side or both."""
    x = np.array([[0.0, -0.0, np.nan, 1.0, np.nan, -np.inf]], np.float32)
    y = np.array([[-0.0, 0.0, 2.0, np.nan, np.nan, np.inf]], np.float32)
    check_exact(m.nan_aware, x, y)
    check_exact(m.nan_aware, y, x)
    got = m.nan_aware(x, y)[0]
    assert np.signbit(got[0, 0]) and not np.signbit(got[0, 1])
