"""order='F' of reshape, np.reshape, ravel, np.ravel and flatten (frontend/handlers.py)
against NumPy exactly on random shapes and views (hypothesis), with -1 in the new shape;
outputs poisoned before the call. order='A' (by the input's memory layout) is refused at
the user's line."""

from __future__ import annotations

from pathlib import Path

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

@cv.optimize
def orders(x: cv.f32["A", "B", 4]):
    return (x.reshape(-1, order="F"), np.reshape(x, (4, -1), order="F"),
            np.ravel(x, order="F"), x.flatten(order="F"), x.reshape(2, -1, order="F"),
            x.ravel("F"), x.reshape((4, -1), order="C"))
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("fortran_order"), SOURCE)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=st.integers(1, 4), b=st.integers(1, 3))
def test_against_numpy(m, data: st.DataObject, a: int, b: int) -> None:
    check_exact(m.orders, data.draw(view_of((2 * a, b, 4), "float32")))


def test_order_a_is_refused(tmp_path: Path) -> None:
    source = ("import numpy as np\nimport cuvil_aot as cv\n\n@cv.optimize\n"
              "def f(x: cv.f32[2, 3]):\n    return x.reshape(-1, order='A')\n")
    mod = compile_source(tmp_path, source)
    with pytest.raises(cv.CompileError, match="order='A' is not supported") as e:
        mod.f(np.ones((2, 3), np.float32))
    assert "^" in str(e.value)
