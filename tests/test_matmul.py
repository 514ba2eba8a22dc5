"""Matmul, dot and their fused epilogues against NumPy in float64."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import check
from hypothesis import given, settings
from hypothesis import strategies as st
from test_elementwise import view_of

SOURCE = '''
import numpy as np
import pytest
import cuvil_aot as cv

def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))

@cv.optimize(signatures=["f32[M,K], f32[K,N]", "f64[M,K], f64[K,N]", "f16[M,K], f16[K,N]"])
def mm(a, b):
    return a @ b

@cv.optimize(signatures=["f32[M,K], f32[K,N], f32[N]", "f64[M,K], f64[K,N], f64[N]"])
def mm_bias_relu(a, b, c):
    return np.maximum(0, a @ b + c)

@cv.optimize(signatures=["f32[M,K], f32[K,N], f32[N], f32[M,N]"])
def mm_epilogue(a, b, c, r):
    return r + gelu(np.matmul(a, b) + c) * 0.5

@cv.optimize(signatures=["f32[M,K], f32[M,J], f32[K,N], f32[J,N], f32[N]"])
def two_terms(x, h, wx, wh, bias):  # tanh alone would hide errors by saturating
    return (x @ wx + h @ wh + bias) * 0.5, np.tanh((x @ wx + h @ wh) * 0.01)

@cv.optimize(signatures=["f32[M,K], f32[N,K]"])
def transposed(a, b):
    return a @ b.T

@cv.optimize(signatures=["f32[Z,M,K], f32[Z,K,N]", "f32[Z,M,K], f32[K,N]"])
def batched(a, b):
    return a @ b + 1

@cv.optimize(signatures=["f32[K], f32[K,N]", "f32[M,K], f32[K]", "f64[K], f64[K]"])
def vectors(a, b):
    return np.dot(a, b)

@cv.optimize(signatures=["f32[M,K], f32[K,N]"])
def reused(a, b):
    y = a @ b
    return y, np.exp(y - y.max(axis=1, keepdims=True)), (y * 2).T
'''

dims = st.integers(0, 9)


def operand(shape: tuple[int, ...]) -> st.SearchStrategy:
    """Finite matmul operands: with NaN or Inf, OpenBLAS (under NumPy) skips the products
    of a zero multiplier and so may return 0 where IEEE arithmetic, and cuvil_aot, give
    NaN. Special values are still tested in the epilogue operands (bias, residual)."""
    return view_of(shape, "float32", special=False)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), m=dims, k=dims, n=dims)
def test_matmul_and_epilogues(compiled, data, m, k, n):
    a, b = data.draw(operand((m, k))), data.draw(operand((k, n)))
    c = data.draw(view_of((n,), "float32"))
    check(compiled.mm, a, b, scale=10 * (k + 1))
    check(compiled.mm, a.astype(np.float64), b.astype(np.float64), scale=10 * (k + 1))
    a16, b16 = (data.draw(view_of(s, "float16", special=False)) for s in ((m, k), (k, n)))
    check(compiled.mm, a16 * 0.1, b16 * 0.1, scale=10 * (k + 1))
    check(compiled.mm_bias_relu, a, b, c, scale=10 * (k + 1))
    finite = [data.draw(view_of(s, "float32", special=False)) for s in ((m, k), (k, n), (n,),
                                                                        (m, n))]
    check(compiled.mm_epilogue, *finite, scale=10 * (k + 1))
    check(compiled.transposed, a, np.ascontiguousarray(b.T), scale=10 * (k + 1))
    check(compiled.reused, a, b, scale=10 * (k + 1))


@settings(max_examples=30, deadline=None)
@given(data=st.data(), m=dims, k=dims, j=dims, n=dims)
def test_sum_of_two_products_is_one_gemm(compiled, data, m, k, j, n):
    x, h = data.draw(operand((m, k))), data.draw(operand((m, j)))
    wx, wh = data.draw(operand((k, n))), data.draw(operand((j, n)))
    check(compiled.two_terms, x, h, wx, wh, data.draw(view_of((n,), "float32")),
          scale=10 * (k + j + 1))


@settings(max_examples=30, deadline=None)
@given(data=st.data(), z=st.integers(0, 3), m=dims, k=dims, n=dims)
def test_batched_and_vector_operands(compiled, data, z, m, k, n):
    a = data.draw(operand((z, m, k)))
    check(compiled.batched, a, data.draw(operand((z, k, n))), scale=10 * (k + 1))
    check(compiled.batched, a, data.draw(operand((k, n))), scale=10 * (k + 1))
    v = data.draw(operand((k,)))
    check(compiled.vectors, v, data.draw(operand((k, n))), scale=10 * (k + 1))
    check(compiled.vectors, data.draw(operand((m, k))), v, scale=10 * (k + 1))
    check(compiled.vectors, v.astype(np.float64), v.astype(np.float64), scale=10 * (k + 1))


def test_large_gemm_against_float64(compiled):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((300, 517), np.float32)
    b = rng.standard_normal((517, 260), np.float32)
    c = rng.standard_normal(260, np.float32)
    check(compiled.mm_bias_relu, a, b, c, scale=200)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_gemm_of_a_transposed_weight(compiled, dtype):
    """``x @ w.T`` of a Linear weight large enough to be packed (B with unit row stride:
    gemm_pack.h's shuffles), odd sizes so every panel edge shows."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((301, 519)).astype(dtype)
    w = rng.standard_normal((263, 519)).astype(dtype)
    check(compiled.mm, x, w.T, scale=200)
    if dtype == np.float32:
        check(compiled.transposed, x, w, scale=200)


@pytest.mark.parametrize("m", [17, 25, 26, 27, 28, 29, 100, 256, 259])
def test_packed_gemm_last_panel_rows(compiled, m):
    """Past the small-m path, a last row panel of few real rows runs a short kernel
    (gemm_kern_body.h packed_short): every remainder of m by the panel height."""
    rng = np.random.default_rng(m)
    a, b = rng.standard_normal((m, 70)), rng.standard_normal((70, 1000))
    c = rng.standard_normal(1000)
    check(compiled.mm_bias_relu, a.astype(np.float32), b.astype(np.float32),
          c.astype(np.float32), scale=100)
    check(compiled.mm_bias_relu, a, b, c, scale=100)
    x, h = rng.standard_normal((m, 600), np.float32), rng.standard_normal((m, 3), np.float32)
    wx, wh = rng.standard_normal((600, 40), np.float32), rng.standard_normal((3, 40), np.float32)
    check(compiled.two_terms, x, h, wx, wh, c[:40].astype(np.float32), scale=400)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(16, 3100), n0=st.integers(1, 9000),
       step=st.sampled_from([1, 1, 2]), dtype=st.sampled_from([np.float32, np.float64]))
def test_one_row_against_a_large_b_splits_k(compiled, seed, k, n0, step, dtype):
    """One row of A against a B of 1 MB or more (gemm_ksplit.h: the threads split k, the
    last part adds the sums in order): odd k and n, B a row slice (a row stride past n),
    n past the split's 8192 columns too, with and without the bias epilogue."""
    rng = np.random.default_rng(seed)
    n = max(n0, -(-(1 << 20) // (k * np.dtype(dtype).itemsize)))
    a = rng.standard_normal((1, k)).astype(dtype)
    b = rng.standard_normal((k * step, n)).astype(dtype)[::step]
    c = rng.standard_normal(n).astype(dtype)
    check(compiled.mm, a, b, scale=10 * (k + 1))
    check(compiled.mm_bias_relu, a, b, c, scale=10 * (k + 1))


@settings(max_examples=16, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), z=st.integers(1, 3), m=st.integers(12, 400),
       k=st.integers(1, 700), n=st.integers(1, 1300), layout=st.sampled_from("bwz"),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_rows_against_one_b_stream_its_column_units(compiled, seed, z, m, k, n, layout, dtype):
    """Up to 1024 rows over all batches against one B: gemm_impl.h's streamed path (A packed
    once, B a column unit at a time into each thread's slot, the units as many as the
    threads share evenly, else the stepwise path): odd sizes so every unit and panel edge
    shows; B row-major (b), as W.T (w), or batched A against a shared B (z)."""
    rng = np.random.default_rng(seed)
    dtype = dtype if layout == "b" else np.float32  # transposed, batched: float32 only
    a = rng.standard_normal((z * m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    c = rng.standard_normal(n).astype(dtype)
    if layout == "b":
        check(compiled.mm_bias_relu, a, b, c, scale=10 * (k + 1))
    elif layout == "w":
        check(compiled.transposed, a, np.ascontiguousarray(b.T), scale=10 * (k + 1))
    else:
        check(compiled.batched, a.reshape(z, m, k), b, scale=10 * (k + 1))
