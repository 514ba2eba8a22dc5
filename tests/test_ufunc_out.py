"""``out=`` of ufuncs and np.clip (frontend/ufunc_out.py) against NumPy in float64 on random
shapes and views (hypothesis), results poisoned before the call: out a local array, a
slice of one, an argument (the caller's array is written), a tuple of two, with where=,
in a run-time loop; the result broadcast into a larger out and cast into its dtype. What
NumPy rejects is refused at the user's line with NumPy's message: an out smaller than the
result, a cast across kinds, out= of a function that is no ufunc, outputs by position,
out= inside an if on a run-time condition."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import assert_close, assert_refused, check, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

import cuvil_aot as cv

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[N,K], f32[H,K], f32[H], f32[K,H]"])
def relu_ffn(x, w1, b1, w2):
    h = x @ w1.T + b1
    np.maximum(h, 0, out=h)
    return x + h @ w2.T

@cv.optimize(signatures=["f32[N,M], f32[M]"])
def into_slices(x, row):
    y = np.zeros((x.shape[0], x.shape[1] + 2), np.float32)
    np.multiply(row, 2, out=y[:, 2:])
    r = np.add(x[:, :1], 1.5, out=y[:, 1:2])
    s = np.tanh(x, out=(np.empty_like(x),))
    return y, r * 2, s

@cv.optimize(signatures=["f32[N,M], bool[N,M]"])
def masked(x, m):
    y = x * 0 + 7
    z = np.subtract(x, 1, out=y, where=m)
    return y, z

@cv.optimize(signatures=["f32[N,M]", "f64[N,M]"])
def clipped_and_split(x):
    y = x * 3
    np.clip(y, -1.0, 1.0, out=y)
    q = np.empty_like(x)
    r = np.empty_like(x)
    a, b = np.divmod(x, 0.75, out=(q, r))
    return y, a, b, q, r

@cv.optimize(signatures=["f64[N], i32[N]"])
def casts(x, i):
    y = np.zeros(x.shape, np.float32)
    np.multiply(x, 3, out=y)      # float64 into float32: same kind
    f = np.zeros(x.shape, np.float64)
    np.add(i, i, out=f)           # int32 into float64
    return y, f

@cv.optimize(signatures=["f32[N,M], int"])
def halved(x, n):
    y = x + 0
    for _ in range(n):
        np.multiply(y, 0.5, out=y)
    return y

@cv.optimize(signatures=["f32[N,M]"])
def into_argument(x):
    np.exp(x, out=x)
    return x * 1
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("ufunc_out"), SOURCE)


dims = st.integers(1, 6)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), n=dims, k=dims, h=dims)
def test_relu_ffn(m, data: st.DataObject, n: int, k: int, h: int) -> None:
    check(m.relu_ffn, *(data.draw(view_of(s, "float32")) for s in ((n, k), (h, k), (h,), (k, h))))


@settings(max_examples=20, deadline=None)
@given(data=st.data(), n=dims, k=dims)
def test_slices_masks_clip_and_two_outputs(m, data: st.DataObject, n: int, k: int) -> None:
    x = data.draw(view_of((n, k), "float32"))
    check(m.into_slices, x, data.draw(view_of((k,), "float32")))
    check(m.masked, x, np.random.default_rng(n * 7 + k).random((n, k)) > 0.5)
    check(m.clipped_and_split, x)
    check(m.clipped_and_split, x.astype(np.float64))
    check(m.halved, x, data.draw(st.integers(0, 3)))


def test_casts_into_outs_dtype(m) -> None:
    rng = np.random.default_rng(3)
    check(m.casts, rng.standard_normal(9), rng.integers(-1000, 1000, 9).astype(np.int32))


def test_the_callers_array_is_written(m) -> None:
    x = np.random.default_rng(4).standard_normal((3, 5)).astype(np.float32)
    want = np.exp(x.astype(np.float64))
    got = m.into_argument(x)
    assert_close(x, want, np.float32)
    assert_close(got, want, np.float32)
    ref = np.random.default_rng(4).standard_normal((3, 5)).astype(np.float32)
    assert_close(m.into_argument.py_func(ref), want, np.float32)  # NumPy writes it too


@pytest.mark.parametrize("body, message", [
    ("np.exp(x, out=np.zeros(3, np.float32))",
     r"non-broadcastable output operand with shape \(3,\) doesn't match the broadcast "
     r"shape \(2, 3\)"),
    ("np.multiply(x, 2, out=np.zeros((2, 3), np.int32))",
     "Cannot cast ufunc 'multiply' output from dtype\\('float32'\\) to dtype\\('int32'\\)"),
    ("np.sum(x, axis=0, out=np.zeros(3, np.float32))", "np.sum with out= is not supported"),
    ("np.dot(x, x.T, out=np.zeros((2, 2), np.float32))", r"supported instead: y\[...\] = np.dot"),
    ("np.add(x, 1, x)", "outputs given by position are not supported"),
    ("np.exp(x, out=(x, x))", "The 'out' tuple must have exactly 1 entries"),
    ("np.exp(x, out=1.0)", "return arrays must be of ArrayType"),
])
def test_what_numpy_rejects_is_refused(tmp_path: Path, body: str, message: str) -> None:
    assert_refused(tmp_path, f"y = {body}\n    return x", message, "x: cv.f32[2, 3]",
                   (np.ones((2, 3), np.float32),))
    if not any(w in body for w in ("sum", "dot", "x, 1, x")):  # the rest NumPy raises too
        with pytest.raises((ValueError, TypeError)):
            eval(body, {"np": np, "x": np.ones((2, 3), np.float32)})


def test_a_view_that_out_returns_is_not_left_stale(tmp_path: Path) -> None:
    source = ("import numpy as np\nimport cuvil_aot as cv\n\n@cv.optimize\n"
              "def f(x: cv.f32[2, 3]):\n    y = x * 1\n    r = np.exp(x[:, :1], out=y[:, 1:2])\n"
              "    y[0, 1] = 9\n    return r\n")
    mod = compile_source(tmp_path, source)
    assert mod.f.py_func(np.ones((2, 3), np.float32))[0, 0] == 9  # NumPy's r shows the write
    with pytest.raises(cv.CompileError, match="'r' is a view of an array written after it"):
        mod.f(np.ones((2, 3), np.float32))


def test_out_inside_an_if_on_a_run_time_condition_is_refused(tmp_path: Path) -> None:
    source = ("import numpy as np\nimport cuvil_aot as cv\n\n@cv.optimize\n"
              "def f(x: cv.f32[3]):\n    y = x * 1\n    if x.sum() > 0:\n"
              "        np.exp(x, out=y)\n    return y\n")
    mod = compile_source(tmp_path, source)
    with pytest.raises(cv.CompileError, match="assignment into an array inside an if"):
        mod.f(np.ones(3, np.float32))

