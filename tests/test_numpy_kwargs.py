"""The keyword arguments of NumPy's reductions (frontend/reduction_kwargs.py) and
np.average without weights (its count, and Python's ZeroDivisionError of a.size / 0)
against NumPy, on random shapes (empty axes included) and views with NaN, ±inf and ±0.0,
of float16, float32, float64, int8, int32 and bool arrays: dtype= of np.sum, np.prod and
np.mean (float16 sums and means in float16, integer sums wrapped in int8), initial= of
np.sum, np.prod, np.max and np.min (an empty axis gives the initial value; NumPy's
conversion of it, 2.5 to an int8 2), where= of all five (masks broadcast along either
axis; masked-out slices: the identity, the initial value, a mean's NaN). Extrema and
integer results exactly; what NumPy refuses is refused at the user's line."""

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

MASKED = ["f32[A,B], bool_[A,B]", "f64[A,B], bool_[B]", "f16[A,B], bool_[A,1]",
          "i32[A,B], bool_[A,B]", "i8[A,B], bool_[B]", "bool_[A,B], bool_[A,B]"]

@cv.optimize(signatures=MASKED)
def sums(x, m):
    return (np.sum(x, dtype=np.float64), np.sum(x, axis=0, dtype=np.float32),
            x.sum(axis=1, dtype=np.float16, keepdims=True), np.prod(x, axis=1, dtype=np.float64),
            np.sum(x, axis=1, initial=2.5), np.prod(x[:, :1], axis=1, initial=-1),
            np.sum(x, where=m), np.sum(x, axis=0, where=m, initial=1),
            x[:, :1].prod(axis=1, where=m[..., :1]),
            np.sum(x, axis=1, where=True), np.sum(x, where=False),
            x.sum(0, np.float64, None, True, 3, m))

@cv.optimize(signatures=MASKED)
def extrema(x, m):
    return (np.max(x, axis=0, initial=0.5), np.min(x, axis=1, initial=3),
            x.max(initial=-2, where=m), np.min(x, axis=0, where=m, initial=1, keepdims=True),
            np.amax(x, axis=(0, 1), initial=0, keepdims=True), x.min(1, None, False, 2, m),
            np.max(np.min(x, initial=0), initial=1))

@cv.optimize(signatures=MASKED)
def means(x, m):
    return (np.mean(x, dtype=np.float64), np.mean(x, axis=0, dtype=np.float32),
            x.mean(axis=1, dtype=np.float16, keepdims=True), np.mean(x, where=m),
            np.mean(x, axis=1, where=m), x.mean(axis=0, where=m, keepdims=True, dtype=np.float64),
            x.mean(0, None, None, False, where=m))

@cv.optimize(signatures=["f32[A,B]", "f64[A,B]", "f16[A,B]", "i32[A,B]", "bool_[A,B]"])
def averages(x):
    return (np.average(x), np.average(x, axis=0), np.average(x, 1, None, False, keepdims=True),
            *np.average(x, axis=1, returned=True), *np.average(x, returned=True),
            *np.average(x, (0, 1), returned=True, keepdims=True))

@cv.optimize(signatures=["i32[A,B]", "i8[A,B]", "bool_[A,B]"])
def integer_sums(x):
    return (np.sum(x, dtype=np.int8), x.sum(axis=0, dtype=np.int16),
            np.prod(x, axis=1, dtype=np.int32), np.sum(x, axis=0, dtype=bool),
            np.sum(x, axis=1, dtype=np.int8, initial=100), np.prod(x, dtype=bool))
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def max_where_without_initial(x: cv.f32["N"]):
    return np.max(x, where=x > 0)

@cv.optimize
def initial_out_of_range(x: cv.i8["N"]):
    return np.max(x, initial=1000)

@cv.optimize
def run_time_initial(x: cv.f32["N"], s: float):
    return np.sum(x, initial=s)

@cv.optimize
def integer_mean(x: cv.f32["N"]):
    return np.mean(x, dtype=np.int64)

@cv.optimize
def weighted_average(x: cv.f32["N"], w: cv.f32["N"]):
    return np.average(x, weights=w)

@cv.optimize
def sum_out(x: cv.f32["N"], y: cv.f32[()]):
    return np.sum(x, out=y)

@cv.optimize
def mask_too_big(x: cv.f32[3], m: cv.bool_[2, 3]):
    return np.sum(x, where=m)
'''

DTYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i32": "int32",
          "bool_": "bool"}


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("numpy_kwargs"), SOURCE)


def _arguments(data: st.DataObject, sig: str, a: int, b: int) -> list[np.ndarray]:
    args = []
    for part in sig.split(", "):
        short, spec = part.rstrip("]").split("[")
        shape = tuple({"A": a, "B": b, "1": 1}[d] for d in spec.split(","))
        args.append(data.draw(view_of(shape, DTYPES[short])))
    return args


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=st.integers(0, 6), b=st.integers(0, 6))
def test_sums_and_means_against_numpy(m, data: st.DataObject, a: int, b: int) -> None:
    for fn in (m.sums, m.means, m.averages):
        for sig in fn.signatures:
            check(fn, *_arguments(data, sig, a, b), scale=4.0)  # float16 sums in float16


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=st.integers(0, 6), b=st.integers(0, 6))
def test_extrema_and_integer_sumscheck_exact(m, data: st.DataObject, a: int, b: int) -> None:
    for sig in m.extrema.signatures:
        check_exact(m.extrema, *_arguments(data, sig, a, b))
    for sig in m.integer_sums.signatures:
        check_exact(m.integer_sums, *_arguments(data, sig, a, b))


def test_edges(m) -> None:
    """Empty axes give the initial value; all-masked slices the identity, the initial
    value or NaN; NaN propagates through max with initial=."""
    for x in (np.zeros((0, 3), np.float32), np.zeros((3, 0), np.float32)):
        mask = np.ones(x.shape, bool)
        check_exact(m.extrema, x, mask)
        check(m.sums, x, mask)
        check(m.means, x, mask)
    x = np.array([[np.nan, 1.0, -np.inf], [-0.0, 7.0, np.inf]], np.float32)
    none = np.zeros(x.shape, bool)
    check_exact(m.extrema, x, none)
    check(m.sums, x, none)
    check(m.means, x, none)
    got = m.means(x, none)
    assert np.isnan(got[3]) and np.isnan(got[4]).all()
    assert m.extrema(x, ~none)[0][0] != m.extrema(x, ~none)[0][0]  # NaN, not the initial
    # one factor in the products: NumPy's float16 ones round each step (inf * 0 is NaN),
    # the compiled ones round once, without kwargs as with them
    assert m.sums(x, none)[10] == 0.0 and m.sums(x, none)[7].tolist() == [1.0, 1.0, 1.0]
    for empty in (np.zeros((0, 3)), np.zeros((3, 0))):  # a.size / avg.size: 0 / 0
        check(m.averages, empty)
    halves = np.full((2, 40), 0.1, np.float16)
    check(m.means, halves, np.ones((2, 1), bool))


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    x = np.ones(3, np.float32)
    with pytest.raises(cv.CompileError, match="does not have an identity, so to use a where "
                                              "mask one has to specify 'initial'") as e:
        mod.max_where_without_initial(x)
    assert "^" in str(e.value)
    with pytest.raises(cv.CompileError, match="OverflowError: Python integer 1000 out of "
                                              "bounds for int8"):
        mod.initial_out_of_range(np.ones(3, np.int8))
    with pytest.raises(cv.CompileError, match="initial= must be a number known at compile"):
        mod.run_time_initial(x, 1.0)
    with pytest.raises(cv.CompileError, match="np.mean with dtype=int64"):
        mod.integer_mean(x)
    with pytest.raises(cv.CompileError, match="np.average with weights= is not supported"):
        mod.weighted_average(x, x)
    with pytest.raises(cv.CompileError, match="np.sum with out= is not supported"):
        mod.sum_out(x, np.zeros((), np.float32))
    with pytest.raises(cv.CompileError):
        mod.mask_too_big(x, np.ones((2, 3), bool))

