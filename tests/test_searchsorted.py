"""np.searchsorted and np.digitize (frontend/searchsorted.py) against NumPy exactly, on
sorted 1-D tables (NaNs last, ties, ±inf, ±0.0, empty and length-1 tables) searched for
values of any shape (0-d and empty too), of float16, float32, float64, int8, int32 and
int64, mixed dtypes and Python numbers (NumPy's common dtype, a Python float a float64),
both sides; digitize's increasing and decreasing bins, right= both ways, constant bins.
What NumPy refuses, or what cannot be known at compile time, is refused at the user's
line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import check_exact, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

import cuvil_aot as cv

SOURCE = '''
import numpy as np
import cuvil_aot as cv

PAIRS = ["f32[N], f32[A,B]", "f64[N], f64[A]", "f16[N], f16[A,B]", "i32[N], i32[A]",
         "i8[N], f32[A,B]", "f32[N], f64[A]", "i64[N], i32[A,B]"]

@cv.optimize(signatures=PAIRS)
def searches(a, v):
    return (np.searchsorted(a, v), np.searchsorted(a, v, side="right"),
            np.searchsorted(a, v, "left"), np.searchsorted(a, v[..., None] * 2, side="right"))

@cv.optimize(signatures=["f32[N]", "i32[N]", "f64[N]"])
def numbers(a):
    return (np.searchsorted(a, 0.1), np.searchsorted(a, 1, side="right"),
            np.searchsorted(a, np.float32(0.1), side="right"), np.searchsorted(a, np.nan))

BINS = ["f32[A,B], f32[N]", "f64[A], f64[N]", "i32[A], f64[N]", "f64[A], i32[N]",
        "f16[A,B], f16[N]"]

@cv.optimize(signatures=BINS)
def digitizes(x, bins):
    return np.digitize(x, bins), np.digitize(x, bins, right=True), np.digitize(x, bins, True)

@cv.optimize
def of_0d(a: cv.f64["N"], v: cv.f64[()], i: cv.i32[()]):
    return (np.searchsorted(a, v), np.searchsorted(a, i, side="right"), np.digitize(v, a),
            np.digitize(i, a, right=True))

@cv.optimize
def digitize_constant(x: cv.f64["A"], one: cv.f64[1], two: cv.f32[2], none: cv.f64[0]):
    return (np.digitize(x, one), np.digitize(x, two, right=True), np.digitize(x, none),
            np.digitize(x, two), np.searchsorted(none, x))
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def with_sorter(a: cv.f32["N"], v: cv.f32["M"], s: cv.i64["N"]):
    return np.searchsorted(a, v, sorter=s)

@cv.optimize
def two_d(a: cv.f32["N", "K"], v: cv.f32["M"]):
    return np.searchsorted(a, v)

@cv.optimize
def bad_side(a: cv.f32["N"], v: cv.f32["M"]):
    return np.searchsorted(a, v, side="middle")

@cv.optimize
def run_time_right(x: cv.f32["N"], bins: cv.f32["M"], r: bool):
    return np.digitize(x, bins, r)

@cv.optimize
def scalar_bins(x: cv.f32["N"], b: float):
    return np.digitize(x, b)
'''

DTYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i32": "int32",
          "i64": "int64"}


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("searchsorted"), SOURCE)


def _shape(spec: str, sizes: dict[str, int]) -> tuple[int, ...]:
    return tuple(int(d) if d.isdigit() else sizes[d] for d in spec.split(",") if d)


def _table(data: st.DataObject, short: str, n: int, decreasing: bool = False,
           nan: bool = True) -> np.ndarray:
    """A sorted table (NaNs last) with ties, or a decreasing one; bins NaN-free (NumPy's
    _monotonicity calls [0, nan] decreasing, then binary-searches the reversed bins,
    [nan, 0], which are not sorted: no count gives that answer)."""
    dtype = DTYPES[short]
    x = np.sort(data.draw(view_of((n,), dtype)))
    if decreasing or not nan:
        x = x[~np.isnan(x)] if x.dtype.kind == "f" else x
        x = np.concatenate([x, np.full(n - len(x), x[-1] if len(x) else 0, x.dtype)])
        x = x[::-1] if decreasing else x
    return np.ascontiguousarray(x) if data.draw(st.booleans()) else x


sizes = st.integers(0, 5)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n=st.integers(0, 7), a=sizes, b=sizes)
def test_searchsorted_against_numpy(m, data: st.DataObject, n: int, a: int, b: int) -> None:
    for sig in m.searches.signatures:
        (ts, _), (vs, spec) = (p.rstrip("]").split("[") for p in sig.split(", "))
        table = _table(data, ts, n)
        check_exact(m.searches, table, data.draw(view_of(_shape(spec, {"A": a, "B": b}),
                                                         DTYPES[vs])))
    for sig in m.numbers.signatures:
        check_exact(m.numbers, _table(data, sig[:3], n))
    table = _table(data, "f64", n, nan=False)  # (searchsorted needs it increasing)
    for v in (np.nan, -0.0, 1.5, np.inf, -np.inf):
        check_exact(m.of_0d, table, np.array(v), np.array(a - 2, np.int32))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n=st.integers(0, 7), a=sizes, b=sizes, down=st.booleans())
def test_digitize_against_numpy(m, data: st.DataObject, n: int, a: int, b: int,
                                down: bool) -> None:
    for sig in m.digitizes.signatures:
        (xs, spec), (bs, _) = (p.rstrip("]").split("[") for p in sig.split(", "))
        x = data.draw(view_of(_shape(spec, {"A": a, "B": b}), DTYPES[xs]))
        check_exact(m.digitizes, x, _table(data, bs, n, down, nan=False))
    x = data.draw(view_of((a,), "float64"))
    check_exact(m.digitize_constant, x, _table(data, "f64", 1),
                _table(data, "f32", 2, down, nan=False),
                np.zeros(0))


def test_python_floats_compare_as_float64(m) -> None:
    """np.searchsorted(float32 table, 0.1): NumPy compares in float64, where float32(0.1)
    is greater than 0.1 (NEP 50 would round 0.1 to float32 and find it equal)."""
    a = np.array([0.1, 0.5], np.float32)
    check_exact(m.numbers, a)
    assert m.numbers(a)[0] == 0


def test_digitize_directions(m) -> None:
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, np.nan, np.inf])
    for bins in ([0.0, 1.0, 2.0], [2.0, 1.0, 0.0], [1.0, 1.0, 2.0], [2.0, 2.0, 1.0, 1.0],
                 [1.0, 1.0, 1.0], [3.0, 1.0, 1.0, 0.0], [np.inf, 0.0, -np.inf],
                 [np.nan], [np.nan, np.nan]):  # NumPy: increasing; decreasing (NaN != NaN)
        check_exact(m.digitizes, x, np.array(bins))


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    x = np.ones(4, np.float32)
    cases = [
        (lambda: mod.with_sorter(x, x, np.arange(4)), "sorter= is not supported"),
        (lambda: mod.two_d(x[None], x), "object too deep for desired array"),
        (lambda: mod.bad_side(x, x), "side must be 'left' or 'right'"),
        (lambda: mod.run_time_right(x, x, True), "right must be known at compile time"),
        (lambda: mod.scalar_bins(x, 1.0), "object of too small depth"),
    ]
    for call, message in cases:
        with pytest.raises(cv.CompileError, match=message) as e:
            call()
        assert "^" in str(e.value)
