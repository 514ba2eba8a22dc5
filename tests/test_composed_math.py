"""NumPy's float math composed of the IR's operations (frontend/composed_math.py) against
NumPy, on random shapes and views with NaN, ±inf and ±0.0 among the data, of float16,
float32, float64, int8, int32, int64 and bool arrays and Python scalars (NEP 50 result
dtypes): np.logaddexp, np.logaddexp2 and np.float_power against float64 and on a grid of
edge values; np.heaviside, np.nanmax, np.nanmin, np.isclose and np.allclose exactly
(all-NaN slices NaN, empty ones NumPy's ValueError; near and far values, the tolerances
and equal_nan); np.nanmean against float64 (all-NaN and empty slices NaN); np.diagonal and
np.trace (offsets, axes, empty diagonals), np.inner (of finite values) and np.dstack.
What cannot be known at compile time is refused at the user's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import check, check_exact, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

import cuvil_aot as cv

SOURCE = '''
import numpy as np
import cuvil_aot as cv

PAIRS = ["f32[A,B], f32[A,B]", "f64[A,1], f64[B]", "f16[A,B], f16[A,B]", "f16[A,B], f32[B]",
         "i32[A,B], i32[A,B]", "i8[A,B], i8[B]", "bool_[A,B], bool_[A,B]", "i64[A,B], f32[A,B]"]
WITH_SCALAR = ["f32[A,B], float", "f16[A,B], float", "f64[A,B], int", "i8[A,B], int",
               "i8[A,B], float", "bool_[A,B], int"]

@cv.optimize(signatures=PAIRS)
def pairs(x, y):
    return (np.logaddexp(x, y), np.logaddexp2(x, y), np.heaviside(x, y),
            np.float_power(x, y))

@cv.optimize(signatures=WITH_SCALAR)
def with_scalar(x, s):
    return (np.logaddexp(x, s), np.logaddexp2(s, x), np.logaddexp(x, 300),
            np.logaddexp2(x, 70000), np.logaddexp(s, 1.5), np.heaviside(x, 0.5),
            np.heaviside(x, s), np.heaviside(x, np.nan), np.float_power(x, 0.5),
            np.float_power(s, x), np.float_power(x, -1))

SAME_SHAPE = ["f32[A,B], f32[A,B]", "f64[A,B], f64[A,B]", "f16[A,B], f16[A,B]",
              "f32[A,B], f64[A,B]", "i32[A,B], i32[A,B]", "i8[A,B], f32[A,B]",
              "f64[A,B], i64[A,B]", "bool_[A,B], bool_[A,B]"]

@cv.optimize(signatures=SAME_SHAPE)
def closeness(x, y):
    return (np.isclose(x, y), np.isclose(x, y, equal_nan=True),
            np.isclose(x, y, rtol=0.1, atol=0.5), np.isclose(y, x, 1e-3, 0.0),
            np.isclose(x, y, atol=np.float64(1e-7)), np.isclose(x, y[0]))

@cv.optimize(signatures=WITH_SCALAR)
def closeness_scalar(x, s):
    return (np.isclose(x, s), np.isclose(s, x, equal_nan=True), np.isclose(x, 2),
            np.isclose(x, np.float32(1.5)), np.isclose(x, True))

@cv.optimize
def diagonals(x: cv.f32["A", "A"], y: cv.f64[3, 5], z: cv.i8[2, 3, 4],
              w: cv.f32["A", "B", "A"]):
    return (np.diagonal(x), np.trace(x), np.diagonal(y, 2), np.diagonal(y, -1),
            np.diagonal(y, 7), np.trace(y, -2), np.diagonal(z, 1, 0, 2),
            np.trace(z, axis1=2, axis2=1), np.trace(z), np.diagonal(w, 0, 0, 2),
            np.trace(w, 0, -1, 0), np.diagonal(y, 0, 1, 0), np.diagonal(z, -5, 1, 2))

@cv.optimize(signatures=["f32[A,B], f32[C,B]", "f64[B], f64[A,B]", "i8[A,B], i8[B]",
                         "bool_[A,B], bool_[C,B]", "f16[A,B], f32[B]", "f32[A,C,B], f64[C,B]",
                         "i32[B], i32[B]"])
def inners(x, y):
    return np.inner(x, y)

@cv.optimize
def inner_scalars(x: cv.f32["A", "B"], s: float, n: int):
    return np.inner(x, s), np.inner(n, x), np.inner(x, np.float32(2)), np.inner(s, n)

@cv.optimize
def dstacks(v: cv.f32["N"], x: cv.f32["A", "N"], t: cv.f64["A", "N", "B"], s: float):
    return (np.dstack([v, v * 2]), np.dstack((x, x, x)), np.dstack([t, x]), np.dstack((s, s)),
            np.dstack([v]))

@cv.optimize(signatures=SAME_SHAPE)
def all_close(x, y):
    return np.allclose(x, y), np.allclose(x, y, equal_nan=True), np.allclose(x, y[0], 0.1)

@cv.optimize(signatures=["f32[A,B]", "f64[A,B]", "f16[A,B]", "i32[A,B]", "i8[A,B]",
                         "bool_[A,B]"])
def nan_extrema(x):
    return (np.nanmax(x, axis=0), np.nanmin(x, axis=1), np.nanmax(x, axis=1, keepdims=True),
            np.nanmin(x, axis=(0, 1), keepdims=True))

@cv.optimize(signatures=["f32[A,B]", "f64[A,B]", "f16[A,B]", "i32[A,B]", "i8[A,B]",
                         "bool_[A,B]"])
def nan_extrema_all(x):
    return np.nanmax(x), np.nanmin(x)

@cv.optimize(signatures=["f32[A,B]", "f64[A,B]", "f16[A,B]", "i32[A,B]", "i8[A,B]",
                         "bool_[A,B]"])
def nan_means(x):
    return np.nanmean(x), np.nanmean(x, axis=0), np.nanmean(x, axis=1, keepdims=True)
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def unknown_length(x: cv.f32["A", "B"]):
    return np.diagonal(x)

@cv.optimize
def run_time_offset(x: cv.f32[3, 3], k: int):
    return np.trace(x, k)

@cv.optimize
def trace_dtype(x: cv.f32[3, 3]):
    return np.trace(x, dtype=np.float64)

@cv.optimize
def run_time_equal_nan(x: cv.f32["N"], flag: bool):
    return np.isclose(x, x, equal_nan=flag)
'''

DTYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i32": "int32",
          "i64": "int64", "bool_": "bool"}
EDGES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.5, 1e-300,
                  -1e-300, 1e300, -1e300, 30.0, -30.0, 700.0, -745.0])


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("composed_math"), SOURCE)


def _arrays(data: st.DataObject, sig: str, a: int, b: int, c: int = 2,
            special: bool = True) -> list[object]:
    """Arguments for ``sig``: views of random arrays (with edge values where ``special``),
    Python scalars."""
    args: list[object] = []
    for part in sig.split(", "):
        if part in ("float", "int"):
            args.append(data.draw(st.sampled_from([0.0, -0.0, 1.5, -2.0, np.inf, np.nan])
                                  if part == "float" else st.integers(-40, 40)))
            continue
        short, spec = part.rstrip("]").split("[")
        shape = tuple({"A": a, "B": b, "C": c, "1": 1}[d] for d in spec.split(","))
        args.append(data.draw(view_of(shape, DTYPES[short], special)))
    return args


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=st.integers(0, 6), b=st.integers(0, 6))
def test_binary_against_numpy(m, data: st.DataObject, a: int, b: int) -> None:
    for fn in (m.pairs, m.with_scalar):
        for sig in fn.signatures:
            check(fn, *_arrays(data, sig, a, b))


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=st.integers(0, 6), b=st.integers(0, 6))
def test_heavisidecheck_exact(m, data: st.DataObject, a: int, b: int) -> None:
    for fn, picks in ((m.pairs, (2,)), (m.with_scalar, (5, 6, 7))):
        for sig in fn.signatures:
            args = _arrays(data, sig, a, b)
            with np.errstate(all="ignore"):
                want = fn.py_func(*args)
            got = fn(*args)
            for g, w in ((got[i], want[i]) for i in picks):
                assert g.dtype == w.dtype
                np.testing.assert_array_equal(g, w)
                np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=st.integers(0, 6), b=st.integers(0, 6))
def test_nan_reductions_against_numpy(m, data: st.DataObject, a: int, b: int) -> None:
    for dtype in ("float32", "float64", "float16", "int32", "int8", "bool"):
        x = data.draw(view_of((a, b), dtype))
        check_exact(m.nan_extrema, x)
        check_exact(m.nan_extrema_all, x)
        check(m.nan_means, x)


def _near(seed: int, x: np.ndarray, dtype: str) -> np.ndarray:
    """``x`` moved by nothing, by a little or by a lot, element by element, as ``dtype``."""
    r = np.random.default_rng(seed)
    base = x.astype(np.float64)
    steps = r.choice([0.0, 0.0, 1e-9, -1e-8, 1e-6, -2e-5, 1e-3, -0.3, 1.0], base.shape)
    with np.errstate(all="ignore"):
        return (base + steps * np.maximum(np.abs(base), 1.0)).astype(dtype)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=st.integers(0, 6), b=st.integers(0, 6), seed=st.integers(0, 2**32 - 1))
def test_isclosecheck_exact(m, data: st.DataObject, a: int, b: int, seed: int) -> None:
    for sig in m.closeness.signatures:
        x, y = _arrays(data, sig, a, b)
        near = _near(seed, np.asarray(x), np.asarray(y).dtype.name)
        for args in ((x, y), (x, near)):
            if not a:  # y[0] of an empty array
                for fn in (m.closeness, m.all_close):
                    with pytest.raises(IndexError):
                        fn(*args)
                continue
            check_exact(m.closeness, *args)
            got, want = m.all_close(*args), m.all_close.py_func(*args)
            # a returned Python bool comes back a NumPy one, as bool() does
            assert got == want and all(type(g) is np.bool_ for g in got)
    for sig in m.closeness_scalar.signatures:
        check_exact(m.closeness_scalar, *_arrays(data, sig, a, b))


def test_isclose_edges(m) -> None:
    """Infinities close only to themselves, NaNs only with equal_nan, tolerances of b."""
    x, y = (v.reshape(1, -1) for v in np.meshgrid(EDGES, EDGES))
    check_exact(m.closeness, x, y)
    with np.errstate(over="ignore"):  # 1e300 is inf in float32
        check_exact(m.closeness, x.astype(np.float32), y.astype(np.float32))
    assert m.all_close(np.full((2, 3), np.nan), np.full((2, 3), np.nan)) == (False, True, False)


def test_edge_grid(m) -> None:
    """Every pair of edge values (NaN, ±inf, ±0.0, huge, tiny, where exp overflows)."""
    for dtype in ("float32", "float16"):
        with np.errstate(over="ignore"):  # 1e300 is inf in float32
            x, y = (v.astype(dtype) for v in np.meshgrid(EDGES, EDGES))
        check(m.pairs, x, y)
        check(m.with_scalar, x, -np.inf)
    check(m.with_scalar, EDGES[None, :], 2)  # float_power(x, 0.5) at -0.0 and -inf
    x, y = EDGES[:, None], EDGES
    check(m.pairs, x, y)
    with np.errstate(all="ignore"):
        want = m.pairs.py_func(x, y)
    got = m.pairs(x, y)
    for g, w in zip(got, want):  # libm's functions of NumPy's own formulas: its bits
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g)[~np.isnan(w)], np.signbit(w)[~np.isnan(w)])


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=st.integers(0, 6), b=st.integers(0, 6), c=st.integers(0, 4))
def test_shapes_against_numpy(m, data: st.DataObject, a: int, b: int, c: int) -> None:
    """np.diagonal and np.trace (offsets, axes, empty diagonals), np.inner, np.dstack."""
    r = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    check(m.diagonals, data.draw(view_of((a, a), "float32")),
          data.draw(view_of((3, 5), "float64")), r.integers(-100, 100, (2, 3, 4), np.int8),
          data.draw(view_of((a, b, a), "float32")))
    check_exact(m.diagonals, r.standard_normal((a, a)).astype(np.float32).round(),
           r.standard_normal((3, 5)).round(), r.integers(-100, 100, (2, 3, 4), np.int8),
           r.standard_normal((a, b, a)).astype(np.float32).round())
    for sig in m.inners.signatures:  # finite: NumPy's BLAS skips zeros (0 * NaN is 0 there)
        check(m.inners, *_arrays(data, sig, a, b, c, special=False))
    check(m.inner_scalars, data.draw(view_of((a, b), "float32")), 1.5, 3)
    check(m.dstacks, data.draw(view_of((b,), "float32")), data.draw(view_of((a, b), "float32")),
          data.draw(view_of((a, b, c), "float64")), -2.5)


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    x = np.ones((3, 3), np.float32)
    with pytest.raises(cv.CompileError, match="lengths A and B with offset 0") as e:
        mod.unknown_length(x)
    assert "^" in str(e.value) and "two axes of one symbol" in str(e.value)
    with pytest.raises(cv.CompileError, match="offset must be an int known at compile time"):
        mod.run_time_offset(x, 1)
    with pytest.raises(cv.CompileError, match="np.trace with dtype= or out= is not supported"):
        mod.trace_dtype(x)
    with pytest.raises(cv.CompileError, match="equal_nan must be known at compile time"):
        mod.run_time_equal_nan(x[0], True)


def test_all_nan_and_empty_slices(m) -> None:
    x = np.array([[np.nan, np.nan, np.nan], [np.nan, -np.inf, 1.0]], np.float32)
    check_exact(m.nan_extrema, x)
    check_exact(m.nan_extrema, x.T)
    check_exact(m.nan_extrema_all, np.full((2, 3), np.nan))
    got = m.nan_means(x)
    assert np.isnan(got[1][0]) and np.isnan(got[2][0, 0]) and got[2][1, 0] == -np.inf
    for empty in (np.zeros((0, 3)), np.zeros((3, 0))):
        check_exact(m.nan_extrema, empty)
        check_exact(m.nan_extrema_all, empty)
        check(m.nan_means, empty)
