"""``a.item()``, ``a.item(k)`` and ``a.item(i, j)`` (frontend/composed.py) against NumPy: a
Python scalar (a weak float, int or bool: times a float32 array it stays float32), of a
size-1 array, of the k-th of the flattened array (negative k too), of an element; on
random shapes and views (hypothesis), outputs poisoned before the call. NumPy's
ValueError at the call for an array whose size is not 1, its IndexError for k out of
range."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import check_exact, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def items(x: cv.f32["A", "B"], n: cv.i64[1], s: cv.f32["K"], k: int):
    return (x * x[0, 0].item(), x + x.item(k), x - x.item(1, 0), x * n.item(), x + s.item(),
            x.max().item() + x, (x > 0).all().item() + x)  # max: exact in any order
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("item"), SOURCE)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=st.integers(2, 5), b=st.integers(1, 5))
def test_against_numpy(m, data: st.DataObject, a: int, b: int) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = data.draw(view_of((a, b), "float32", special=False))
    k = int(rng.integers(-a * b, a * b))
    check_exact(m.items, x, rng.integers(-9, 9, 1), rng.standard_normal(1).astype(np.float32), k)


def test_numpys_errors_at_the_call(m) -> None:
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="size 1"):
        m.items(x, np.ones(1, np.int64), np.ones(2, np.float32), 0)
    with pytest.raises(IndexError):
        m.items(x, np.ones(1, np.int64), np.ones(1, np.float32), 6)
