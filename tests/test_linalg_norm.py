"""np.linalg.norm against NumPy in float64: vector norms of every order along an axis,
the Frobenius fast path, matrix norms over axis pairs, keepdims, integer and boolean
inputs (computed in float64), empty axes; refused orders at the user's line."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import check
from gpu_harness import dim_size, parse_signature
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

import cuvil_aot as cv

VECTOR_ORDS = ["None", "2", "1", "np.inf", "-np.inf", "0", "3", "0.5", "-1", "-2.5", "2.0"]
MATRIX_ORDS = ["None", "'fro'", "'f'", "1", "-1", "np.inf", "-np.inf"]
# (name, signatures, call): each also compiled with keepdims=True where it takes it.
CALLS: list[tuple[str, list[str], str]] = [
    *[(f"vector_{i}_axis0", ["f32[A,B]", "f64[A,B]", "i32[A,B]"],
       f"np.linalg.norm(x, {o}, axis=0)") for i, o in enumerate(VECTOR_ORDS)],
    *[(f"vector_{i}_last", ["f32[A,B,C]", "f16[A,B,C]"],
       f"np.linalg.norm(x, ord={o}, axis=-1, keepdims=True)") for i, o in enumerate(VECTOR_ORDS)],
    *[(f"vector_{i}_1d", ["f32[N]", "f64[N]", "bool_[N]"], f"np.linalg.norm(x, {o})")
      for i, o in enumerate(VECTOR_ORDS)],
    *[(f"matrix_{i}_2d", ["f32[A,B]", "f64[A,B]", "i64[A,B]"], f"np.linalg.norm(x, {o})")
      for i, o in enumerate(MATRIX_ORDS)],
    *[(f"matrix_{i}_12", ["f32[A,B,C]"],
       f"np.linalg.norm(x, {o}, axis=(1, 2), keepdims=True)") for i, o in enumerate(MATRIX_ORDS)],
    *[(f"matrix_{i}_20", ["f64[A,B,C]"], f"np.linalg.norm(x, {o}, (2, 0))")
      for i, o in enumerate(MATRIX_ORDS)],
    *[(f"matrix_{i}_neg", ["f32[A,B,C]"], f"np.linalg.norm(x, {o}, axis=(-1, -3))")
      for i, o in enumerate(MATRIX_ORDS)],
    ("frobenius_3d", ["f32[A,B,C]", "f64[A,B,C]", "i32[A,B,C]"], "np.linalg.norm(x)"),
    ("frobenius_3d_keepdims", ["f32[A,B,C]"], "np.linalg.norm(x, keepdims=True)"),
    ("frobenius_2d_keepdims", ["f32[A,B]"], "np.linalg.norm(x, 'fro', keepdims=True)"),
    ("two_1d_keepdims", ["f32[N]"], "np.linalg.norm(x, 2, None, True)"),
    ("tuple_of_one_axis", ["f32[A,B]"], "np.linalg.norm(x, 1, axis=(1,))"),
    ("numpy_scalar_ord", ["f32[A,B]"], "np.linalg.norm(x, np.float64(3), axis=1)"),
    ("fused_normalize", ["f32[A,B]"], "x / np.linalg.norm(x, axis=-1, keepdims=True)"),
    ("static_axis_inf", ["f32[A,3]"], "np.linalg.norm(x, np.inf, axis=1)"),
    ("static_matrix_one", ["f32[3,B]"], "np.linalg.norm(x, 1)"),
]
REFUSED = {  # name: (signature, call, message)
    "two": ("f32[A,B]", "np.linalg.norm(x, 2)", "needs its singular values"),
    "minus_two": ("f32[A,B,C]", "np.linalg.norm(x, -2, axis=(0, 1))", "singular values"),
    "nuclear": ("f32[A,B]", "np.linalg.norm(x, 'nuc')", "singular values"),
    "matrix_order": ("f32[A,B]", "np.linalg.norm(x, 3)", "Invalid norm order for matrices"),
    "vector_string": ("f32[A,B]", "np.linalg.norm(x, 'fro', axis=0)",
                      "Invalid norm order 'fro' for vectors"),
    "three_axes": ("f32[A,B,C]", "np.linalg.norm(x, axis=(0, 1, 2))", "Improper number"),
    "order_of_3d": ("f32[A,B,C]", "np.linalg.norm(x, 1)", "Improper number of dimensions"),
    "duplicate_axes": ("f32[A,B]", "np.linalg.norm(x, axis=(1, -1))", "Duplicate axes"),
    "axis_out_of_range": ("f32[A,B]", "np.linalg.norm(x, axis=2)", "out of bounds"),
    "axis_list": ("f32[A,B]", "np.linalg.norm(x, axis=[0])", "'axis' must be None"),
    "run_time_order": ("f32[A], float", "np.linalg.norm(x, p)", "known at compile time"),
}


def _source() -> str:
    lines = ["import numpy as np", "import cuvil_aot as cv", ""]
    for name, sigs, call in CALLS:
        lines += [f"@cv.optimize(signatures={sigs!r})", f"def {name}(x):", f"    return {call}"]
    for name, (sig, call, _) in REFUSED.items():
        params = "x, p" if "float" in sig else "x"
        lines += [f"@cv.optimize(signatures=[{sig!r}])", f"def refused_{name}({params}):",
                  f"    return {call}"]
    return "\n".join(lines) + "\n"


SOURCE = _source()
dims = st.integers(0, 5)


def argument(data: st.DataObject, sig: str, sizes: dict[str, int]) -> np.ndarray:
    (dtype, dims), = parse_signature(sig)
    return data.draw(view_of(tuple(dim_size(d, sizes) for d in dims), dtype))


@pytest.mark.parametrize("name", [name for name, _, _ in CALLS])
@settings(max_examples=15, deadline=None)
@given(data=st.data(), a=dims, b=dims, c=dims, n=dims)
def test_norm_matches_numpy(compiled, name, data, a, b, c, n):
    fn = getattr(compiled, name)
    sizes = {"A": a, "B": b, "C": c, "N": n}
    for sig in fn.signatures:
        check(fn, argument(data, sig, sizes), scale=10 * (1 + max(a, b, c, n)))


def test_integers_are_normed_in_float64(compiled):
    x = np.array([[3, 4], [-6, 8]], np.int32)
    got = compiled.vector_1_axis0(x)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, np.linalg.norm(x, 2, axis=0))
    assert isinstance(compiled.frobenius_3d(x[None]), np.float64)


def test_max_norms_of_empty_axes_are_zero(compiled):
    """NumPy's max norms start from 0 (initial=0): no error over no elements."""
    inf = VECTOR_ORDS.index("np.inf")
    empty = np.zeros((0, 4), np.float32)
    np.testing.assert_array_equal(getattr(compiled, f"vector_{inf}_axis0")(empty), np.zeros(4))
    for i, o in enumerate(MATRIX_ORDS):
        if o in ("1", "np.inf"):
            fn = getattr(compiled, f"matrix_{i}_2d")
            for x in (empty, empty.T):
                np.testing.assert_array_equal(fn(x), fn.py_func(x))


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_forms_point_at_the_call(compiled, name):
    sig, call, message = REFUSED[name]
    (_, dims), *scalars = parse_signature(sig)
    args = [np.ones((2, 3, 4)[:len(dims)], np.float32), *(1.0 for _ in scalars)]
    with pytest.raises(cv.CompileError) as info:
        getattr(compiled, f"refused_{name}")(*args)
    first, source_line, caret = str(info.value).strip("\n").splitlines()[:3]
    lines = SOURCE.splitlines()
    line = 2 + next(i for i, text in enumerate(lines) if text.startswith(f"def refused_{name}("))
    assert lines[line - 1] == f"    return {call}"
    assert re.search(rf"\.py:{line}:12: error: .*{re.escape(message)}", first), first
    assert source_line.strip() == f"return {call}"
    assert caret.index("^") == source_line.index("np.linalg.norm")
