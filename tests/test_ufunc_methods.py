"""Methods of the binary ufuncs (frontend/ufunc_methods.py) against NumPy: ``outer`` of
every kind of binary ufunc (arithmetic, comparisons, logical, NaN-aware), arrays of any
rank and Python numbers; ``reduce`` of add, multiply, maximum, minimum, logical_and and
logical_or with NumPy's DEFAULT AXIS 0, axis=None, tuples, keepdims, dtype, initial and
where, on empty and length-1 axes and 0-d arrays (an extremum of an empty axis raising
NumPy's ValueError); ``accumulate`` of add, multiply, maximum and minimum along axis 0 by
default (a running extremum keeps the first NaN and, of tied values, the last: -0.0 after
0.0). float16, float32, float64, int8, int32 and bool; every other method refused at the
user's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import check, check_exact, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_composed_arrays import check_bits, signature_arrays
from test_elementwise import view_of

import cuvil_aot as cv

SOURCE = '''
import numpy as np
import cuvil_aot as cv

OUTER = ["f32[A], f32[B]", "i8[A,B], i8[C]", "f16[A], f32[B,C]", "i32[A], f64[B]",
         "f64[A,1], i8[B]"]

@cv.optimize(signatures=OUTER)
def outers(x, y):
    return (np.add.outer(x, y), np.subtract.outer(x, y), np.multiply.outer(y, x),
            np.maximum.outer(x, y), np.minimum.outer(y, x), np.logical_and.outer(x, y),
            np.greater.outer(x, y), np.equal.outer(y, x))

@cv.optimize(signatures=OUTER)
def fmax_outers(x, y):
    return np.fmax.outer(x, y), np.fmin.outer(y, x)

@cv.optimize(signatures=["bool_[A], bool_[B]"])
def bool_outers(x, y):
    return (np.add.outer(x, y), np.multiply.outer(x, y), np.logical_or.outer(y, x),
            np.maximum.outer(x, y), np.not_equal.outer(x, y))

@cv.optimize
def outer_numbers(x: cv.f32["A", "B"], s: float, n: int):
    return (np.add.outer(x, s), np.multiply.outer(n, x), np.maximum.outer(s, n),
            np.subtract.outer(x, np.float32(2)))

ALL = ["f32[A,B]", "f64[A,B]", "f16[A,B]", "i8[A,B]", "i32[A,B]", "bool_[A,B]"]
NUMBERS = ["f32[A,B]", "f64[A,B]", "i8[A,B]", "i32[A,B]"]

@cv.optimize(signatures=ALL)
def sums(x):
    return (np.add.reduce(x), np.add.reduce(x, axis=1), np.add.reduce(x, axis=None),
            np.multiply.reduce(x, axis=-1, keepdims=True), np.add.reduce(x, 0, np.float64),
            np.add.reduce(x, axis=(0, 1), keepdims=True), np.multiply.reduce(x),
            np.add.reduce(x, axis=1, where=x > 0))

@cv.optimize(signatures=NUMBERS)
def sums_initial(x):
    return np.add.reduce(x, axis=1, initial=5), np.multiply.reduce(x, initial=2, where=x < 3)

@cv.optimize(signatures=ALL)
def extrema(x):
    return (np.maximum.reduce(x), np.minimum.reduce(x, axis=None, keepdims=True),
            np.maximum.reduce(x, 0, None, None, True))

@cv.optimize(signatures=ALL)
def extrema_rows(x):
    return np.maximum.reduce(x, axis=1), np.minimum.reduce(x, axis=-1)

@cv.optimize(signatures=NUMBERS)
def extrema_initial(x):
    return (np.maximum.reduce(x, initial=-3), np.minimum.reduce(x, axis=1, initial=7,
                                                                   where=x != 0))

@cv.optimize(signatures=ALL)
def logicals(x):
    return (np.logical_and.reduce(x), np.logical_or.reduce(x, axis=1),
            np.logical_and.reduce(x, axis=None, keepdims=True),
            np.logical_or.reduce(x, where=x > 0),
            np.logical_and.reduce(x, 0, initial=False), np.logical_or.reduce(x, 1, initial=True),
            np.logical_and.reduce(x, axis=1, dtype=bool), np.logical_or.reduce(x, initial=0))

@cv.optimize(signatures=ALL)
def accumulations(x):
    return (np.add.accumulate(x), np.multiply.accumulate(x, axis=1),
            np.add.accumulate(x, -1, np.float64), np.multiply.accumulate(x, 0),
            np.add.accumulate(x, axis=(1,)))

@cv.optimize(signatures=ALL)
def running_extrema(x):
    return (np.maximum.accumulate(x), np.minimum.accumulate(x, axis=1),
            np.maximum.accumulate(x, -1), np.minimum.accumulate(x, 0),
            np.maximum.accumulate(x, axis=(1,)), np.maximum.accumulate(x, 1, np.float64),
            np.minimum.accumulate(x * 2, axis=0) + 1)

@cv.optimize(signatures=["f32[N]", "f64[N]", "i32[N]", "i8[N]", "bool_[N]"])
def long_extrema(x):
    return np.maximum.accumulate(x), np.minimum.accumulate(x)

@cv.optimize
def of_0d(x: cv.f32[()], i: cv.i8[()], b: cv.bool_[()]):
    return (np.add.reduce(x), np.maximum.reduce(x), np.logical_or.reduce(x),
            np.multiply.reduce(x, axis=None), np.minimum.reduce(x, keepdims=True),
            np.add.reduce(i), np.multiply.reduce(b, -1), np.logical_and.reduce(b),
            np.maximum.reduce(i, axis=0, keepdims=True), np.add.reduce(x, initial=1.5),
            np.multiply.reduce(i, where=b, initial=3), np.add.reduce(x, dtype=np.float64))
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def reduceat(x: cv.f32["N"]):
    return np.add.reduceat(x, [0, 2])

@cv.optimize
def at(x: cv.f32["N"]):
    np.add.at(x, [0, 1], 1.0)
    return x

@cv.optimize
def subtract_accumulate(x: cv.f32["N"]):
    return np.subtract.accumulate(x)

@cv.optimize
def subtract_reduce(x: cv.f32["N"]):
    return np.subtract.reduce(x)

@cv.optimize
def accumulate_all(x: cv.f32["N", "M"]):
    return np.add.accumulate(x, axis=None)

@cv.optimize
def accumulate_scalar(x: cv.f32[()]):
    return np.add.accumulate(x)

@cv.optimize
def logical_float(x: cv.f32["N"]):
    return np.logical_and.reduce(x, dtype=np.float32)

@cv.optimize
def reduce_out(x: cv.f32["N"], y: cv.f32[()]):
    return np.add.reduce(x, out=y)
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("ufunc_methods"), SOURCE)


sizes = st.integers(0, 4)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=sizes, b=sizes, c=sizes)
def test_outer_against_numpy(m, data: st.DataObject, a: int, b: int, c: int) -> None:
    for fn in (m.outers, m.bool_outers):
        for sig in fn.signatures:
            check_bits(fn, *signature_arrays(data, sig, {"A": a, "B": b, "C": c}))
    check_bits(m.outer_numbers, data.draw(view_of((a, b), "float32")), -1.5, 4)
    # NumPy's fmax and fmin give either zero of a tie by loop (float32: -0.0 from its
    # strided loop, 0.0 from its SIMD one, for the same fmax(-0.0, 0.0)): values only
    for sig in m.fmax_outers.signatures:
        check_exact(m.fmax_outers, *signature_arrays(data, sig, {"A": a, "B": b, "C": c}))


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=sizes, b=sizes)
def test_reduce_against_numpy(m, data: st.DataObject, a: int, b: int) -> None:
    for sig in m.sums.signatures:
        x, = signature_arrays(data, sig, {"A": a, "B": b})
        check(m.sums, x)  # float sums against float64: NumPy's pairwise order is its own
        if x.dtype.kind != "f":
            check_exact(m.sums, x)
        for fn in (m.extrema, m.extrema_rows, m.logicals):
            # of an empty axis NumPy's ValueError for an extremum; the sign of an extremum
            # of +0.0 and -0.0 is np.max's (either), not under test here
            check_exact(fn, x)
        if sig in m.sums_initial.signatures:
            check(m.sums_initial, x)
            check_exact(m.extrema_initial, x)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=sizes, b=sizes)
def test_accumulate_against_numpy(m, data: st.DataObject, a: int, b: int) -> None:
    for sig in m.accumulations.signatures:
        x, = signature_arrays(data, sig, {"A": a, "B": b})
        # running sums in order, as NumPy's (a leading -0.0 is np.cumsum's +0.0 here)
        check_exact(m.accumulations, x)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=sizes, b=sizes)
def test_running_extrema_against_numpy(m, data: st.DataObject, a: int, b: int) -> None:
    for sig in m.running_extrema.signatures:
        x, = signature_arrays(data, sig, {"A": a, "B": b})
        check_bits(m.running_extrema, x)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n=st.integers(0, 300))
def test_running_extrema_of_long_rows(m, data: st.DataObject, n: int) -> None:
    """Rows of many elements (a GPU warp scans 32 at a time): NaNs, ties and signed zeros
    anywhere."""
    for sig in m.long_extrema.signatures:
        x, = signature_arrays(data, sig.replace("N", "A"), {"A": n})
        check_bits(m.long_extrema, x)


def test_running_extrema_keep_the_first_nan_and_the_last_tie(m) -> None:
    x = np.array([[0.0, -0.0, 1.0, np.nan, 5.0, -np.inf]], np.float64).T.copy()
    check_bits(m.running_extrema, x)
    check_bits(m.long_extrema, np.array([0.0, -0.0, -0.0, 0.0, np.nan, 3.0]))
    check_bits(m.long_extrema, np.array([-np.inf, np.inf, -np.inf]))


def test_default_axis_is_zero(m) -> None:
    """ufunc.reduce and accumulate reduce axis 0 unless told, where np.sum reduces all."""
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert m.sums(x)[0].shape == (3,) and m.extrema(x)[0].shape == (3,)
    assert m.logicals(x)[0].shape == (3,)
    np.testing.assert_array_equal(m.accumulations(x)[0], [[0, 1, 2], [3, 5, 7]])


@pytest.mark.parametrize("value", [0.0, -0.0, 3.0, np.nan])
def test_0d(m, value: float) -> None:
    check_exact(m.of_0d, np.array(value, np.float32), np.array(-7 if value else 0, np.int8),
                np.array(bool(value)))


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    x = np.ones(4, np.float32)
    cases = [
        (lambda: mod.reduceat(x), "np.add.reduceat is not supported"),
        (lambda: mod.at(x), "np.add.at is not supported"),
        (lambda: mod.subtract_accumulate(x), "np.subtract.accumulate is not supported"),
        (lambda: mod.subtract_reduce(x), "np.subtract.reduce is not supported"),
        (lambda: mod.accumulate_all(x[None]), "accumulate does not allow multiple axes"),
        (lambda: mod.accumulate_scalar(np.array(1.0, np.float32)), "cannot accumulate on a"),
        (lambda: mod.logical_float(x), "No loop matching"),
        (lambda: mod.reduce_out(x, np.array(0.0, np.float32)), r"out=\.\.\.\) is not supported"),
    ]
    for call, message in cases:
        with pytest.raises(cv.CompileError, match=message) as e:
            call()
        assert "^" in str(e.value)
