"""np.select, np.divmod, np.modf, np.sinc, np.polyval and np.trapezoid
(frontend/composed_more.py) against NumPy in float64, on random shapes and views
(hypothesis) with ±inf, NaN and ±0.0 among the data (modf's signs compared exactly), int
and float operands, NumPy's result dtypes; outputs poisoned before the call (trapezoid
against NumPy on the same dtypes, whose float32 sums it rounds as NumPy does). NumPy's
errors for conditions that are not boolean and mismatched lists at the user's line."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import check, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

import cuvil_aot as cv

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def selects(x: cv.f32["A", "B"], i: cv.i64["A", "B"]):
    return (np.select([x > 1, x < -1], [x, -x]), np.select([x > 0], [i], default=2.5),
            np.select([x > 0, x < 0], [1, x], default=-7),
            np.select([x > 0, x > 1], [x, -x]))  # overlapping: the first wins

@cv.optimize
def parts(x: cv.f32["A", "B"], i: cv.i64["A", "B"]):
    return (*np.divmod(x, 0.7), *np.divmod(i, 3), *np.modf(x * 3), *np.modf(i), np.sinc(x),
            np.sinc(i))

@cv.optimize
def polys(x: cv.f32["A", "B"], c: cv.f32[3], i: cv.i64["A", "B"]):
    return np.polyval([1.0, 2.0, 3.0], x), np.polyval(c, x), np.polyval([2, 1], i)

@cv.optimize
def areas(x: cv.f32["A", "B"], t: cv.f64["B"]):
    return (np.trapezoid(x), np.trapezoid(x, axis=0), np.trapezoid(x, dx=0.5),
            np.trapezoid(x, t))
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def not_boolean(x: cv.f32["N"]):
    return np.select([x], [x])

@cv.optimize
def lengths(x: cv.f32["N"]):
    return np.select([x > 0, x < 0], [x])
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    with warnings.catch_warnings():  # the float64 polyval's promotion, as NumPy's
        warnings.simplefilter("ignore", cv.PromotionWarning)
        return compile_source(tmp_path_factory.mktemp("composed_more"), SOURCE)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=st.integers(0, 5), b=st.integers(1, 5))
def test_against_numpy(m, data: st.DataObject, a: int, b: int) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = data.draw(view_of((a, b), "float32"))
    i = rng.integers(-9, 9, (a, b))
    check(m.selects, x, i)
    check(m.parts, x, i)
    whole, fraction = np.modf(x * 3), m.parts(x, i)[4:6]  # the signs of zeros, exactly
    for got, want in zip(fraction, whole[::-1]):
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    finite = data.draw(view_of((a, b), "float32", special=False))
    check(m.polys, finite, rng.standard_normal(3).astype(np.float32), i)
    # a float32 y's sums of neighbours are float32 in NumPy too, before the float64 widths
    # multiply them: against NumPy on the same dtypes
    t = np.cumsum(rng.random(b))
    for got, want in zip(m.areas(finite, t), m.areas.py_func(finite, t)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    for fn, message in ((mod.not_boolean, "should be boolean"), (mod.lengths, "same length")):
        with pytest.raises(cv.CompileError, match=message) as e:
            fn(np.ones(3, np.float32))
        assert "^" in str(e.value)
