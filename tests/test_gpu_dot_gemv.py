"""The dot GEMV (cv_gemv_dot) on a real device: a few rows (m <= 32) times a large transposed
B (x @ w.T on (out, in) weights), alone, batched, with two terms, in float64, as a phase of
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


# k * n above 65536: the launch takes the dot GEMV for m <= 32 (gpu_launch.py)
sizes = st.fixed_dictionaries({"m": st.integers(1, 32), "k": st.integers(129, 900),
                               "n": st.integers(513, 1100)})


@settings(max_examples=12, deadline=None)
@given(s=sizes, seed=st.integers(0, 2**32 - 1))
def test_linear(dots, s, seed):
    rng = np.random.default_rng(seed)
    m, k, n = s["m"], s["k"], s["n"]
    check(dots.linear, [rng.standard_normal(shape).astype(np.float32)
                        for shape in [(m, k), (n, k), (n,)]])


@settings(max_examples=8, deadline=None)
@given(s=sizes, z=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_batched(dots, s, z, seed):
    rng = np.random.default_rng(seed)
    m, k, n = s["m"], s["k"], s["n"]
    check(dots.batched, [rng.standard_normal(shape).astype(np.float32)
                         for shape in [(z, m, k), (z, n, k)]])


@settings(max_examples=8, deadline=None)
@given(s=sizes, j=st.integers(130, 700), seed=st.integers(0, 2**32 - 1))
def test_two_terms(dots, s, j, seed):
    rng = np.random.default_rng(seed)
    m, k, n = s["m"], s["k"], s["n"]
    check(dots.two_terms, [rng.standard_normal(shape).astype(np.float32)
                           for shape in [(m, k), (m, j), (n, k), (n, j)]])


@settings(max_examples=8, deadline=None)
@given(s=sizes, seed=st.integers(0, 2**32 - 1))
def test_float64(dots, s, seed):
    rng = np.random.default_rng(seed)
    m, k, n = s["m"], s["k"], s["n"]
    check(dots.linear64, [rng.standard_normal((m, k)), rng.standard_normal((n, k))])


@settings(max_examples=8, deadline=None)
@given(s=sizes, seed=st.integers(0, 2**32 - 1))
def test_in_a_one_kernel(dots, s, seed):
    rng = np.random.default_rng(seed)
    m, k, n = s["m"], s["k"], s["n"]
    check(dots.linear_norm, [rng.standard_normal(shape).astype(np.float32)
                             for shape in [(m, k), (n, k), (n,)]])


@settings(max_examples=8, deadline=None)
@given(m=st.integers(1, 32), k=st.integers(129, 600), h=st.integers(172, 400),
       seed=st.integers(0, 2**32 - 1))
def test_before_a_column_consumer(dots, m, k, h, seed):
    rng = np.random.default_rng(seed)
    check(dots.gates, [rng.standard_normal(shape).astype(np.float32)
                       for shape in [(m, k), (3 * h, k), (m, h)]])
