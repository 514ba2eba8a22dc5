"""Every elementwise op against NumPy: dtypes, broadcasting, views, NaN and Inf."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import check
from hypothesis import given, settings
from hypothesis import strategies as st

UNARY = {
    "exp": "np.exp(x)", "expm1": "np.expm1(x)", "log": "np.log(x)", "log1p": "np.log1p(x)",
    "sqrt": "np.sqrt(x)", "square": "np.square(x)", "tanh": "np.tanh(x)", "sin": "np.sin(x)",
    "cos": "np.cos(x)", "abs": "np.abs(x)", "babs": "abs(x)", "sign": "np.sign(x)",
    "floor": "np.floor(x)", "ceil": "np.ceil(x)", "neg": "-x", "pos": "+x",
    "pow2": "x ** 2", "pow3": "x ** 3", "powhalf": "np.abs(x) ** 0.5",
    # the C library's functions (their domains' edges: NaN, infinities and overflow come in
    # the drawn values: |x| up to 20 and the specials)
    "tan": "np.tan(x)", "arcsin": "np.arcsin(x / 16)", "arccos": "np.arccos(x / 16)",
    "arctan": "np.arctan(x)", "sinh": "np.sinh(x)", "cosh": "np.cosh(x)",
    "arcsinh": "np.arcsinh(x)", "arccosh": "np.arccosh(x)", "arctanh": "np.arctanh(x / 16)",
    "exp2": "np.exp2(x)", "log2": "np.log2(x)", "log10": "np.log10(x)", "cbrt": "np.cbrt(x)",
}
BINARY = {
    "add": "x + y", "sub": "x - y", "mul": "x * y", "div": "x / y", "maximum": "np.maximum(x, y)",
    "minimum": "np.minimum(x, y)", "lt": "x < y", "le": "x <= y", "gt": "x > y", "ge": "x >= y",
    "eq": "x == y", "ne": "x != y", "np_add": "np.add(x, y)", "np_pow": "np.power(np.abs(x), y)",
    "arctan2": "np.arctan2(x, y)", "hypot": "np.hypot(x, y)",
    "copysign": "np.copysign(x, y)",
}
EXACT_BINARY = {"floordiv": "x // y", "mod": "x % y"}
FLOAT_SIGS = ["f32[A,B]", "f64[A,B]", "f16[A,B]"]


def _source() -> str:
    lines = ["import numpy as np", "import cuvil_aot as cv", ""]
    for name, expr in UNARY.items():
        sigs = FLOAT_SIGS + (["i64[A,B]", "i32[A,B]"] if name in ("abs", "babs", "sign", "neg",
                                                                    "square", "pos", "cbrt",
                                                                    "arctan", "log10") else [])
        lines += [f"@cv.optimize(signatures={sigs!r})", f"def u_{name}(x):", f"    return {expr}"]
    pairs = ["f32[A,B], f32[A,B]", "f64[A,1], f64[B]", "f32[A,B], f64[B]", "f16[A,B], f32[A,B]",
             "i64[A,B], i64[B]", "i32[A,B], f32[A,B]"]
    for name, expr in {**BINARY, **EXACT_BINARY}.items():
        sigs = pairs if name != "np_pow" else pairs[:4]
        lines += [f"@cv.optimize(signatures={sigs!r})", f"def b_{name}(x, y):",
                  f"    return {expr}"]
    lines += [
        "@cv.optimize(signatures=['f32[A,B], f32[A,B], f32[A,B]', 'i64[A], f64[A], f64[A]'])",
        "def where(c, x, y):", "    return np.where(c > 0, x, y)",
        "@cv.optimize(signatures=['f32[A,B]', 'f64[A,B]'])",
        "def clip(x):", "    return np.clip(x, -0.5, 0.75)",
        "@cv.optimize(signatures=['f32[A,B], float', 'f16[A,B], float', 'i32[A,B], int'])",
        "def scalar_param(x, s):", "    return x * s + 1",
        "@cv.optimize(signatures=['f32[A,B]', 'i64[A,B]', 'f64[A,B]'])",
        "def casts(x):",
        "    return x.astype(np.float16), x.astype(np.int32), x.astype(np.float64), "
        "x.astype(bool)",
        "@cv.optimize(signatures=['bool_[A,B], bool_[A,B]'])",
        "def logic(p, q):", "    return (p & q) | ~p, p ^ q, np.logical_and(p, ~q)",
        "@cv.optimize(signatures=['f32[A,B]'])",
        "def nep50(x):", "    return x * 2.5 + 1, x * np.float64(2.5), x > 1e300",
    ]
    return "\n".join(lines) + "\n"


SOURCE = _source()

dims = st.integers(0, 6)


def _array(draw: st.DrawFn, shape: tuple[int, ...], dtype: str, special: bool) -> np.ndarray:
    if np.dtype(dtype).kind == "i":
        values = draw(st.lists(st.integers(-50, 50), min_size=int(np.prod(shape)),
                               max_size=int(np.prod(shape))))
        return np.array(values, dtype=dtype).reshape(shape)
    if np.dtype(dtype).kind == "b":
        return np.array(draw(st.lists(st.booleans(), min_size=int(np.prod(shape)),
                                      max_size=int(np.prod(shape)))), bool).reshape(shape)
    floats = st.floats(-20, 20, width=16) if not special else st.one_of(
        st.floats(-20, 20, width=16), st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0]))
    values = draw(st.lists(floats, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    return np.array(values, dtype=dtype).reshape(shape)


@st.composite
def view_of(draw: st.DrawFn, shape: tuple[int, ...], dtype: str,
            special: bool = True) -> np.ndarray:
    """A fresh array, or a transposed / strided / reversed view with the same shape."""
    kind = draw(st.sampled_from(["contiguous", "transposed", "strided", "reversed"]))
    if kind == "transposed" and len(shape) == 2:
        return _array(draw, shape[::-1], dtype, special).T
    if kind == "strided" and shape:
        big = _array(draw, (*shape[:-1], shape[-1] * 2), dtype, special)
        return big[..., ::2]
    if kind == "reversed" and shape:
        return _array(draw, shape, dtype, special)[..., ::-1]
    return _array(draw, shape, dtype, special)


def _sig_shapes(sig: str, a: int, b: int) -> list[tuple[str, tuple[int, ...]]]:
    out = []
    for part in sig.split("], "):
        dtype_short, spec = part.rstrip("]").split("[")
        dtype = {"f32": "float32", "f64": "float64", "f16": "float16", "i64": "int64",
                 "i32": "int32", "bool_": "bool"}[dtype_short]
        shape = tuple({"A": a, "B": b, "1": 1}[d.strip()] for d in spec.split(","))
        out.append((dtype, shape))
    return out


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=dims, b=dims)
def test_unary(compiled, name, data, a, b):
    fn = getattr(compiled, f"u_{name}")
    for sig in fn.signatures:
        (dtype, shape), = _sig_shapes(sig, a, b)
        x = data.draw(view_of(shape, dtype))
        if name in ("log", "log1p", "sqrt", "log2", "log10", "arccosh") and x.dtype.kind == "f":
            x = np.abs(x) if data.draw(st.booleans()) else x
        with np.errstate(all="ignore"):
            check(fn, x, scale=4 if dtype == "float32" else 1)


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=dims, b=dims)
def test_binary(compiled, name, data, a, b):
    fn = getattr(compiled, f"b_{name}")
    for sig in fn.signatures:
        (dx, sx), (dy, sy) = _sig_shapes(sig, a, b)
        x, y = data.draw(view_of(sx, dx)), data.draw(view_of(sy, dy))
        with np.errstate(all="ignore"):
            check(fn, x, y, scale=4)


@pytest.mark.parametrize("name", sorted(EXACT_BINARY))
@settings(max_examples=40, deadline=None)
@given(data=st.data(), a=dims, b=dims)
def test_floor_division_and_remainder_signs(compiled, name, data, a, b):
    """// and % follow Python's sign rules: compared in the same dtype, exactly."""
    fn = getattr(compiled, f"b_{name}")
    for sig in fn.signatures:
        (dx, sx), (dy, sy) = _sig_shapes(sig, a, b)
        x, y = data.draw(view_of(sx, dx)), data.draw(view_of(sy, dy))
        with np.errstate(all="ignore"):
            expect = fn.py_func(x, y)
        got = fn(x, y)
        assert got.dtype == expect.dtype
        np.testing.assert_array_equal(got, expect)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=dims, b=dims)
def test_where_clip_casts_logic(compiled, data, a, b):
    c, x, y = (data.draw(view_of((a, b), "float32")) for _ in range(3))
    check(compiled.where, c, x, y)
    ci = data.draw(view_of((a,), "int64"))
    check(compiled.where, ci, data.draw(view_of((a,), "float64")),
          data.draw(view_of((a,), "float64")))
    check(compiled.clip, x)
    with np.errstate(all="ignore"):
        check(compiled.casts, data.draw(view_of((a, b), "float32", special=False)))
    check(compiled.casts, data.draw(view_of((a, b), "int64")))
    p, q = data.draw(view_of((a, b), "bool")), data.draw(view_of((a, b), "bool"))
    check(compiled.logic, p, q)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=dims, b=dims, s=st.floats(-4, 4))
def test_python_scalars_follow_nep50(compiled, data, a, b, s):
    x = data.draw(view_of((a, b), "float32"))
    check(compiled.scalar_param, x, s)
    check(compiled.scalar_param, data.draw(view_of((a, b), "float16")), s)
    check(compiled.scalar_param, data.draw(view_of((a, b), "int32")), int(s))
    with np.errstate(over="ignore"):  # 1e300 does not fit float32: NumPy warns, then compares
        check(compiled.nep50, x)
    assert compiled.scalar_param(x, s).dtype == np.float32
