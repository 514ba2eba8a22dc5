"""Split-K in thread-block clusters (cv_gemm_tc_cluster, sm_90) on a real device: GEMMs of
too few 64 x 128 tiles with an N-major B (``x @ w`` of an (in, out) weight, GPT-2's
projections at 128 rows), k split over the CV_TC_CLUSTER blocks of a cluster and added up
in distributed shared memory. Ragged m, n and k (padded rows), two terms of different k,
batches, epilogues, and the tf32 policy's one-product loop; float32 accuracy against NumPy in
float64, with CUVIL_AOT_CUDA_TC_CLUSTER on and off (the partial sums and _ksum). On an sm_90
device with it on, the cluster kernel must be the one that ran.

Run on a machine with an NVIDIA GPU (tools/gpu_check.sh); skipped elsewhere."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from conftest import assert_close, compile_source
from gpu_harness import device_arch, function_for, kernels_launched, put_in_layout

from cuvil_aot.compiler.ir.ops import round_tf32

pytestmark = pytest.mark.gpu

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def gemm_bias_gelu(x: cv.f32["M", "K"], w: cv.f32["K", "N"], b: cv.f32["N"]):
    h = x @ w + b
    return 0.5 * h * (1 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))

@cv.optimize
def bmm(a: cv.f32["Z", "M", "K"], b: cv.f32["Z", "K", "N"]):
    return a @ b + 1

@cv.optimize
def two_terms(x: cv.f32["M", "K"], h: cv.f32["M", "J"], wx: cv.f32["K", "N"],
              wh: cv.f32["J", "N"], bias: cv.f32["N"]):
    return (x @ wx + h @ wh + bias) * 0.5

@cv.optimize(precision="tf32")
def mm_tf32(x: cv.f32["M", "K"], w: cv.f32["K", "N"]):
    return x @ w
'''

CASES = {
    "gemm_bias_gelu_qkv": [(128, 768), (768, 2304), (2304,)],  # GPT-2's c_attn at 1 x 128
    "gemm_bias_gelu_fc1": [(128, 768), (768, 3072), (3072,)],  # its c_fc: 48 tiles
    "gemm_bias_gelu_fc2": [(128, 3072), (3072, 768), (768,)],  # its c_proj after the MLP
    "gemm_bias_gelu_ragged": [(100, 1001), (1001, 200), (200,)],
    "bmm": [(2, 70, 700), (2, 700, 130)],
    "two_terms": [(100, 700), (100, 301), (700, 260), (301, 260), (260,)],
    "mm_tf32": [(128, 1024), (1024, 768)],
}


@pytest.fixture(scope="module")
def gemms(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("tcc"), SOURCE, cuda_archs=(device_arch(),))


@pytest.fixture(params=[True, False], ids=["cluster", "ksum"])
def cluster(request):
    from cuvil_aot.runtime import native

    before = native.info()["cuda_tc_cluster"]
    native.configure(cuda_tc_cluster=request.param)
    yield request.param
    native.configure(cuda_tc_cluster=before)


@pytest.mark.parametrize("layout", ["padded", "contiguous"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_few_tiles_split_k_in_a_cluster(gemms, cluster, case, layout):
    import torch

    shapes = CASES[case]
    if layout == "contiguous" and any(s[-1] % 4 for s in shapes):
        pytest.skip("rows not 16-byte aligned: the SIMT tiles, not the tensor cores")
    rng = np.random.default_rng(zlib.crc32(f"{case} {layout} {shapes}".encode()))
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    fn = function_for(gemms, case)
    tf32 = case == "mm_tf32"
    ref_args = [round_tf32(a) for a in args] if tf32 else args
    ref = fn.py_func(*[a.astype(np.float64) for a in ref_args])
    dev = [put_in_layout(a, layout) for a in args]
    out = torch.full(ref.shape, float("nan"), dtype=torch.float32, device="cuda")  # poisoned
    kernels = kernels_launched(lambda: fn(*dev, out=out))
    got = out.cpu().numpy()
    assert np.isfinite(got).all(), kernels
    if tf32:  # float32 accumulation of exact products
        x, w = (a.astype(np.float64) for a in ref_args)
        bound = 4 * x.shape[1] * 2.0 ** -24 * (np.abs(x) @ np.abs(w)) + 1e-6 * (1 + np.abs(ref))
        worst = np.max(np.abs(got - ref) - bound)
        assert worst <= 0, f"error over the bound by {worst:.3g} ({kernels})"
    else:
        err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
        assert err < 5e-6, f"||got - ref|| / ||ref|| = {err:.3g} ({kernels})"
        assert_close(got, ref, np.float32, 20)
    if device_arch() == "sm_90" and kernels:
        ran = any(k.endswith("_gemm_f32_tcc") for k in kernels)
        assert ran == cluster, kernels
    # again: a second call replays its graph or reuses scratch, and must agree
    out2 = torch.full(ref.shape, float("nan"), dtype=torch.float32, device="cuda")
    fn(*dev, out=out2)
    np.testing.assert_array_equal(out2.cpu().numpy(), got)
