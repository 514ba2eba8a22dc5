"""np.piecewise (frontend/piecewise.py) and the NumPy functions whose Python code the
interpreter now inlines behind NumPy's dispatchers (np.i0, and np.kaiser through it),
against NumPy on random shapes and views (hypothesis), outputs poisoned before the call:
the user's functions, a NumPy ufunc and constants as pieces, extra arguments, the
'otherwise' piece, a later condition overwriting an earlier one, an int array (its own
dtype). A dispatcher whose Python code does not compile keeps its own diagnostic
(np.histogram: 'calling histogram is not supported'); a count of functions NumPy refuses
is its ValueError at the user's line."""

from __future__ import annotations

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

def neg(v):
    return -v

def scaled_square(v, k):
    return v * v * k

@cv.optimize
def pieces(x: cv.f32["A", "B"], i: cv.i64["A", "B"]):
    return (np.piecewise(x, [x < 0, x >= 0], [neg, np.sqrt]),
            np.piecewise(x, [x < -1, x > 1], [scaled_square, 7.0, 0.5], 2.0),
            np.piecewise(x, [x > 0, x > 1], [1.0, 2.0]),
            np.piecewise(i, [i > 2], [3.7]))

@cv.optimize
def bessel(x: cv.f32["N"], i: cv.i64["N"]):
    return np.i0(x), np.i0(i), np.kaiser(12, 6.0) * x[0]
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def counts(x: cv.f32["N"]):
    return np.piecewise(x, [x < 0], [1.0, 2.0, 3.0])

@cv.optimize
def histogram(x: cv.f32["N"]):
    return np.histogram(x, bins=4, range=(0.0, 1.0))[0]
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("piecewise"), SOURCE)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=st.integers(0, 5), b=st.integers(1, 5))
def test_against_numpy(m, data: st.DataObject, a: int, b: int) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    check(m.pieces, data.draw(view_of((a, b), "float32")), rng.integers(-9, 9, (a, b)))
    x = (data.draw(view_of((a + 1,), "float32", special=False)) * 4).astype(np.float32)
    check(m.bessel, x, rng.integers(-20, 20, a + 1))


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    x = np.ones(3, np.float32)
    with pytest.raises(cv.CompileError, match="either 1 or 2 functions are expected") as e:
        mod.counts(x)
    assert "^" in str(e.value)
    with pytest.raises(cv.CompileError, match="calling histogram is not supported"):
        mod.histogram(x)
