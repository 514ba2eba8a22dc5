"""A reshape whose -1 the call alone can infer: the other sizes hold an int known only at the
call, as transformers splits heads, ``x.reshape(*x.shape[:-1], -1, self.head_dim)``. The -1
is size / known, computed by the match; where it does not divide, or the known product is
below 1, the call raises NumPy's ValueError (hypothesis, against NumPy in float64)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import check, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def heads(x: cv.f32["B", "T", "E"], d: int):
    return x.reshape(*x.shape[:-1], -1, d).transpose(0, 2, 1, 3) * 2

@cv.optimize
def rows(x: cv.f32[4, 12], n: int):
    return x.reshape(-1, n) + 1
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return compile_source(tmp_path_factory.mktemp("reshape_at_the_call"), SOURCE)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), b=st.integers(1, 3), t=st.integers(1, 3), e=st.integers(0, 12),
       d=st.integers(-2, 7))
def test_heads_of_a_size_the_call_knows(m: Any, data: st.DataObject, b: int, t: int, e: int,
                                        d: int) -> None:
    check(m.heads, data.draw(view_of((b, t, e), "float32", special=False)), d)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), n=st.integers(-1, 13))
def test_a_static_size_over_a_run_time_one(m: Any, data: st.DataObject, n: int) -> None:
    check(m.rows, data.draw(view_of((4, 12), "float32", special=False)), n)


def test_numpys_message(m: Any) -> None:
    x = np.ones((2, 3, 12), np.float32)
    with pytest.raises(ValueError) as python:
        x.reshape(2, 3, -1, 5)
    with pytest.raises(ValueError) as compiled:
        m.heads(x, 5)
    assert "cannot reshape array of size 72 into shape" in str(compiled.value) and \
        "cannot reshape array of size 72 into shape" in str(python.value)
    with pytest.raises(ValueError, match=r"size 0 into shape \(2,3,newaxis,0\)"):
        m.heads(np.ones((2, 3, 0), np.float32), 0)


def test_the_llama_way_compiles(tmp_path: Path) -> None:
    """(*input_shape, -1, self.head_dim) of an instance's int, as modeling_llama writes it."""
    mod = compile_source(tmp_path, '''
import numpy as np
import cuvil_aot as cv

class Attention:
    q: cv.f32["O", "E"]
    head_dim: int

    def __init__(self, q, head_dim):
        self.q, self.head_dim = q, head_dim

    @cv.optimize
    def forward(self, x: cv.f32["B", "T", "E"]):
        input_shape = x.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        return (x @ self.q.T).reshape(hidden_shape).transpose(0, 2, 1, 3)
''')
    rng = np.random.default_rng(0)
    att = mod.Attention(rng.standard_normal((8, 4)).astype(np.float32), 2)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    ref = mod.Attention.forward.py_func(att, x.astype(np.float64))
    np.testing.assert_allclose(att.forward(x), ref, rtol=1e-5, atol=1e-6)
    assert att.forward(x).shape == (2, 4, 3, 2)
