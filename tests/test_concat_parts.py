"""Concatenations of parts that need kernels of their own (matmuls, reductions, row
kernels) against NumPy in float64, on random shapes, outputs poisoned."""

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
def gates(x: cv.f32["B", "D"], w1: cv.f32["D", "H"], w2: cv.f32["D", "G"]):
    return np.concatenate([x @ w1, np.tanh(x @ w2)], axis=1)

@cv.optimize
def sums_then_max(x: cv.f32["N", "D"], y: cv.f32["E"]):
    return np.concatenate([x.sum(axis=0), y]).max()

@cv.optimize
def softmax_beside(x: cv.f32["N", "D"], y: cv.f32["N", "E"]):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return np.concatenate([e / e.sum(axis=1, keepdims=True), y, x @ x.T], axis=1)

@cv.optimize
def nested(x: cv.f64["N", "D"]):
    inner = np.concatenate([x, x * 2], axis=1)
    return np.concatenate([inner, inner.mean(axis=1, keepdims=True)], axis=1), inner
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("concat_parts"), SOURCE)


sizes = st.integers(1, 9)


@settings(max_examples=20, deadline=None)
@given(b=sizes, d=sizes, h=sizes, g=sizes, seed=st.integers(0, 2**32 - 1))
def test_parts_with_kernels_of_their_own(m, b: int, d: int, h: int, g: int, seed: int) -> None:
    r = np.random.default_rng(seed)

    def f32(*shape: int) -> np.ndarray:
        return r.standard_normal(shape).astype(np.float32)

    check(m.gates, f32(b, d), f32(d, h), f32(d, g))
    check(m.sums_then_max, f32(b, d), f32(h))
    check(m.softmax_beside, f32(b, d), f32(b, g), scale=4)
    check(m.nested, r.standard_normal((b, d)))
