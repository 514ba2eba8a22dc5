"""``n // k`` and ``n % k`` of a symbolic size by a constant that need not divide it, and a
reshape's -1 that the other sizes need not divide: sizes the call computes (floor),
usable in slices and reshapes, checked against NumPy (its ValueError where they do not
fit)."""

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
def rotary(x: cv.f32["T", "D"], cos: cv.f32["T", "D"], sin: cv.f32["T", "D"]):
    d = x.shape[-1]
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + np.concatenate([-x2, x1], axis=-1) * sin

@cv.optimize
def heads(x: cv.f32["B", "T", "D"]):
    b, t, d = x.shape
    return x.reshape(b, t, 4, d // 4).transpose(0, 2, 1, 3) * 2

@cv.optimize
def thirds(x: cv.f32["N"]):
    return x.reshape(x.shape[0] // 3, 3)

@cv.optimize
def group_norm(x: cv.f32["B", "C", "L"]):
    b, c, l = x.shape
    g = x.reshape(b, 4, -1)
    g = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)
    return g.reshape(b, c, l), x.reshape(-1, 3)

@cv.optimize
def quotients(x: cv.f64["N"]):
    n = x.shape[0]
    return x[: n // 3] * (n % 3), x[n // 2 :], np.float64(n // 7)
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("floor_dims"), SOURCE)


@settings(max_examples=25, deadline=None)
@given(t=st.integers(0, 5), d=st.integers(0, 13), seed=st.integers(0, 2**32 - 1))
def test_against_numpy(m, t: int, d: int, seed: int) -> None:
    r = np.random.default_rng(seed)
    check(m.rotary, *(r.standard_normal((t, d)).astype(np.float32) for _ in range(3)))
    check(m.heads, r.standard_normal((2, t, d)).astype(np.float32))  # D % 4: NumPy's error
    check(m.quotients, r.standard_normal(d))
    check(m.thirds, r.standard_normal(d).astype(np.float32))  # N % 3: NumPy's ValueError
    check(m.group_norm, r.standard_normal((2, d, t + 1)).astype(np.float32), scale=8)
