"""np.kron, np.cross, np.diag and np.array_equal (frontend/composed_arrays.py) against NumPy
exactly, on random shapes (empty and length-1 axes included) and views with NaN, ±inf and
±0.0 among the data, of float16, float32, float64, int8, int32, int64 and bool arrays and
Python scalars; cross's products rounded as NumPy's (no fused multiply-add, float16 rounded
at each step), its 2-vectors, broadcasting and axis keywords; diag's offsets both ways;
array_equal's shapes, NaNs and equal_nan. What NumPy refuses, or what cannot be known at
compile time, is refused at the user's line."""

from __future__ import annotations

import warnings
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

KRON = ["f32[A,B], f32[C]", "f64[A], i32[B,C]", "i8[A,B], i8[C,A]", "bool_[A], bool_[B]",
        "f16[A,B], f16[B,C]", "i32[A,B,C], f32[B]", "f32[A,1], f64[1,C]"]

@cv.optimize(signatures=KRON)
def krons(x, y):
    return np.kron(x, y), np.kron(y, x)

@cv.optimize
def kron_scalars(x: cv.f32["A", "B"], s: float, n: int):
    return np.kron(x, s), np.kron(n, x), np.kron(x, np.float32(2)), np.kron(s, n)

CROSS = ["f32[A,3], f32[A,3]", "f64[A,3], f64[3]", "f32[A,2], f32[B,1,3]", "f16[A,3], f16[A,2]",
         "i8[A,3], i8[A,3]", "i32[A,2], i32[A,2]", "f32[A,3], i64[A,3]", "f16[A,3], f16[A,3]",
         "f64[2], f64[A,2]", "i64[B,A,3], i8[A,2]"]

@cv.optimize(signatures=CROSS)
def crosses(x, y):
    return np.cross(x, y), np.cross(y, x)

@cv.optimize
def cross_axes(x: cv.f64[3, "A"], y: cv.f64["A", 3], z: cv.f32[2, "A", 3]):
    return (np.cross(x, y, axisa=0), np.cross(x, y, axisa=0, axisc=0),
            np.cross(z, z[::-1], axis=-1), np.cross(z, z[::-1], axis=0),
            np.cross(y, x, axisb=-2, axisc=-1), np.cross(z, y, axisa=2, axisc=1))

@cv.optimize(signatures=["f32[A]", "f64[A]", "f16[A]", "i8[A]", "i32[A]", "bool_[A]"])
def diags(v):
    return np.diag(v), np.diag(v, 1), np.diag(v, -2), np.diag(v, k=3), np.diag(v, 0)

@cv.optimize
def diag_matrices(x: cv.f32[3, 5], y: cv.i32["A", "A"], z: cv.bool_[4, 2]):
    return (np.diag(x), np.diag(x, 2), np.diag(x, -1), np.diag(x, 9), np.diag(y), np.diag(z, -3),
            np.diag(np.diag(x, 1)))

SAME = ["f32[A,B], f32[A,B]", "f32[A,B], f64[A,B]", "i32[A,B], f32[A,B]", "bool_[A,B], i8[A,B]",
        "f16[A,B], f16[A,B]", "i64[A,B], i64[A,B]"]

@cv.optimize(signatures=SAME)
def equals(x, y):
    return (np.array_equal(x, y), np.array_equal(x, y, equal_nan=True), np.array_equal(x, x),
            np.array_equal(x, x, True), np.array_equal(y, x, equal_nan=False))

@cv.optimize
def equal_shapes(x: cv.f32[2, 3], y: cv.f32[3, 2], z: cv.f32[2, 3, 1], s: float):
    return (np.array_equal(x, y), np.array_equal(x, z), np.array_equal(x, y.T),
            np.array_equal(s, s), np.array_equal(x[0, 0], s, equal_nan=True),
            np.array_equal(2, 2.0), np.array_equal(x[0], z[0, :, 0]))
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def cross_bool(x: cv.bool_["N", 3]):
    return np.cross(x, x)

@cv.optimize
def cross_four(x: cv.f32["N", 4]):
    return np.cross(x, x)

@cv.optimize
def cross_symbolic(x: cv.f32["N", "K"]):
    return np.cross(x, x)

@cv.optimize
def cross_scalar(x: cv.f32[3], s: float):
    return np.cross(x, s)

@cv.optimize
def diag_3d(x: cv.f32[2, 2, 2]):
    return np.diag(x)

@cv.optimize
def diag_run_time_k(x: cv.f32["N"], k: int):
    return np.diag(x, k)

@cv.optimize
def equal_unknown(x: cv.f32["N"], y: cv.f32["M"]):
    return np.array_equal(x, y)

@cv.optimize
def equal_nan_run_time(x: cv.f32["N"], flag: bool):
    return np.array_equal(x, x, equal_nan=flag)
'''

DTYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i32": "int32",
          "i64": "int64", "bool_": "bool"}


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("composed_arrays"), SOURCE)


def signature_arrays(data: st.DataObject, sig: str, sizes: dict[str, int]) -> list[np.ndarray]:
    """Views drawn for each argument of ``sig`` ("f32[A,1], i8[B]"), symbols from ``sizes``."""
    out = []
    for part in sig.split(", "):
        short, spec = part.rstrip("]").split("[")
        shape = tuple(int(d) if d.isdigit() else sizes[d] for d in spec.split(",") if d)
        out.append(data.draw(view_of(shape, DTYPES[short])))
    return out


def assert_same_bits(got: object, want: object) -> None:
    """Dtype, shape and every element NumPy's, NaN equal to NaN, the sign of zero too."""
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    np.testing.assert_array_equal(g, w)
    if w.dtype.kind == "f":
        numbers = ~np.isnan(w.astype(np.float64))
        np.testing.assert_array_equal(np.signbit(g)[numbers], np.signbit(w)[numbers])


def check_bits(fn: object, *args: object) -> None:
    """check_exact (poisoned outputs, NumPy's errors alike), then the signs of zeros."""
    check_exact(fn, *args)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's DeprecationWarning for 2-vectors
        try:
            want = fn.py_func(*args)  # type: ignore[attr-defined]
        except (ValueError, IndexError):
            return
    got = fn(*args)  # type: ignore[operator]
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        assert_same_bits(g, w)


sizes = st.integers(0, 4)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=sizes, b=sizes, c=sizes)
def test_kron_against_numpy(m, data: st.DataObject, a: int, b: int, c: int) -> None:
    for sig in m.krons.signatures:
        check_bits(m.krons, *signature_arrays(data, sig, {"A": a, "B": b, "C": c}))
    check_bits(m.kron_scalars, data.draw(view_of((a, b), "float32")), -0.0, 3)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=sizes, b=sizes)
def test_cross_against_numpy(m, data: st.DataObject, a: int, b: int) -> None:
    for sig in m.crosses.signatures:
        check_bits(m.crosses, *signature_arrays(data, sig, {"A": a, "B": b}))
    check_bits(m.cross_axes, data.draw(view_of((3, a), "float64")),
               data.draw(view_of((a, 3), "float64")), data.draw(view_of((2, a, 3), "float32")))


def test_cross_rounds_each_product(m) -> None:
    """Random float32 and float64 vectors: NumPy stores a1 * b2 before subtracting a2 * b1;
    a fused multiply-add would be 1 ulp off in about half the components."""
    r = np.random.default_rng(7)
    x, y = (r.standard_normal((500, 3)).astype(np.float32) for _ in range(2))
    check_bits(m.crosses, x, y)
    x, y = (r.standard_normal((500, 3)) for _ in range(2))
    check_bits(m.crosses, x, y[0])
    check_bits(m.crosses, x[0, :2], y[:, :2])


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=st.integers(0, 6))
def test_diag_against_numpy(m, data: st.DataObject, a: int) -> None:
    for sig in m.diags.signatures:
        check_bits(m.diags, *signature_arrays(data, sig, {"A": a}))
    check_bits(m.diag_matrices, data.draw(view_of((3, 5), "float32")),
               data.draw(view_of((a, a), "int32")), data.draw(view_of((4, 2), "bool")))


def _near_copy(data: st.DataObject, x: np.ndarray, dtype: str) -> np.ndarray:
    """``x`` as ``dtype``, maybe with one element changed or a NaN moved."""
    y = np.array(x, dtype=dtype)
    if y.size and data.draw(st.booleans()):
        i = data.draw(st.integers(0, y.size - 1))
        flat = y.reshape(-1)
        flat[i] = (np.nan if y.dtype.kind == "f" and data.draw(st.booleans()) else
                   flat[i] + 1 if y.dtype.kind != "b" else ~flat[i])
    return y


@settings(max_examples=40, deadline=None)
@given(data=st.data(), a=sizes, b=sizes)
def test_array_equal_against_numpy(m, data: st.DataObject, a: int, b: int) -> None:
    for sig in m.equals.signatures:
        x, y = signature_arrays(data, sig, {"A": a, "B": b})
        for other in (y, _near_copy(data, x, y.dtype.name)):
            got, want = m.equals(x, other), m.equals.py_func(x, other)
            assert got == want, (x, other)
            assert all(type(g) is np.bool_ for g in got)  # a Python bool comes back NumPy's
    x = data.draw(view_of((2, 3), "float32"))
    for s in (1.5, np.nan, -0.0):
        assert m.equal_shapes(x, x.T.copy(), x[..., None], s) == \
            m.equal_shapes.py_func(x, x.T.copy(), x[..., None], s)


def test_array_equal_nan_places(m) -> None:
    mod = m
    x = np.array([[np.nan, 1.0, -0.0]], np.float32)
    for y in (x.copy(), np.array([[np.nan, 1.0, 0.0]]), np.array([[1.0, 1.0, 0.0]]),
              np.array([[np.nan, np.nan, 0.0]])):
        y = y.astype(np.float32)
        assert mod.equals(x, y) == mod.equals.py_func(x, y)


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    x3 = np.ones((2, 3), np.float32)
    cases = [
        (lambda: mod.cross_bool(np.ones((2, 3), bool)), "numpy boolean subtract"),
        (lambda: mod.cross_four(np.ones((2, 4), np.float32)), "dimension must be 2 or 3"),
        (lambda: mod.cross_symbolic(x3), "the count must be known at compile time"),
        (lambda: mod.cross_scalar(x3[0], 1.0), "At least one array has zero dimension"),
        (lambda: mod.diag_3d(np.ones((2, 2, 2), np.float32)), "Input must be 1- or 2-d"),
        (lambda: mod.diag_run_time_k(x3[0], 1), "k must be an int known at compile time"),
        (lambda: mod.equal_unknown(x3[0], x3[0]), "known only at the call"),
        (lambda: mod.equal_nan_run_time(x3[0], True), "equal_nan must be known at compile"),
    ]
    for call, message in cases:
        with pytest.raises(cv.CompileError, match=message) as e:
            call()
        assert "^" in str(e.value)
