"""The dot GEMV (cv_gemv_dot) on a real device: a few rows (m <= 32) times a large transposed
B (x @ w.T on (out, in) weights), alone, batched (batches of one weight as rows of one GEMV
where they step as rows), with two terms, in float64, the float4 GEMV of 8-row tiles of an
(in, out) weight (x @ w), as a phase of
a one-kernel (a small call's kernels as one) and before an elementwise consumer that reads
its columns in slices (an LSTM's gates, which the one-kernel may run in a GEMV's tiles).
Random sizes, odd n included, against NumPy in float64; outputs poisoned before the call.

Run on a machine with an NVIDIA GPU (tools/gpu_check.sh); skipped elsewhere."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_close, compile_source
from gpu_harness import device_arch
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.gpu

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def linear(x: cv.f32["M", "K"], w: cv.f32["N", "K"], b: cv.f32["N"]):
    return x @ w.T + b

@cv.optimize
def batched(a: cv.f32["Z", "M", "K"], b: cv.f32["Z", "N", "K"]):
    return a @ np.swapaxes(b, 1, 2) * 0.5

@cv.optimize
def shared(x: cv.f32["Z", "M", "K"], w: cv.f32["N", "K"], r: cv.f32["Z", "M", "N"]):
    return x @ w.T + r

@cv.optimize
def shared_kn(x: cv.f32["Z", "M", "K"], w: cv.f32["K", "N"], b: cv.f32["N"]):
    return np.maximum(x @ w + b, 0.0)

@cv.optimize
def kn(x: cv.f32["M", "K"], w: cv.f32["K", "N"], b: cv.f32["N"]):
    return x @ w + b

@cv.optimize
def shared_norm(x: cv.f32["Z", "M", "K"], w: cv.f32["N", "K"]):
    h = x @ w.T
    mu = h.mean(axis=-1, keepdims=True)
    return (h - mu) / np.sqrt(((h - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5)

@cv.optimize
def two_terms(x: cv.f32["M", "K"], h: cv.f32["M", "J"], wx: cv.f32["N", "K"],
              wh: cv.f32["N", "J"]):
    return np.tanh(x @ wx.T + h @ wh.T)

@cv.optimize
def linear64(x: cv.f64["M", "K"], w: cv.f64["N", "K"]):
    return np.tanh(x @ w.T)

@cv.optimize
def linear_norm(x: cv.f32["M", "K"], w: cv.f32["N", "K"], b: cv.f32["N"]):
    h = x @ w.T + b
    mu = h.mean(axis=-1, keepdims=True)
    return (h - mu) / np.sqrt(((h - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5)

@cv.optimize
def gates(x: cv.f32["M", "K"], w: cv.f32["N", "K"], c: cv.f32["M", "H"]):
    z = x @ w.T
    h = c.shape[1]
    i = 1 / (1 + np.exp(-z[:, :h]))
    f = 1 / (1 + np.exp(-z[:, h:2 * h]))
    return f * c + i * np.tanh(z[:, 2 * h:3 * h])
'''


@pytest.fixture(scope="module")
def dots(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("dot"), SOURCE, cuda_archs=(device_arch(),))


def check(fn, args: list[np.ndarray]) -> None:
    torch = pytest.importorskip("torch")
    ref = fn.py_func(*[a.astype(np.float64) for a in args])
    dev = [torch.from_numpy(a).cuda() for a in args]
    out = torch.full(ref.shape, float("nan"), dtype=dev[0].dtype, device="cuda")  # poisoned
    assert fn(*dev, out=out) is out
    got = out.cpu().numpy()
    assert np.isfinite(got).all()
    assert_close(got, ref, args[0].dtype, 20)


def check_random(fn, shapes: list[tuple[int, ...]], seed: int, dtype=np.float32) -> None:
    rng = np.random.default_rng(seed)
    check(fn, [rng.standard_normal(shape).astype(dtype) for shape in shapes])


# k * n above 65536: the launch takes the dot GEMV for m <= 32 (gpu_launch.py)
sizes = st.tuples(st.integers(1, 32), st.integers(129, 900), st.integers(513, 1100))
seeds = st.integers(0, 2**32 - 1)


@settings(max_examples=12, deadline=None)
@given(s=sizes, seed=seeds)
def test_linear(dots, s, seed):
    m, k, n = s
    check_random(dots.linear, [(m, k), (n, k), (n,)], seed)


@pytest.mark.parametrize("m, k, n", [(16, 768, 768), (16, 3072, 768), (1, 768, 768),
                                     (8, 3072, 768), (13, 1024, 520), (16, 4, 1000)])
def test_wide_block_of_the_models_shapes(dots, m, k, n):
    """Tiles of 16 columns fewer than the SMs, rows along k in float4s: the 16-warp block
    (gpu_launch's dotw), at the BERT layer's batch-1 shapes and odd ones."""
    check_random(dots.linear, [(m, k), (n, k), (n,)], m * k + n)
    check_random(dots.batched, [(2, m, k), (2, n, k)], m + k + n)


@settings(max_examples=8, deadline=None)
@given(s=sizes, z=st.integers(1, 3), seed=seeds)
def test_batched(dots, s, z, seed):
    m, k, n = s
    check_random(dots.batched, [(z, m, k), (z, n, k)], seed)


@settings(max_examples=12, deadline=None)
@given(z=st.integers(1, 8), m=st.integers(1, 4), k=st.integers(129, 900),
       n=st.integers(513, 1100), seed=seeds)
def test_batches_of_a_shared_weight(dots, z, m, k, n, seed):
    """A decode step of z sequences, (z, m, k) @ w.T: up to 16 rows in all one GEMV over
    every row (codegen/batch_fold.py), more as batches; x @ w of a (k, n) weight through
    the GEMV; and in a one-kernel with its row consumer."""
    check_random(dots.shared, [(z, m, k), (n, k), (z, m, n)], seed)
    check_random(dots.shared_kn, [(z, m, k), (k, n), (n,)], seed)
    check_random(dots.shared_norm, [(z, m, k), (n, k)], seed)


@settings(max_examples=12, deadline=None)
@given(z=st.integers(1, 4), m=st.integers(1, 32), k=st.integers(1, 900),
       n4=st.integers(1, 300), seed=seeds)
def test_rows_of_an_in_out_weight(dots, z, m, k, n4, seed):
    """x @ w of a (k, n) weight at 2 to 32 rows, n a multiple of 4: the float4 GEMV of 8-row
    tiles (cuda_gemv_rows.h), alone and as z batches of m rows (up to 16 rows in all one
    GEMV: batch_fold.py)."""
    n = 4 * n4
    check_random(dots.kn, [(m, k), (k, n), (n,)], seed)
    check_random(dots.shared_kn, [(z, m, k), (k, n), (n,)], seed)


@settings(max_examples=8, deadline=None)
@given(z=st.integers(2, 8), m=st.integers(1, 2), k=st.integers(129, 600), seed=seeds)
def test_batches_that_do_not_step_as_rows(dots, z, m, k, seed):
    """The residual a view whose batches lie m + 1 rows apart: not one GEMM of z·m rows; the
    padding rows of the output view keep their poison."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    n = 777
    x, w = rng.standard_normal((z, m, k)), rng.standard_normal((n, k))
    r = rng.standard_normal((z, m + 1, n))
    ref = dots.shared.py_func(x, w, r[:, :m])
    dev = [torch.from_numpy(a.astype(np.float32)).cuda() for a in (x, w, r)]
    out = torch.full((z, m + 1, n), float("nan"), device="cuda")
    dots.shared(dev[0], dev[1], dev[2][:, :m], out=out[:, :m])
    got = out.cpu().numpy()
    assert np.isnan(got[:, m]).all()
    assert_close(got[:, :m], ref, np.float32, 20)


@settings(max_examples=8, deadline=None)
@given(s=sizes, j=st.integers(130, 700), seed=seeds)
def test_two_terms(dots, s, j, seed):
    m, k, n = s
    check_random(dots.two_terms, [(m, k), (m, j), (n, k), (n, j)], seed)


@settings(max_examples=8, deadline=None)
@given(s=sizes, seed=seeds)
def test_float64(dots, s, seed):
    m, k, n = s
    check_random(dots.linear64, [(m, k), (n, k)], seed, np.float64)


@settings(max_examples=8, deadline=None)
@given(s=sizes, seed=seeds)
def test_in_a_one_kernel(dots, s, seed):
    m, k, n = s
    check_random(dots.linear_norm, [(m, k), (n, k), (n,)], seed)


@settings(max_examples=8, deadline=None)
@given(m=st.integers(1, 32), k=st.integers(129, 600), h=st.integers(172, 400), seed=seeds)
def test_before_a_column_consumer(dots, m, k, h, seed):
    check_random(dots.gates, [(m, k), (3 * h, k), (m, h)], seed)
