"""np.real, np.imag, np.conj/np.conjugate and np.angle of real arrays and Python numbers
(frontend/real_parts.py) against NumPy bit for bit (the sign of zero too): float16,
float32, float64, int8, int32, int64 and bool, NaN, ±inf and ±0.0 among the data (angle of
-0.0 and -inf is pi, of NaN NaN), np.real giving the array itself."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_composed_arrays import assert_same_bits, check_bits
from test_elementwise import view_of

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[A,B]", "f64[A,B]", "f16[A,B]", "i8[A,B]", "i32[A,B]", "i64[A,B]",
                         "bool_[A,B]"])
def parts(x):
    return (np.imag(x), np.conj(x), np.conjugate(x), np.angle(x), np.angle(x, deg=True),
            np.angle(x, True), np.real(x) * 1)

@cv.optimize(signatures=["f32[A]", "i8[A]"])
def real_only(x):
    return np.real(x)

@cv.optimize
def of_numbers(s: float, n: int, b: bool, z: cv.f32[()]):
    return (np.real(s), np.imag(s), np.conj(s), np.angle(s), np.angle(n, deg=True), np.imag(n),
            np.conj(b), np.angle(b), np.imag(b), np.imag(z),
            np.angle(z, deg=True), np.real(z))
'''

DTYPES = ("float32", "float64", "float16", "int8", "int32", "int64", "bool")
EDGES = np.array([0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 1e-30, -1e-30])


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("real_parts"), SOURCE)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=st.integers(0, 5), b=st.integers(0, 5))
def test_parts_against_numpy(m, data: st.DataObject, a: int, b: int) -> None:
    for dtype in DTYPES:
        check_bits(m.parts, data.draw(view_of((a, b), dtype)))


def test_edges(m) -> None:
    for dtype in ("float32", "float64", "float16"):
        check_bits(m.parts, EDGES.astype(dtype)[None, :])
    check_bits(m.parts, np.array([[-128, 127, 0, -1]], np.int8))


def test_real_is_the_array_itself(m) -> None:
    for x in (np.arange(4, dtype=np.float32) - 2, np.arange(3, dtype=np.int8)):
        got = m.real_only(x)
        assert_same_bits(got, x)


@pytest.mark.parametrize("s", [-0.0, 0.0, -2.5, np.inf, -np.inf, np.nan])
def test_numbers(m, s: float) -> None:
    args = (s, -3, True, np.array(s, np.float32))
    with np.errstate(all="ignore"):
        want = m.of_numbers.py_func(*args)
    for g, w in zip(m.of_numbers(*args), want):
        assert_same_bits(g, w)  # a Python number comes back as a NumPy one of its dtype
