"""Smaller pieces of NumPy inference code uses, against NumPy on random shapes: lists
built with append and stacked, functions defined inside the compiled one, a matmul of a
constant array, matmuls of 4-D operands,
np.finfo/iinfo, np.outer, np.pad in constant mode."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import check, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def rnn(x: cv.f32[3, "B", "D"], w: cv.f32["D", "D"]):
    h = np.zeros((x.shape[1], x.shape[2]), dtype=np.float32)
    outs = []
    for t in range(3):
        h = np.tanh(x[t] + h @ w)
        outs.append(h)
    outs.reverse()
    return np.stack(outs), len(outs)

@cv.optimize
def nested(x: cv.f32["B", "D"], w: cv.f32["D", "D"]):
    scale = 2.0

    def layer(h, bias=1.0):
        return np.tanh(h @ w * scale + bias)

    y = layer(x)
    scale = 0.5  # read when layer runs, as Python's closures do
    return layer(y, bias=0.0), layer(x, 2.0)

@cv.optimize
def limits(x: cv.f32["T", "D"]):
    return np.maximum(x * 1e38, np.finfo(np.float32).min), x * np.iinfo(np.int8).max

@cv.optimize(signatures=["f32[N], f32[M]", "f64[A,B], f64[M]"])
def outer(a, b):
    return np.outer(a, b)

@cv.optimize
def attention4d(q: cv.f32["B", "H", "T", "D"], k: cv.f32["B", "H", "S", "D"],
                v: cv.f32["B", "H", "S", "D"]):
    s = q @ np.swapaxes(k, -1, -2) * q.shape[-1] ** -0.5
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v

@cv.optimize(signatures=["f32[B,H,T,D], f32[D,E], f32[1,H,D,E]",
                         "f64[B,H,T,D], f64[D,E], f64[1,H,D,E]"])
def projections4d(x, w, per_head):
    return x @ w, x @ per_head, w.T @ x[..., None]

@cv.optimize(signatures=["f32[T,D]", "i64[T,D]"])
def padded(x):
    return np.pad(x, ((2, 0), (0, 0))), np.pad(x, 1, constant_values=-1), np.pad(x, (0, 3))
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("more_numpy"), SOURCE)


sizes = st.integers(0, 7)


@settings(max_examples=20, deadline=None)
@given(a=sizes, b=sizes, seed=st.integers(0, 2**32 - 1))
def test_against_numpy(m, a: int, b: int, seed: int) -> None:
    r = np.random.default_rng(seed)

    def f32(*shape: int) -> np.ndarray:
        return r.standard_normal(shape).astype(np.float32)

    check(m.rnn, f32(3, a, b), f32(b, b))
    check(m.nested, f32(a, b), f32(b, b))
    check(m.limits, f32(a, b))
    check(m.outer, f32(a), f32(b))
    check(m.outer, r.standard_normal((a, 2)), r.standard_normal(b))
    check(m.attention4d, f32(2, a, 3, b + 1), f32(2, a, 4, b + 1), f32(2, a, 4, b + 1), scale=4)
    check(m.projections4d, f32(a, 2, 3, b), f32(b, 5), f32(1, 2, b, 5), scale=4)
    check(m.projections4d, r.standard_normal((1, a, 2, b)), r.standard_normal((b, 3)),
          r.standard_normal((1, a, b, 3)))
    check(m.padded, f32(a, b))
    check(m.padded, r.integers(-9, 9, (a, b)))
