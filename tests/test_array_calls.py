"""np.array / np.asarray of arrays, numbers and (nested) lists of numbers known at compile
time (frontend/array_calls.py, values.literal_array; lists holding arrays:
test_list_arrays.py), and lists of numbers wherever an array operand is expected
(np.maximum(x, [..]), np.interp's table), against NumPy: dtypes, shapes, values bit for
bit, outputs poisoned; NumPy's error for a ragged list and a diagnostic for what is
refused."""

from __future__ import annotations

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

@cv.optimize(signatures=["f32[N,3]", "f64[N,3]", "i32[N,3]"])
def constants(x):
    mean = np.array([0.485, 0.456, 0.406], dtype=np.float32)
    std = np.asarray((0.229, 0.224, 0.225), np.float32)
    return ((x - mean) / std, np.array([[1, 2, 3]]) * x, np.maximum(x, [0.1, -0.0, 3]),
            np.array([[True, False, True]]) & (x > 0), np.array(2.5) * x,
            np.array([7], dtype=np.int8) + x, np.array(x, ndmin=3), np.asarray(x, np.float64),
            np.array([], np.float32), x + (1, 2, 3))

@cv.optimize(signatures=["f32[N,3]", "f64[N,3]", "i32[N,3]"])
def copies(x):
    return np.array(x), np.array(x, dtype=np.float32), np.asarray(x)

@cv.optimize(signatures=["f32[N,3]"])
def write_a_copy(x):
    y = np.array(x)
    y[:, 0] = 5
    z = np.array(x, dtype=np.float32)
    z[:, 1] = 6
    w = np.asarray(x, copy=True)
    w[:, 2] = 7
    return y, z, w, x + 0

@cv.optimize(signatures=["f32[N,3]"])
def astype_copies(x):
    y = x * 2
    same = y.astype(np.float32, copy=False)  # y itself: the write shows in both
    same[:, 0] = 5
    fresh = y.astype(np.float32)
    fresh[:, 1] = 6
    return (y, same, fresh, x.astype(np.float64, casting="safe"),
            x.astype(np.int16, order="C", casting="unsafe"))

@cv.optimize(signatures=["f64[N]", "f32[N]"])
def tables(x):
    return (np.interp(x, [0.0, 1.0, 3.0], [0.0, 2.0, 1.0]), np.digitize(x, [0.0, 1.0]),
            np.searchsorted([0.0, 0.5, 2.0], x))
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("array_calls"), SOURCE)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), n=st.integers(0, 5))
def test_constant_arrays_against_numpy(m, data, n):
    for dtype in ("float32", "float64", "int32"):
        check_exact(m.constants, data.draw(view_of((n, 3), dtype)))


@settings(max_examples=10, deadline=None)
@given(data=st.data(), n=st.integers(0, 5))
def test_np_array_copies(m, data, n):
    x = data.draw(view_of((n, 3), "float32"))
    check_exact(m.copies, x)
    got = m.copies(x)
    assert got[0] is not x and not np.shares_memory(got[0], x)
    before = x.copy()
    check_exact(m.write_a_copy, x)  # np.array copies: writing it leaves x as it was
    np.testing.assert_array_equal(x, before)
    check_exact(m.astype_copies, x)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), n=st.integers(0, 6))
def test_list_tables(m, data, n):
    for dtype in ("float64", "float32"):
        check_exact(m.tables, data.draw(view_of((n,), dtype)))


@pytest.mark.parametrize("body, message", [
    ("np.array([[1.0, 2.0], [3.0]]) + x", "NumPy cannot make an array of this list"),
    ("np.array([x, [x]])", "inhomogeneous shape"),
    ("x + list(range(300))", "pass the array as an argument"),
    ("np.array(['a', 'b'])", "not supported"),
    ("x.astype(np.int32, casting='same_kind') + x", r"Cannot cast array data from "
     r"dtype\('float64'\) to dtype\('int32'\) according to the rule 'same_kind'"),
    ("x.astype(np.float64, copy=False, order='C')", "is not supported"),
])
def test_refused_with_a_diagnostic(tmp_path, body, message):
    source = f"import numpy as np\nimport cuvil_aot as cv\n\n@cv.optimize\n" \
             f"def f(x: cv.f64[2]):\n    return {body}\n"
    mod = compile_source(tmp_path, source)
    with pytest.raises(cv.CompileError, match=message):
        mod.f(np.zeros(2))
