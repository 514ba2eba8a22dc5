"""A batched GEMM that shares B, folded into one GEMM of B·T rows on the CPU where the
call's strides let the batches step as rows (codegen/batch_fold.py, checked at the call):
x (B, T, K) @ w.T with a bias and a residual, on contiguous arrays (folded) and on views
where some operand's batches do not lie T rows apart (not folded), against NumPy in
float64 with poisoned outputs; a decode step's T = 1 too. A per-batch epilogue operand
(c[:, None, :]) never folds, and the generated C says which kernels carry the check."""

from __future__ import annotations

import numpy as np
from conftest import check, poisoned, to64
from hypothesis import given, settings
from hypothesis import strategies as st

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def linear(x: cv.f32["B", "T", "K"], w: cv.f32["N", "K"], b: cv.f32["N"],
           r: cv.f32["B", "T", "N"]):
    return x @ w.T + b + r

@cv.optimize
def per_batch(x: cv.f32["B", "T", "K"], w: cv.f32["N", "K"], c: cv.f32["B", "N"]):
    return x @ w.T + c[:, None, :]

@cv.optimize
def int8(x: cv.f32["B", "T", "K"], q: cv.i8["N", "K"], s: cv.f32["N"], r: cv.f32["B", "T", "N"]):
    return x @ (q.astype(np.float32) * s[:, None]).T + r

@cv.optimize
def mlp(x: cv.f32["B", "T", "K"], w1: cv.f32["F", "K"], w2: cv.f32["K", "F"]):
    h = x @ w1.T
    return (h / (1 + np.exp(-h))) @ w2.T
'''


def _array(rng: np.random.Generator, shape: tuple[int, ...], view: str) -> np.ndarray:
    """A random float32 array of ``shape``: contiguous, or a view whose batches do not lie
    T rows apart (every other row of a taller array, or batches padded apart)."""
    if view == "rows":
        big = rng.standard_normal((shape[0], 2 * shape[1], shape[2])).astype(np.float32)
        return big[:, ::2]
    if view == "padded":
        big = rng.standard_normal((shape[0], shape[1] + 1, shape[2])).astype(np.float32)
        return big[:, :shape[1]]
    return rng.standard_normal(shape).astype(np.float32)


views = st.sampled_from(["contiguous", "contiguous", "rows", "padded"])


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), b=st.integers(1, 5), t=st.integers(1, 40),
       k=st.integers(1, 300), n=st.integers(1, 200), xv=views, rv=views)
def test_linear_with_a_residual(compiled, seed, b, t, k, n, xv, rv):
    rng = np.random.default_rng(seed)
    x, r = _array(rng, (b, t, k), xv), _array(rng, (b, t, n), rv)
    w = rng.standard_normal((n, k)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    check(compiled.linear, x, w, bias, r, scale=10 * (k + 1))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), b=st.integers(1, 5), t=st.integers(1, 20),
       k=st.integers(1, 300), n=st.integers(1, 200), xv=views, rv=views)
def test_int8_weights(compiled, seed, b, t, k, n, xv, rv):
    """The int8-weight GEMM (api->gemm_q8) folds the same way (emit_c_q8)."""
    rng = np.random.default_rng(seed)
    x, r = _array(rng, (b, t, k), xv), _array(rng, (b, t, n), rv)
    q = rng.integers(-127, 128, (n, k)).astype(np.int8)
    s = (rng.random(n) * 0.02).astype(np.float32)
    check(compiled.int8, x, q, s, r, scale=10 * (k + 1))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), b=st.integers(1, 5), t=st.integers(1, 9),
       k=st.integers(1, 200), n=st.integers(1, 200))
def test_an_output_view_whose_batches_lie_apart(compiled, seed, b, t, k, n):
    """out= of (B, T + 1, N) cut to T rows: the output's batches are not T rows apart, so
    the GEMM stays batched; the padding row keeps its poison."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, t, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    bias, r = rng.standard_normal(n).astype(np.float32), _array(rng, (b, t, n), "contiguous")
    big = poisoned((b, t + 1, n), np.float32)
    compiled.linear(x, w, bias, r, out=big[:, :t])
    want = compiled.linear.py_func(*to64([x, w, bias, r]))
    np.testing.assert_allclose(big[:, :t], want, rtol=1e-4, atol=1e-4 * np.abs(want).max(
        initial=1.0))
    assert np.isnan(big[:, t]).all()


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), b=st.integers(1, 5), t=st.integers(1, 9),
       k=st.integers(1, 200), n=st.integers(1, 200))
def test_a_per_batch_operand_and_a_two_gemm_chain(compiled, seed, b, t, k, n):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, t, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    check(compiled.per_batch, x, w, rng.standard_normal((b, n)).astype(np.float32),
          scale=10 * (k + 1))
    check(compiled.mlp, x, w, rng.standard_normal((k, n)).astype(np.float32) / n ** 0.5,
          scale=10 * (k + 1) * (n + 1))


def test_the_check_is_where_it_may_fold(compiled):
    """linear's, int8's and mlp's GEMMs carry the fold's check at the call; per_batch's (its c
    moves with the batch but not the rows) does not."""
    from cuvil_aot.compiler.codegen import batch_fold
    source = compiled.__artifact__.path.parent
    texts = "".join(p.read_text() for p in source.rglob("*.c"))
    assert texts.count("g.m *= g.nbatch; g.nbatch = 1;") == 4, batch_fold.__doc__
