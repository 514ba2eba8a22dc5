"""np.block (frontend/composed.py) against NumPy: nested lists of arrays and numbers
arranged in blocks, on random shapes and views (hypothesis), of float32, float64 and int64
with Python floats among the leaves (NumPy scalars: float64 results), leaves promoted to
the lists' depth (1s in front), three levels deep, a bare array (a new array); outputs
poisoned before the call. NumPy's errors: sizes that do not line up raise its ValueError at
the call (symbolic) or at compile time (static), and tuples, empty lists and mismatched
depths are refused at the user's line with NumPy's message."""

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
def grid(a: cv.f32["M", "N"], b: cv.f64["M", "K"], c: cv.f32["J", "N + K"]):
    return np.block([[a, b], [c]])

@cv.optimize
def mixed(a: cv.f32["N"], b: cv.i64["K"]):
    return np.block([a, 2.5, b, 1])

@cv.optimize
def promoted(a: cv.f32["M", "N"], v: cv.f32["N"]):
    return np.block([[a], [v], [v * 2]])

@cv.optimize
def deep(a: cv.f32["M", "N"], t: cv.f32["M", "N", "K"]):
    return np.block([[[a, t]], [[t, a]]])

@cv.optimize
def bare(a: cv.f32["N"]):
    b = np.block(a)
    b[0] = 7.0
    return b, a * 1
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def tuple_arg(a: cv.f32["N"]):
    return np.block((a, a))

@cv.optimize
def empty(a: cv.f32["N"]):
    return np.block([a, []])

@cv.optimize
def depths(a: cv.f32["N"]):
    return np.block([[a], a])

@cv.optimize
def static_sizes(a: cv.f32[2, 3], b: cv.f32[2, 2]):
    return np.block([[a], [b]])
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("block"), SOURCE)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), dims=st.tuples(*[st.integers(0, 5)] * 4))
def test_blocks_against_numpy(m, data: st.DataObject, dims: tuple[int, ...]) -> None:
    mm, n, k, j = dims
    check(m.grid, data.draw(view_of((mm, n), "float32")), data.draw(view_of((mm, k), "float64")),
          data.draw(view_of((j, n + k), "float32")))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    check(m.mixed, data.draw(view_of((n,), "float32")), rng.integers(-9, 9, k))
    check(m.promoted, data.draw(view_of((mm, n), "float32")), data.draw(view_of((n,), "float32")))
    check(m.deep, data.draw(view_of((mm, n), "float32")),
          data.draw(view_of((mm, n, k), "float32")))


def test_sizes_that_do_not_line_up_raise_numpys_error(m) -> None:
    a, b = np.ones((2, 3), np.float32), np.ones((2, 1))
    with pytest.raises(ValueError):
        m.grid.py_func(a, b, np.ones((1, 5), np.float32))
    with pytest.raises(ValueError):
        m.grid(a, b, np.ones((1, 5), np.float32))
    check(m.grid, a, b, np.ones((1, 4), np.float32))


def test_a_bare_array_is_a_new_array(m) -> None:
    a = np.arange(4, dtype=np.float32)
    b, again = m.bare(a)
    assert b[0] == 7.0 and again[0] == 0.0 and a[0] == 0.0


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    a = np.ones(3, np.float32)
    cases = [(mod.tuple_arg, "TypeError: arrays is a tuple. Only lists can be used"),
             (mod.empty, r"ValueError: List at arrays\[1\] cannot be empty"),
             (mod.depths, "ValueError: List depths are mismatched. First element was at "
                          r"depth 2, but there is an element at depth 1 \(arrays\[1\]\)")]
    for fn, message in cases:
        with pytest.raises(cv.CompileError, match=message) as e:
            fn(a)
        assert "^" in str(e.value), str(e.value)
    with pytest.raises(cv.CompileError, match="dimension"):
        mod.static_sizes(np.ones((2, 3), np.float32), np.ones((2, 2), np.float32))
