"""Shape ops and code constructs against NumPy: views, slicing, reshape, concat, loops, inlining."""

from __future__ import annotations

import numpy as np
from conftest import check
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

SOURCE = '''
import numpy as np
import cuvil_aot as cv

SCALE = 0.5
LAYERS = 3

def helper(x, k=2):
    return x * k + SCALE

@cv.optimize(signatures=["f32[A,B,C]"])
def transposes(x):
    return x.T + 1, np.transpose(x, (1, 0, 2)) * 2, x.transpose(2, 0, 1)

@cv.optimize(signatures=["f32[A,B]", "f64[A,B]"])
def reshapes(x):
    return x.reshape(-1), x.T.reshape(x.shape[1], x.shape[0]) + 1, np.reshape(x * 2, (1, -1, 1))

@cv.optimize(signatures=["f32[A,B]"])
def new_axes(x):
    return x[None, :, :] + x[:, None, :], np.expand_dims(x, -1) * 2, x[..., None].squeeze(-1)

@cv.optimize(signatures=["f32[A,B]"])
def slices(x):
    return x[1:], x[:, ::2], x[::-1, 1:-1], x[-2:, ::3] * 2, x[0]

@cv.optimize(signatures=["f32[A,4H]"])
def symbolic_slices(g):
    n = g.shape[1] // 4
    return g[:, :n] * g[:, n:2 * n] - g[:, 2 * n:3 * n], g[:, 3 * n:]

@cv.optimize(signatures=["f32[A,B], f32[A,C]", "f64[A,B], f64[A,C]"])
def concats(x, y):
    return np.concatenate([x, y * 2], axis=1), np.concatenate((x.T, y.T), axis=0) + 1

@cv.optimize(signatures=["f32[A,B], f32[A,B]"])
def stacks(x, y):
    return np.stack([x, y]), np.stack((x, y + 1), axis=-1)

@cv.optimize(signatures=["f32[A,B]"])
def loops_and_helpers(x):
    h = x
    for _ in range(LAYERS):
        h = np.tanh(helper(h, k=0.5))
    if LAYERS > 2:
        h = h + 1
    else:
        h = h - 1
    return h, helper(x)

@cv.optimize(signatures=["f32[A,B], float", "f32[A,B], int"])
def tuple_returns(x, s):
    a, b = x * s, x + s
    a += b
    return a, b

@cv.optimize
def annotated(x: cv.f32["N", 3], w: cv.f32[3]) -> object:
    return (x * w).sum(axis=1) / x.shape[1]

@cv.optimize(signatures=["f32[B,I], f32[B,H], f32[B,H], f32[I,4H], f32[H,4H], f32[4H]"])
def lstm_step(x, h, c, wx, wh, b):
    gates = x @ wx + h @ wh + b
    n = h.shape[1]
    i, f = 1 / (1 + np.exp(-gates[:, :n])), 1 / (1 + np.exp(-gates[:, n:2 * n]))
    g, o = np.tanh(gates[:, 2 * n:3 * n]), 1 / (1 + np.exp(-gates[:, 3 * n:]))
    c2 = f * c + i * g
    return o * np.tanh(c2), c2
'''

dims = st.integers(0, 6)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=dims, b=dims, c=dims)
def test_views_and_reshapes(compiled, data, a, b, c):
    check(compiled.transposes, data.draw(view_of((a, b, c), "float32")))
    x = data.draw(view_of((a, b), "float32"))
    check(compiled.reshapes, x)
    check(compiled.reshapes, x.astype(np.float64))
    check(compiled.new_axes, x)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=st.integers(2, 7), b=st.integers(3, 7), h=st.integers(0, 4))
def test_slicing(compiled, data, a, b, h):
    check(compiled.slices, data.draw(view_of((a, b), "float32")))
    check(compiled.symbolic_slices, data.draw(view_of((a, 4 * h), "float32")))


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=dims, b=dims, c=dims)
def test_concatenate_and_stack(compiled, data, a, b, c):
    x, y = data.draw(view_of((a, b), "float32")), data.draw(view_of((a, c), "float32"))
    check(compiled.concats, x, y)
    check(compiled.concats, x.astype(np.float64), y.astype(np.float64))
    check(compiled.stacks, x, data.draw(view_of((a, b), "float32")))


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=dims, b=dims, s=st.floats(-3, 3))
def test_code_constructs(compiled, data, a, b, s):
    x = data.draw(view_of((a, b), "float32"))
    check(compiled.loops_and_helpers, x)
    check(compiled.tuple_returns, x, s)
    check(compiled.tuple_returns, x, int(s))
    check(compiled.annotated, data.draw(view_of((a, 3), "float32")),
          data.draw(view_of((3,), "float32")))


@settings(max_examples=25, deadline=None)
@given(data=st.data(), b=st.integers(0, 4), i=st.integers(0, 9), h=st.integers(0, 9))
def test_lstm_step(compiled, data, b, i, h):
    shapes = [(b, i), (b, h), (b, h), (i, 4 * h), (h, 4 * h), (4 * h,)]
    check(compiled.lstm_step, *(data.draw(view_of(s, "float32", special=False)) for s in shapes),
          scale=10 * (i + h + 1))


def test_original_function_stays_reachable(compiled):
    fn = compiled.annotated
    assert fn.__wrapped__ is fn.py_func
    assert fn.__name__ == "annotated"
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(fn.py_func(x, np.ones(3, np.float32)), [1.0, 1.0])
