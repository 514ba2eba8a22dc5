"""np.put_along_axis (NumPy's own Python code, inlined: its fancy index of aranges and the
indices, then an assignment into the array it was given, which the caller sees) and
np.issubdtype / np.result_type run on the dtypes they are given (numpy_api.COMPILE_TIME),
against NumPy exactly on random shapes and indices (hypothesis), outputs poisoned."""

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

@cv.optimize(signatures=["f32[B,V], i64[B,K]"])
def put(logits, idx):
    mask = np.zeros_like(logits, dtype=bool)
    np.put_along_axis(mask, np.argsort(-logits, axis=-1)[:, :2], True, axis=-1)
    y = logits * 1
    np.put_along_axis(y, idx, -1.0, axis=1)
    wide = np.result_type(idx.dtype, np.float32) == np.float64
    kind = np.issubdtype(idx.dtype, np.integer) and wide
    return np.where(mask, logits, -np.inf), y, kind
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("put_along_axis"), SOURCE)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), b=st.integers(1, 4), v=st.integers(2, 7), k=st.integers(1, 2))
def test_against_numpy(m, data: st.DataObject, b: int, v: int, k: int) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    check_exact(m.put, data.draw(view_of((b, v), "float32")), rng.integers(-v, v, (b, k)))
