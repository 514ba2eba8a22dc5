"""np.deg2rad/np.radians, np.rad2deg/np.degrees, np.rot90, np.isin, np.vdot and
np.linalg.matrix_power (frontend/composed.py, composed_math.py) against NumPy on random
shapes and views (hypothesis), outputs poisoned before the call: the angle conversions bit
for bit in NumPy's result dtype (float16 of bool and int8, float64 of int64; float32 by
NumPy's own factor, not the float32 nearest 180 / pi), quarter turns of every k and axes,
isin with NaN and invert, matrix powers 0 to 9 against float64. NumPy's errors: sizes of
vdot that differ at the call; bad rot90 axes, a non-square matrix and a negative power
(an inverse) refused at the user's line."""

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

ANGLE_TYPES = ["f32[A,B]", "f64[A,B]", "f16[A,B]", "i64[A,B]", "bool_[A,B]", "i8[A,B]"]

@cv.optimize(signatures=ANGLE_TYPES)
def angles(x):
    return np.deg2rad(x), np.rad2deg(x), np.radians(x), np.degrees(x)

@cv.optimize
def turns(x: cv.f32["A", "B", "C"]):
    return (np.rot90(x), np.rot90(x, 2), np.rot90(x, -1, axes=(1, 2)), np.rot90(x, 3, (2, 0)),
            np.rot90(x, 4))

@cv.optimize
def members(x: cv.f32["A", "B"], t: cv.f32["K"]):
    return np.isin(x, t), np.isin(x, t, invert=True), np.isin(x, [1.0, 2.0])

@cv.optimize
def products(a: cv.f32["A", "B"], b: cv.f32["B", "A"], m: cv.f64["N", "N"]):
    return (np.vdot(a, b), np.linalg.matrix_power(m, 0), np.linalg.matrix_power(m, 1),
            np.linalg.matrix_power(m, 2), np.linalg.matrix_power(m, 3),
            np.linalg.matrix_power(m, 6), np.linalg.matrix_power(m, 9))

@cv.optimize
def batched_power(s: cv.f32["Z", 4, 4]):
    return np.linalg.matrix_power(s, 5)
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def same_axes(x: cv.f32["A", "B"]):
    return np.rot90(x, 1, (1, 1))

@cv.optimize
def inverse(m: cv.f32[3, 3]):
    return np.linalg.matrix_power(m, -1)

@cv.optimize
def not_square(m: cv.f32[3, 4]):
    return np.linalg.matrix_power(m, 2)
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("more_compositions"), SOURCE)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=st.integers(0, 5), b=st.integers(0, 5), c=st.integers(1, 4))
def test_against_numpy(m, data: st.DataObject, a: int, b: int, c: int) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = data.draw(view_of((a, b), "float32"))
    for dtype in ("float32", "float64", "float16"):
        check_exact(m.angles, x.astype(dtype))
    check_exact(m.angles, rng.integers(-300, 300, (a, b)))
    check_exact(m.angles, rng.integers(-100, 100, (a, b)).astype(np.int8))
    check_exact(m.angles, rng.random((a, b)) < 0.5)
    check_exact(m.turns, data.draw(view_of((a, b, c), "float32")))
    table = rng.integers(-2, 3, (a, b)).astype(np.float32)
    table[rng.random((a, b)) < 0.2] = np.nan
    tests = rng.integers(-2, 3, c).astype(np.float32)
    tests[0] = np.nan
    check_exact(m.members, table, tests)
    check(m.products, data.draw(view_of((a, b), "float32")), data.draw(view_of((b, a), "float32")),
          rng.standard_normal((c, c)) * 0.7)
    check(m.batched_power, (rng.standard_normal((a, 4, 4)) * 0.5).astype(np.float32))


def test_vdot_sizes_that_differ_raise_numpys_error(m) -> None:
    eye = np.eye(2)
    with pytest.raises(ValueError):
        m.products(np.ones((2, 3), np.float32), np.ones((3, 3), np.float32), eye)


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    cases = [(mod.same_axes, np.ones((2, 3), np.float32), "Axes must be different"),
             (mod.inverse, np.ones((3, 3), np.float32), "negative exponent"),
             (mod.not_square, np.ones((3, 4), np.float32), "must be square")]
    for fn, arg, message in cases:
        with pytest.raises(cv.CompileError, match=message) as e:
            fn(arg)
        assert "^" in str(e.value), str(e.value)
