"""Elementwise kernels whose operands run contiguously along the last loop variable only
(``_v32``, cuda_elementwise.py): a KV cache grown by ``np.concatenate``, slices, a transpose
that keeps the last axis, an operand broadcast along a middle axis, and float64 and uint8
operands. Against NumPy float64 (uint8 exactly) into poisoned outputs, on fresh random
shapes; last axes that are not a multiple of 4, or views whose strides are not, take the
strided loop, and must agree as well."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import compile_source
from gpu_harness import device_arch, kernels_launched, knob
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.gpu

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def grow(past: cv.f32["B", "H", "P", "D"], new: cv.f32["B", "H", 1, "D"]):
    return np.concatenate([past, new], axis=2)

@cv.optimize
def middle(x: cv.f32["B", "T", "D"], y: cv.f32["T", "B", "D"], b: cv.f32["B", "D"]):
    return x[:, 1:, :] * 2.0 + y.transpose(1, 0, 2)[:, 1:, :] + b[:, None, :]

@cv.optimize
def wide(x: cv.f64["B", "T", "D"], y: cv.f64["B", "T", "D"]):
    return np.maximum(x[:, ::2, :], y[:, 1::2, :]) - 1.5

@cv.optimize
def small(x: cv.u8["B", "T", "D"]):
    return x[:, 1:, :] + np.uint8(7)
'''


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("last"), SOURCE, cuda_archs=(device_arch(),))


def _check(fn, args: list[np.ndarray], exact: bool = False) -> list[str]:
    """fn on device copies of ``args`` into a poisoned out=, against its Python function in
    float64 (uint8: exactly); the kernels it launched."""
    import torch

    ref = fn.py_func(*[a if exact else a.astype(np.float64) for a in args])
    dev = [torch.from_numpy(a).cuda() for a in args]
    dtype = {np.uint8: torch.uint8, np.float64: torch.float64, np.float32: torch.float32}
    out = torch.full(ref.shape, 255 if exact else float("nan"),
                     dtype=dtype[args[0].dtype.type], device="cuda")
    kernels = kernels_launched(lambda: fn(*dev, out=out))
    got = out.cpu().numpy()
    if exact:
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6 * (np.abs(ref).max() or 1))
    return kernels


@pytest.fixture(params=[False, True], ids=["by_kernel", "one_kernel"])
def one_kernel(request):
    """CUVIL_AOT_CUDA_ONE off (each copy its own kernel: the entry under test) and on (a
    call this small runs as one kernel, gpu_launch.ONE_WORK)."""
    with knob("cuda_one", request.param) as on:
        yield on


SIZES = st.integers(1, 9)
DIMS = st.sampled_from([4, 8, 64, 5, 1, 12, 130])
SETTINGS = settings(max_examples=12, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(b=SIZES, h=SIZES, p=st.integers(1, 300), d=DIMS, seed=st.integers(0, 2**31))
def test_kv_cache_grown_by_concatenate(mod, one_kernel, b, h, p, d, seed):
    rng = np.random.default_rng(seed)
    past = rng.standard_normal((b, h, p, d)).astype(np.float32)
    new = rng.standard_normal((b, h, 1, d)).astype(np.float32)
    kernels = _check(mod.grow, [past, new])
    if kernels and not one_kernel and d % 4 == 0 and b * h > 1:  # (one head: _flat)
        assert any(k.endswith("_v32") for k in kernels), kernels


@SETTINGS
@given(b=SIZES, t=st.integers(2, 40), d=DIMS, seed=st.integers(0, 2**31))
def test_slices_transposes_and_broadcasts(mod, b, t, d, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, t, d)).astype(np.float32)
    y = rng.standard_normal((t, b, d)).astype(np.float32)
    c = rng.standard_normal((b, d)).astype(np.float32)
    kernels = _check(mod.middle, [x, y, c])
    if kernels and d % 4 == 0 and t > 2:  # (one row of one batch: _flat)
        assert any(k.endswith("_v32") for k in kernels), kernels


@SETTINGS
@given(b=SIZES, half=st.integers(1, 20), d=DIMS, seed=st.integers(0, 2**31))
def test_float64_and_uint8(mod, b, half, d, seed):
    rng = np.random.default_rng(seed)
    # an even row count: wide()'s x[:, ::2] and y[:, 1::2] then have as many rows
    x, y = (rng.standard_normal((b, 2 * half, d)) for _ in range(2))
    _check(mod.wide, [x, y])
    _check(mod.small, [rng.integers(0, 256, (b, 2 * half, d)).astype(np.uint8)], exact=True)
