"""ROW kernels that store the summed value to the output row and rescale it in place
(softmax computes exp once), and divide by a per-row value through its reciprocal:
checked against NumPy in float64 across sum blocks, strides, out= aliasing and the
divisors where the reciprocal is not a normal number."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import assert_close, check, poisoned
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

from cuvil_aot.compiler import pipeline

SOURCE = """
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[A,N]", "f64[A,N]"])
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

@cv.optimize(signatures=["f32[A,B,N]"])
def softmax2(x):
    e = np.exp(x - x.max(axis=(1, 2), keepdims=True))
    return e / e.sum(axis=(1, 2), keepdims=True)

@cv.optimize(signatures=["f32[A,N]"])
def two_roots(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e * 2.0, e / e.sum(axis=-1, keepdims=True), e.sum(axis=-1)

@cv.optimize(signatures=["f32[A,N]"])
def widened(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float64)

@cv.optimize(signatures=["f32[A,N]", "f64[A,N]"])
def normalize(x):
    return x / x.sum(axis=-1, keepdims=True)

@cv.optimize(signatures=["f32[A,N], f32[N], f32[N]"])
def layernorm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b
"""
# Lengths around the float sum's 4096-element blocks, and small ones.
lengths = st.sampled_from([1, 2, 7, 33, 4095, 4096, 4097, 8200])


def rows_of(data: st.DataObject, shape: tuple[int, int], special: bool = True) -> np.ndarray:
    """Rows too long for hypothesis to draw element by element: NumPy random values from a
    drawn seed and scale, a few special values, and a drawn layout (view_of's kinds)."""
    if shape[1] < 64:
        return data.draw(view_of(shape, "float32", special=special))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    scale = data.draw(st.sampled_from([0.1, 3.0, 30.0]))
    kind = data.draw(st.sampled_from(["contiguous", "transposed", "strided", "reversed"]))
    base = (rng.standard_normal((shape[0], shape[1] * 2)) * scale).astype(np.float32)
    if special and base.size and data.draw(st.booleans()):
        flat = base.reshape(-1)
        flat[rng.integers(0, flat.size, 3)] = rng.choice([np.nan, np.inf, -np.inf, -0.0], 3)
    if kind == "strided":
        return base[:, ::2]
    x = base[:, :shape[1]]
    if kind == "transposed":
        return np.ascontiguousarray(x.T).T
    return x[:, ::-1] if kind == "reversed" else np.ascontiguousarray(x)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=st.integers(0, 3), n=lengths)
def test_softmax_across_sum_blocks(compiled, data, a, n):
    x = rows_of(data, (a, n))
    check(compiled.softmax, x, scale=4)
    check(compiled.softmax, x.astype(np.float64), scale=4)
    # float64 out of float32 math (not stored early: the dtypes differ), float32's tolerance
    assert_close(compiled.widened(x), compiled.widened.py_func(x.astype(np.float64)),
                 np.float32, 4, compiled.widened.py_func(x))


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=st.integers(0, 3), b=st.integers(1, 4), n=st.integers(1, 40))
def test_softmax_over_two_axes_and_several_roots(compiled, data, a, b, n):
    check(compiled.softmax2, data.draw(view_of((a, b, n), "float32")), scale=4)
    check(compiled.two_roots, data.draw(view_of((a, n), "float32")), scale=4)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=st.integers(1, 3), n=lengths)
def test_layernorm_across_sum_blocks(compiled, data, a, n):
    x = rows_of(data, (a, n), special=False)
    g, b = rows_of(data, (2, n), special=False)
    check(compiled.layernorm, x, g, b, scale=50)


# Row sums where 1 / sum is not a normal number (subnormal or infinite), near the edges
# of that range, and ordinary ones: the reciprocal is taken only where it is exact enough.
SCALES = {"float32": [1.0, 1e-44, 1e-41, 1e-39, 2e-38, 1e30, 2e37, 5e37],
          "float64": [1.0, 1e-320, 1e-310, 1e-305, 1e300, 1e306, 3e307]}


@settings(max_examples=60, deadline=None)
@given(data=st.data(), a=st.integers(1, 3), n=st.integers(1, 9),
       dtype=st.sampled_from(["float32", "float64"]))
def test_division_by_row_sum_at_extremes(compiled, data, a, n, dtype):
    scale = data.draw(st.sampled_from(SCALES[dtype]))
    x = np.abs(data.draw(view_of((a, n), "float64", special=False))) + 0.5
    x = (x * scale).astype(dtype)
    if not np.isfinite(x.sum(axis=-1)).all():
        return  # the sum overflows: a different question
    check(compiled.normalize, x, scale=4)


def test_division_by_zero_inf_and_nan_sums(compiled):
    x = np.array([[0.0, 0.0], [-0.0, -0.0], [1.0, np.inf], [np.nan, 1.0], [2.0, -2.0],
                  [3.0, -1.0]], np.float32)
    with np.errstate(all="ignore"):
        want = x / x.sum(axis=-1, keepdims=True)
    np.testing.assert_array_equal(compiled.normalize(x), want)


def test_softmax_into_aliasing_and_strided_out(compiled):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((5, 4500)) * 3).astype(np.float32)
    want = compiled.softmax.py_func(x.astype(np.float64))
    big = poisoned((5, 9000), np.float32)
    compiled.softmax(x, out=big[:, ::2])
    assert_close(big[:, ::2], want)
    assert np.isnan(big[:, 1::2]).all()
    inplace = x.copy()
    compiled.softmax(inplace, out=inplace)
    assert_close(inplace, want)


def test_softmax_computes_exp_in_one_pass(tmp_path):
    from conftest import load_source

    module = load_source(tmp_path, SOURCE)
    kernels = pipeline.generate_sources(module, pipeline.Options(cpu_levels=(1,)))[3]["kernels.c"]
    body = re.search(r"static void f0_s0_k0\(.*?\n}\n", kernels, re.S)
    assert body is not None
    code = body.group(0)
    # one pass: its unit-stride copy (blocks that prefetch the next row, then the rest)
    # and its strided copy
    assert code.count("cv_expf(") == 3 and "cv_prefetch_at(p0, (i0 + 1)" in code
    assert "rcp0" in code and "/ sum1" in code  # multiply where fast, divide elsewhere


@pytest.fixture(autouse=True)
def _quiet():
    with np.errstate(all="ignore"):
        yield
