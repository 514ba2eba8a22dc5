"""np.cov and np.corrcoef (frontend/covariance.py) against NumPy in float64 on random
shapes and views (hypothesis): rowvar, bias, ddof, a second operand y, dtype=, float32,
float64 and int64 observations, one observation (N - ddof = 0: NumPy's inf and NaN), one
variable of a static count (a number, squeezed), none; outputs poisoned before the call.
A symbolic count of variables is built for more than one: a call with one is refused at
the call (NumPy would squeeze the result to a number). Weights are refused."""

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
from cuvil_aot.errors import SignatureShapeError

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def covs(x: cv.f32["V", "N"], y: cv.f32["N"], v: cv.f64["N"]):
    return (np.cov(x), np.cov(x, bias=True), np.cov(x, ddof=0), np.cov(x, y), np.cov(v),
            np.corrcoef(x), np.corrcoef(x, y), np.corrcoef(v), np.cov(x, dtype=np.float32))

@cv.optimize
def columns(x: cv.f32["N", "V"]):
    return np.cov(x, rowvar=False), np.corrcoef(x, rowvar=False)

@cv.optimize
def one_variable(x: cv.f32[1, "N"]):
    return np.cov(x), np.corrcoef(x)

@cv.optimize
def counts(x: cv.i64[3, "N"]):
    return np.cov(x), np.corrcoef(x)
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("covariance"), SOURCE)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), v=st.integers(2, 5), n=st.integers(1, 7))
def test_against_numpy(m, data: st.DataObject, v: int, n: int) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    with warnings.catch_warnings():  # NumPy's for N - ddof <= 0 (one observation)
        warnings.simplefilter("ignore", RuntimeWarning)
        check(m.covs, data.draw(view_of((v, n), "float32", special=False)),
              data.draw(view_of((n,), "float32", special=False)), rng.standard_normal(n))
        check(m.one_variable, data.draw(view_of((1, n), "float32", special=False)))
        check(m.columns, data.draw(view_of((n, v), "float32", special=False)))
        check(m.counts, rng.integers(-5, 5, (3, n)))


def test_one_variable_of_a_symbolic_count_is_refused_at_the_call(m) -> None:
    x = np.ones((1, 4), np.float32)
    with pytest.raises(SignatureShapeError, match="more than one variable"):
        m.covs(x, x[0], np.ones(4))
    with pytest.raises(SignatureShapeError, match="more than one variable"):
        m.columns(x.T)


def test_weights_are_refused(tmp_path: Path) -> None:
    source = ("import numpy as np\nimport cuvil_aot as cv\n\n@cv.optimize\n"
              "def f(x: cv.f32[3, 4], w: cv.i64[4]):\n    return np.cov(x, fweights=w)\n")
    mod = compile_source(tmp_path, source)
    with pytest.raises(cv.CompileError, match="fweights") as e:
        mod.f(np.ones((3, 4), np.float32), np.ones(4, np.int64))
    assert "^" in str(e.value)
