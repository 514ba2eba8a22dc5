"""The tf32 and fp16 policies on a real device: their matmuls read TF32 numbers only, so
the tensor-core main loops take one TF32 product instead of three (cuda_gemm's
one_tf32_product). The result must still be float64 arithmetic on the operands rounded as
the policy says, to float32 accumulation error, as on the CPU (test_precision.py): at
sizes that take the tensor cores (contiguous and padded rows, B n- or k-contiguous), split
k, and sizes that fall back to the SIMT loops and GEMVs.

Run on a machine with an NVIDIA GPU (tools/gpu_check.sh); skipped elsewhere."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from conftest import compile_source
from gpu_harness import device_arch

from cuvil_aot.compiler.ir.ops import round_tf32

pytestmark = pytest.mark.gpu

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(precision="tf32")
def linear_tf32(x: cv.f32["M", "K"], w: cv.f32["K", "N"], b: cv.f32["N"]):
    return x @ w + b

@cv.optimize(precision="tf32")
def mm_t_tf32(x: cv.f32["M", "K"], w: cv.f32["N", "K"]):
    return np.tanh(x @ w.T)

@cv.optimize(precision="fp16")
def linear_fp16(x: cv.f32["M", "K"], w: cv.f32["K", "N"], b: cv.f32["N"]):
    return x @ w + b

@cv.optimize(precision="fp16")
def mm_t_fp16(x: cv.f32["M", "K"], w: cv.f32["N", "K"]):
    return np.tanh(x @ w.T)
'''

ROUND = {"tf32": round_tf32, "fp16": lambda a: a.astype(np.float16).astype(np.float32)}

# (x, w) shapes: enough 64-row tiles for the tensor cores; few tiles and deep k (split k);
# ragged sizes; a few rows (the GEMV paths)
SHAPES = {
    "tiles": [(1536, 768), (768, 2304)],
    "split_k": [(128, 3001), (3001, 256)],
    "ragged": [(1027, 515), (515, 777)],
    "few_rows": [(3, 700), (700, 1024)],
}


@pytest.fixture(scope="module")
def modes(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("gpu_precision"), SOURCE,
                          cuda_archs=(device_arch(),))


def _put(a: np.ndarray, padded: bool):
    torch = pytest.importorskip("torch")
    if not padded or a.ndim < 2:
        return torch.from_numpy(a).cuda()
    store = torch.zeros((a.shape[0], a.shape[1] + 4), dtype=torch.float32, device="cuda")
    store[:, :a.shape[1]] = torch.from_numpy(a)
    return store[:, :a.shape[1]]


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("shapes", sorted(SHAPES))
@pytest.mark.parametrize("fn_name", ["linear_tf32", "mm_t_tf32", "linear_fp16", "mm_t_fp16"])
def test_rounded_operands_on_one_tf32_product(modes, fn_name, shapes, padded):
    import torch

    mode = fn_name.rsplit("_", 1)[1]
    (m, k), (k2, n) = SHAPES[shapes]
    rng = np.random.default_rng(zlib.crc32(f"{fn_name} {shapes} {padded}".encode()))
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n) if fn_name.startswith("linear") else (n, k2)).astype(
        np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    args = [x, w, b] if fn_name.startswith("linear") else [x, w]
    fn = getattr(modes, fn_name)
    rx, rw = (ROUND[mode](a).astype(np.float64) for a in (x, w))
    wk = rw if fn_name.startswith("linear") else rw.T
    pre = rx @ wk + (b if fn_name.startswith("linear") else 0)
    ref = pre if fn_name.startswith("linear") else np.tanh(pre)
    out = torch.full(ref.shape, float("nan"), dtype=torch.float32, device="cuda")  # poisoned
    assert fn(*[_put(a, padded) for a in args], out=out) is out
    got = out.cpu().numpy().astype(np.float64)
    # float32 accumulation of exact products of the rounded operands (+ the bias, tanh's ulps)
    bound = 4 * k * 2.0 ** -24 * (np.abs(rx) @ np.abs(wk)) + 1e-6 * (1 + np.abs(ref))
    assert np.isfinite(got).all()
    worst = np.max(np.abs(got - ref) - bound)
    assert worst <= 0, f"{fn_name} {shapes}: error over the bound by {worst:.3g}"
