"""Functions that return None, as NumPy code that only writes into its arguments does
(``cache[:, pos] = k``, ``x *= 2``): the caller's arrays are written, the call returns
None, out= is refused with a TypeError; the GPU wrapper builds (nvcc, no device needed)
and, on a GPU, writes the caller's tensors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import compile_source, gpu_build
from hypothesis import given, settings
from hypothesis import strategies as st

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[B,S,D], f32[B,D], int"])
def write_cache(cache, k, pos):
    cache[:, pos] = k * 2

@cv.optimize(signatures=["f32[N]", "f64[N]"])
def scale_(x):
    x *= 3
    return None

@cv.optimize(signatures=["f32[N]"])
def nothing(x):
    y = x + 1
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("none_return"), SOURCE)


@settings(max_examples=20, deadline=None)
@given(b=st.integers(1, 3), s=st.integers(1, 5), d=st.integers(1, 4), data=st.data())
def test_the_callers_arrays_are_written(m, b: int, s: int, d: int, data: st.DataObject) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    cache = rng.standard_normal((b, s, d)).astype(np.float32)
    k = rng.standard_normal((b, d)).astype(np.float32)
    pos = data.draw(st.integers(-s, s - 1))
    want = cache.copy()
    assert m.write_cache.py_func(want, k, pos) is None
    assert m.write_cache(cache, k, pos) is None
    np.testing.assert_array_equal(cache, want)
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal(s).astype(dtype)
        ref = x * 3
        assert m.scale_(x) is None
        np.testing.assert_allclose(x, ref, rtol=1e-6)
    assert m.nothing(x.astype(np.float32)) is None


def test_out_is_refused(m) -> None:
    with pytest.raises(TypeError, match="returns None: out= takes no arrays"):
        m.scale_(np.ones(3, np.float32), out=np.zeros(3, np.float32))


def test_the_gpu_wrapper_builds(tmp_path: Path) -> None:
    gpu_build(tmp_path, SOURCE)


@pytest.mark.gpu
def test_gpu_writes_the_callers_tensor(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from gpu_harness import device_arch

    mod = compile_source(tmp_path, SOURCE, cuda_archs=(device_arch(),))
    cache = torch.zeros((2, 4, 3), device="cuda")
    k = torch.ones((2, 3), device="cuda")
    assert mod.write_cache(cache, k, 1) is None
    assert float(cache[:, 1].sum()) == 12.0 and float(cache.sum()) == 12.0
