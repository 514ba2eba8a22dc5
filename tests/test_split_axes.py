"""np.split/array_split/hsplit/vsplit, np.swapaxes and np.moveaxis against NumPy on
random shapes (symbolic dims drawn independently), outputs poisoned."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import check, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def heads(x: cv.f32["B", "3D"]):
    q, k, v = np.split(x, 3, axis=-1)
    return q * 2, k + v

@cv.optimize
def qkv(x: cv.f32["B", "N"]):  # N may not divide: NumPy's ValueError at the call
    q, k, v = np.split(x, 3, axis=-1)
    return q * 2, k + v

@cv.optimize(signatures=["f32[N,M]", "i64[N,M]"])
def at_indices(x):
    a, b, c = np.split(x, [2, 5])
    d, e = np.hsplit(x, [1])
    return a, b, c, d, e

@cv.optimize
def uneven(x: cv.f64[7, "N"]):
    return tuple(np.array_split(x, 3)) + tuple(np.vsplit(x, 7)[:2])

@cv.optimize
def axes(x: cv.f32["A", "B", "C"]):
    return (np.swapaxes(x, 0, 2), x.swapaxes(1, -1) + 1, np.moveaxis(x, 0, -1),
            np.moveaxis(x, [0, 1], [-1, 0]))
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("split_axes"), SOURCE)


sizes = st.integers(0, 8)


@settings(max_examples=20, deadline=None)
@given(a=sizes, b=sizes, c=sizes, seed=st.integers(0, 2**32 - 1))
def test_against_numpy(m, a: int, b: int, c: int, seed: int) -> None:
    r = np.random.default_rng(seed)
    check(m.heads, r.standard_normal((a, 3 * b)).astype(np.float32))
    check(m.at_indices, r.standard_normal((a + 5, b + 1)).astype(np.float32))
    check(m.at_indices, r.integers(-9, 9, (a + 5, b + 1)))
    check(m.uneven, r.standard_normal((7, b)))
    check(m.axes, r.standard_normal((a, b, c)).astype(np.float32))


def test_sections_that_may_not_divide_are_checked_at_the_call(m) -> None:
    r = np.random.default_rng(1)
    for n in (0, 3, 9, 12):
        check(m.qkv, r.standard_normal((2, n)).astype(np.float32))
    for n in (1, 2, 4, 10):
        with pytest.raises(ValueError, match="array split does not result in an equal "
                           "division"):
            np.split(np.ones((2, n)), 3, axis=-1)
        with pytest.raises(ValueError, match="array split does not result in an equal "
                           "division"):
            m.qkv(np.ones((2, n), np.float32))


def test_array_split_of_sections_that_may_not_divide_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    source = ("import numpy as np\nimport cuvil_aot as cv\n\n@cv.optimize\n"
              "def f(x: cv.f32['N']):\n    return np.array_split(x, 2)[0]\n")
    module = compile_source(tmp_path, source)
    with pytest.raises(cv.CompileError, match="may not divide into 2 equal sections") as info:
        module.f(np.ones(4, np.float32))
    assert ":6:" in str(info.value) and "np.split" in str(info.value)
