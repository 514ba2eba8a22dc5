"""Reductions against NumPy: every axis combination, keepdims, methods, fused row kernels."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import check, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

from cuvil_aot import SignatureError

REDUCTIONS = ["sum", "mean", "max", "min", "prod", "var", "std"]
AXES = ["None", "0", "1", "-1", "(0, 2)", "(1, 2)", "(0, 1, 2)"]


def _source() -> str:
    lines = ["import numpy as np", "import cuvil_aot as cv", ""]
    for r in REDUCTIONS:
        for i, axis in enumerate(AXES):
            for keep in (False, True):
                name = f"{r}_{i}_{int(keep)}"
                sigs = ["f32[A,B,C]", "f64[A,B,C]"] + (["i32[A,B,C]"] if r in ("sum", "max", "min",
                                                                               "mean") else [])
                call = f"np.{r}(x, axis={axis}, keepdims={keep})" if keep else \
                    f"x.{r}(axis={axis})"
                lines += [f"@cv.optimize(signatures={sigs!r})", f"def {name}(x):",
                          f"    return {call}"]
    for r in ("argmax", "argmin"):
        for axis in ("None", "0", "1", "2"):
            lines += ["@cv.optimize(signatures=['f32[A,B,C]', 'i64[A,B,C]'])",
                      f"def {r}_{axis}(x):", f"    return np.{r}(x, axis={axis})"]
    lines += [
        "@cv.optimize(signatures=['f32[A,N]', 'f64[A,N]'])",
        "def softmax(x):",
        "    e = np.exp(x - x.max(axis=-1, keepdims=True))",
        "    return e / e.sum(axis=-1, keepdims=True)",
        "@cv.optimize(signatures=['f32[A,N], f32[N], f32[N]'])",
        "def layernorm(x, g, b):",
        "    mu = x.mean(-1, keepdims=True)",
        "    return (x - mu) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b",
        "@cv.optimize(signatures=['f32[A,N]'])",
        "def stats(x):",
        "    m = x.max(axis=1, keepdims=True)",
        "    return x - m, m, x.sum(axis=0), (x * 2).mean()",
        "@cv.optimize(signatures=['f32[A,N]'])",
        "def log_softmax(x):",
        "    s = x - x.max(axis=1, keepdims=True)",
        "    return s - np.log(np.exp(s).sum(axis=1, keepdims=True))",
        "@cv.optimize(signatures=['f32[()]', 'f64[()]', 'i8[()]', 'bool_[()]', 'f16[()]'])",
        "def zero_d(x):",
        "    return np.sum(x), np.prod(x), np.max(x), np.min(x), np.argmax(x), np.argmin(x), \\",
        "        np.mean(x), x.sum(keepdims=True), np.any(x), np.all(x)",
        "@cv.optimize(signatures=['f32[1,1]', 'f32[4,1]', 'f32[1,3]', 'f32[2,1,5]'])",
        "def static_sums(x):",
        "    return x.sum(), x.mean(axis=(0, 1)), x.sum(axis=1), x.sum(axis=0)",
        "@cv.optimize(signatures=['f32[A,B]', 'i32[A,B]'])",
        "def no_axis(x):",
        "    return np.sum(x, axis=()), np.prod(x, axis=()), np.max(x, axis=()), \\",
        "        np.min(x, axis=(), keepdims=True), np.mean(x, axis=())",
    ]
    return "\n".join(lines) + "\n"


SOURCE = _source()
dims = st.integers(1, 5)


def _input(data: st.DataObject, sig: str, shape: tuple[int, ...]) -> np.ndarray:
    dtype = {"f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64"}[sig[:3]]
    return data.draw(view_of(shape, dtype, special=data.draw(st.booleans())))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data(), a=dims, b=dims, c=dims)
def test_reductions_over_every_axis(compiled, reduction, data, a, b, c):
    for i in range(len(AXES)):
        for keep in (0, 1):
            fn = getattr(compiled, f"{reduction}_{i}_{keep}")
            for sig in fn.signatures:
                check(fn, _input(data, sig, (a, b, c)), scale=50)


@settings(max_examples=15, deadline=None)
@given(data=st.data(), a=dims, b=dims, c=dims)
def test_argmax_argmin_first_occurrence_and_nan(compiled, data, a, b, c):
    for name in ("argmax", "argmin"):
        for axis in ("None", "0", "1", "2"):
            fn = getattr(compiled, f"{name}_{axis}")
            for sig in fn.signatures:
                x = _input(data, sig, (a, b, c))
                if x.dtype.kind == "f" and data.draw(st.booleans()):
                    x = np.round(x)  # ties: the first occurrence wins
                np.testing.assert_array_equal(fn(x), fn.py_func(x))


def test_reduction_of_empty_axis_raises_like_numpy(compiled):
    x = np.zeros((2, 0, 3), np.float32)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        compiled.max_2_0(x)
    np.testing.assert_array_equal(compiled.sum_2_0(x), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="no identity"):  # NumPy raises even with no rows
        compiled.max_2_0(np.zeros((0, 0, 3), np.float32))


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=st.integers(0, 5), n=st.integers(1, 40))
def test_fused_row_kernels(compiled, data, a, n):
    x = data.draw(view_of((a, n), "float32"))
    check(compiled.softmax, x, scale=4)
    check(compiled.softmax, x.astype(np.float64), scale=4)
    g, b = data.draw(view_of((n,), "float32")), data.draw(view_of((n,), "float32"))
    check(compiled.layernorm, data.draw(view_of((a, n), "float32", special=False)), g, b, scale=50)
    check(compiled.stats, x, scale=20)
    check(compiled.log_softmax, x, scale=4)


def _same(got: object, want: object) -> None:
    """Equal values, dtype, shape, kind of object (NumPy scalar or array) and sign of zero."""
    assert type(got) is type(want), (got, want)
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (got, want)
    np.testing.assert_array_equal(g, w)
    if g.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


@settings(max_examples=20, deadline=None)
@given(value=st.sampled_from([-0.0, 0.0, 2.5, -3.0, np.nan, np.inf, 1.0]),
       dtype=st.sampled_from(["float32", "float64", "int8", "bool", "float16"]))
def test_reductions_of_a_0d_array(compiled, value, dtype):
    """Over no axis, NumPy's reductions are elementwise: 0 + x (-0.0 sums to 0.0), 1 * x,
    x for max and min, 0 for argmax; a NumPy scalar comes back, as NumPy's."""
    with np.errstate(invalid="ignore"):
        x = np.array(value).astype(dtype)
    for got, want in zip(compiled.zero_d(x), compiled.zero_d.py_func(x)):
        _same(got, want)
    scalar = x[()]  # a NumPy scalar where the signature says a 0-d array: NumPy takes it
    assert not isinstance(scalar, np.ndarray)
    for got, want in zip(compiled.zero_d(scalar), compiled.zero_d.py_func(scalar)):
        _same(got, want)


BUMP = """
import cuvil_aot as cv

@cv.optimize(signatures=['f32[()]'])
def bump(x):
    x[...] = x + 1
    return x
"""


def test_a_numpy_scalar_is_not_written_in_place(tmp_path):
    """A 0-d parameter the function writes stays an array: NumPy cannot write a scalar."""
    mod = compile_source(tmp_path, BUMP)
    with pytest.raises(TypeError):
        mod.bump.py_func(np.float32(1.0))
    with pytest.raises(SignatureError, match="argument 'x': expected a float32 array"):
        mod.bump(np.float32(1.0))
    x = np.zeros((), np.float32)
    mod.bump(x)
    assert x == 1.0


@settings(max_examples=15, deadline=None)
@given(data=st.data(), a=dims, b=dims)
def test_reductions_over_axis_empty_tuple(compiled, data, a, b):
    for sig in ("f32", "i32"):
        x = _input(data, sig, (a, b))
        for got, want in zip(compiled.no_axis(x), compiled.no_axis.py_func(x)):
            _same(got, want)


@settings(max_examples=10, deadline=None)
@given(data=st.data(), shape=st.sampled_from([(1, 1), (4, 1), (1, 3), (2, 1, 5)]))
def test_sums_over_static_axes_of_one(compiled, data, shape):
    """A float32 sum over a static axis of one element: the short-row path (rowsum.h) has
    no stride to test there (its C had named an undeclared one)."""
    check(compiled.static_sums, _input(data, "f32", shape))
