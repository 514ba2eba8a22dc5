"""np.take and .take with mode='clip' and mode='wrap' (frontend/gather.py) against NumPy
exactly on random shapes, views and indices far past both ends (hypothesis), int64 and
int8 indices, a constant list, axis None; outputs poisoned before the call. An empty axis
raises NumPy's IndexError at the call in either mode; an unknown mode its ValueError at
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
def takes(x: cv.f32["A", "B"], i: cv.i64["K"], j: cv.i8["K"]):
    return (np.take(x, i, axis=1, mode="clip"), np.take(x, i, axis=0, mode="wrap"),
            np.take(x, j, mode="clip"), x.take(i, mode="wrap"),
            np.take(x, [0, 9, -9], axis=1, mode="clip"))
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("take_modes"), SOURCE)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=st.integers(1, 5), b=st.integers(1, 5), k=st.integers(0, 8))
def test_against_numpy(m, data: st.DataObject, a: int, b: int, k: int) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    check_exact(m.takes, data.draw(view_of((a, b), "float32")), rng.integers(-30, 30, k),
                rng.integers(-30, 30, k).astype(np.int8))


def test_an_empty_axis_raises_numpys_error(m) -> None:
    i, j = np.array([0, 1]), np.array([0, 1], np.int8)
    for x in (np.zeros((0, 4), np.float32), np.zeros((3, 0), np.float32)):
        with pytest.raises(IndexError, match="non-empty take from an empty axes"):
            m.takes(x, i, j)


def test_an_unknown_mode_is_refused(tmp_path: Path) -> None:
    source = ("import numpy as np\nimport cuvil_aot as cv\n\n@cv.optimize\n"
              "def f(x: cv.f32[3]):\n    return np.take(x, [0], mode='nearest')\n")
    mod = compile_source(tmp_path, source)
    with pytest.raises(cv.CompileError, match="clipmode must be one of") as e:
        mod.f(np.ones(3, np.float32))
    assert "^" in str(e.value)
