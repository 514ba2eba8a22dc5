"""The tensor-core GEMM main loop (cv_gemm_tc, 3xTF32) on a real device: sizes with enough
128x128 tiles to take it, ragged m/n/k through padded (aligned) views, B n- or k-contiguous,
batches, two terms, and layouts that fall back to the SIMT loop. Float32 accuracy against
NumPy in float64: TF32's ~3e-4 must not pass. Then GEMMs of too few tiles for the SMs and a
deep k, which split k in chunks (cv_gpu_split), on the tensor cores and the SIMT loop.

Run on a machine with an NVIDIA GPU (tools/gpu_check.sh); skipped elsewhere."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from conftest import assert_close, compile_source
from gpu_harness import device_arch

pytestmark = pytest.mark.gpu

SOURCE = '''
import zlib

import numpy as np
import cuvil_aot as cv

@cv.optimize
def gemm_bias_relu(x: cv.f32["M", "K"], w: cv.f32["K", "N"], b: cv.f32["N"]):
    return np.maximum(0, x @ w + b)

@cv.optimize
def mm_t(a: cv.f32["M", "K"], b: cv.f32["N", "K"]):
    return a @ b.T

@cv.optimize
def bmm(a: cv.f32["Z", "M", "K"], b: cv.f32["Z", "K", "N"]):
    return a @ b + 1

@cv.optimize
def two_terms(x: cv.f32["M", "K"], h: cv.f32["M", "J"], wx: cv.f32["K", "N"],
              wh: cv.f32["J", "N"], bias: cv.f32["N"]):
    return (x @ wx + h @ wh + bias) * 0.5

@cv.optimize
def gemm64(x: cv.f64["M", "K"], w: cv.f64["K", "N"]):
    return np.tanh(x @ w)
'''

# name: argument shapes; each case has at least 132 tiles of 128 x 128 (an H200's SMs)
CASES = {
    "gemm_bias_relu": [(1537, 999), (999, 1543), (1543,)],
    "gemm_bias_relu_k3": [(1536, 3), (3, 1600), (1600,)],
    "mm_t": [(2048, 515), (2053, 515)],
    "bmm": [(16, 300, 129), (16, 129, 520)],
    "two_terms": [(1536, 260), (1536, 101), (260, 1536), (101, 1536), (1536,)],
}

# few tiles, deep k: split-K (k not a multiple of 8, two terms of different k, batches)
SPLIT_CASES = {
    "gemm_bias_relu": [(256, 1001), (1001, 200), (200,)],
    "mm_t": [(70, 2048), (130, 2048)],
    "bmm": [(2, 70, 700), (2, 700, 130)],
    "two_terms": [(100, 700), (100, 301), (700, 260), (301, 260), (260,)],
    "gemm64": [(96, 1500), (1500, 64)],
}


@pytest.fixture(scope="module")
def gemms(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("gemm"), SOURCE, cuda_archs=(device_arch(),))


def _put(a: np.ndarray, layout: str):
    """contiguous; padded: rows 16-byte aligned whatever the last size (the tensor-core
    path); shifted: one element off (misaligned: the SIMT path)."""
    torch = pytest.importorskip("torch")
    if layout == "contiguous" or a.ndim < 2:
        return torch.from_numpy(a).cuda()
    last = a.shape[-1]
    width = (last + 3) // 4 * 4 + 4 if layout == "padded" else last + 1
    store = torch.zeros((*a.shape[:-1], width), dtype=torch.from_numpy(a).dtype, device="cuda")
    first = 1 if layout == "shifted" else 0
    store[..., first:first + last] = torch.from_numpy(a)
    return store[..., first:first + last]


@pytest.mark.parametrize("layout", ["padded", "contiguous", "shifted"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_large_gemm_float32_accuracy(gemms, case, layout):
    check(gemms, case, CASES[case], layout)


@pytest.mark.parametrize("layout", ["padded", "contiguous", "shifted"])
@pytest.mark.parametrize("case", sorted(SPLIT_CASES))
def test_few_tiles_split_k(gemms, case, layout):
    check(gemms, case, SPLIT_CASES[case], layout)


def check(gemms, case: str, shapes: list[tuple[int, ...]], layout: str) -> None:
    import torch

    rng = np.random.default_rng(zlib.crc32(f"{case} {layout} {shapes}".encode()))
    dtype = np.float64 if case == "gemm64" else np.float32
    args = [rng.standard_normal(s).astype(dtype) for s in shapes]
    fn = getattr(gemms, case.removesuffix("_k3"))
    ref = fn.py_func(*[a.astype(np.float64) for a in args])
    dev = [_put(a, layout) for a in args]
    out = torch.full(ref.shape, float("nan"), dtype=dev[0].dtype, device="cuda")  # poisoned
    assert fn(*dev, out=out) is out
    got = out.cpu().numpy()
    assert np.isfinite(got).all()
    err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    assert err < 5e-6, f"||got - ref|| / ||ref|| = {err:.3g}: not float32 accuracy"
    assert_close(got, ref, dtype, 20)
