"""Lists holding arrays, and lists as indices (frontend/values.py, gather.py) against
NumPy: np.array / np.asarray of nested lists of arrays, numbers and run-time scalars (the
arrays stacked along new first axes, NumPy's result dtype: numbers as float64 / int64, a
dtype= cast), a list in a ufunc; ``x[[0, 2, 1]]``, ``x[:, [1, -1]]``, nested and empty
lists, a list of run-time ints, assignment through one. On random shapes and views
(hypothesis), outputs poisoned before the call. NumPy's errors: shapes that differ raise
its ValueError at the call, an index out of range its IndexError; a list of bools (a mask)
and ragged nesting are refused at the user's line."""

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

@cv.optimize
def stacked(a: cv.f32["N"], b: cv.f32["N"], c: cv.i64["N"]):
    return np.array([a, b * 2]), np.array([[a], [c]]), np.array([a, b], dtype=np.float64)

@cv.optimize
def scalars(a: cv.f32["N"], i: int, s: float):
    return np.array([a.sum(), 1, i]), np.asarray([a.max(), s]), np.add(a[:1], [s])

@cv.optimize
def picked(x: cv.f32["N", "M"]):
    return x[[0, 2, 1]], x[:, [1, -1]], x[[[0], [1]], [0, 2]], x[[]]

@cv.optimize
def picked_at_run_time(x: cv.f32["N", "M"], i: int, j: int):
    return x[[i, j, i]]

@cv.optimize
def assigned(x: cv.f32["N", "M"]):
    y = x.copy()
    y[[0, 2]] = -1.0
    return y
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def mask_list(x: cv.f32["N"]):
    return x[[True, False, True]]

@cv.optimize
def ragged(a: cv.f32["N"]):
    return np.array([a, [a]])
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("lists"), SOURCE)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n=st.integers(0, 6), rows=st.integers(3, 6), cols=st.integers(3, 6))
def test_against_numpy(m, data: st.DataObject, n: int, rows: int, cols: int) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    check(m.stacked, data.draw(view_of((n,), "float32")), data.draw(view_of((n,), "float32")),
          rng.integers(-9, 9, n))
    a = data.draw(view_of((n + 1,), "float32"))
    check(m.scalars, a, int(rng.integers(-5, 5)), float(rng.standard_normal()))
    x = data.draw(view_of((rows, cols), "float32"))
    check(m.picked, x)
    check(m.assigned, x)
    i, j = (int(v) for v in rng.integers(-rows, rows, 2))
    check(m.picked_at_run_time, x, i, j)


def test_numpys_errors_at_the_call(m) -> None:
    with pytest.raises(ValueError):
        m.stacked(np.ones(3, np.float32), np.ones(2, np.float32), np.ones(3, np.int64))
    x = np.ones((3, 4), np.float32)
    with pytest.raises(IndexError):
        m.picked_at_run_time(x, 0, 3)
    with pytest.raises(IndexError):
        m.picked(np.ones((2, 4), np.float32))  # x[[0, 2, 1]] of two rows


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    with pytest.raises(cv.CompileError, match="boolean mask indexing") as e:
        mod.mask_list(np.ones(3, np.float32))
    assert "^" in str(e.value)
    with pytest.raises(cv.CompileError, match="inhomogeneous shape") as e:
        mod.ragged(np.ones(3, np.float32))
    assert "^" in str(e.value)
