"""The Hopper GEMM main loop (cuda_gemm_wgmma.h, a unit's ``_wg`` entry: wgmma fed by TMA)
on a real device, as the compiled models reach it: K-major operands (``x @ w.T``, batched
``q @ k^T``), ragged m/n/k, a batch-broadcast weight, two terms, bias + GELU epilogue,
split-K where the tiles are too few (1024 x 768 x 768, 1024 x 768 x 3072) and of the last
round's tiles alone (CUVIL_AOT_CUDA_WG_TAIL; batches folded into one GEMM of their rows
there, batch_fold.py), a few rows, and
layouts that must fall back to cv_gemm_tc or the SIMT loop (k % 4 != 0, misaligned views).
Float32 accuracy against NumPy in float64 (3xTF32), or float64 arithmetic on the rounded
operands for precision="tf32" (one TF32 product). On a device of compute capability 9.0,
a profile checks that the big cases ran ``_wg`` and the fallbacks did not.

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
def mm_t(a: cv.f32["M", "K"], b: cv.f32["N", "K"]):
    return a @ b.T

@cv.optimize
def linear_gelu(x: cv.f32["M", "K"], w: cv.f32["N", "K"], b: cv.f32["N"]):
    h = x @ w.T + b
    return 0.5 * h * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))

@cv.optimize
def scores(q: cv.f32["Z", "M", "K"], k: cv.f32["Z", "N", "K"]):
    return np.matmul(q, k.transpose(0, 2, 1)) * 0.125

@cv.optimize
def shared_weight(x: cv.f32["Z", "M", "K"], w: cv.f32["N", "K"]):
    return x @ w.T - 1.0

@cv.optimize
def residual_gelu(x: cv.f32["Z", "M", "K"], w: cv.f32["N", "K"], b: cv.f32["N"],
                  r: cv.f32["Z", "M", "N"]):
    h = x @ w.T + b
    return 0.5 * h * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3))) + r

@cv.optimize
def two_terms(x: cv.f32["M", "K"], h: cv.f32["M", "J"], wx: cv.f32["N", "K"],
              wh: cv.f32["N", "J"], bias: cv.f32["N"]):
    return (x @ wx.T + h @ wh.T + bias) * 0.5

@cv.optimize
def repeat(x: cv.f32["M", "K"], w: cv.f32["K", "K"], n: int):
    for i in range(n):
        x = np.tanh(x @ w.T)
    return x

@cv.optimize(precision="tf32")
def mm_t_tf32(a: cv.f32["M", "K"], b: cv.f32["N", "K"]):
    return np.tanh(a @ b.T)
'''

# name: argument shapes. Many tiles; ragged m/n/k (k a multiple of 4: TMA's 16-byte rows);
# batches; few tiles with split-K; 33..127 rows (one partial tile row)
CASES = {
    "mm_t_ragged": [(1000, 300), (517, 300)],
    "mm_t_k4": [(300, 4), (260, 4)],
    "mm_t_deep": [(700, 4100), (300, 4100)],
    "mm_t_rows40": [(40, 768), (768, 768)],
    "mm_t_rows100": [(100, 1000), (2000, 1000)],
    "linear_gelu": [(1024, 768), (3072, 768), (3072,)],
    "linear_gelu_split": [(1024, 768), (768, 768), (768,)],
    "linear_gelu_split_deep": [(1024, 3072), (768, 3072), (768,)],
    "linear_gelu_tall": [(4096, 768), (768, 768), (768,)],
    "scores": [(24, 200, 64), (24, 200, 64)],
    "scores_ragged": [(5, 131, 36), (5, 77, 36)],
    "shared_weight": [(3, 300, 256), (520, 256)],
    "two_terms": [(1000, 260), (1000, 100), (700, 260), (700, 100), (700,)],
    "two_terms_split": [(200, 1024), (200, 2048), (256, 1024), (256, 2048), (256,)],
    "linear_gelu_split_ragged": [(1000, 1536), (700, 1536), (700,)],
    "scores_split": [(4, 256, 2048), (4, 200, 2048)],
}
# k % 4 != 0 (contiguous rows are not 16-byte aligned): no tensor maps, cv_gemm_tc or tiled
FALLBACK = {
    "mm_t_k301": [(1000, 301), (517, 301)],
    "linear_gelu_k770": [(1024, 770), (768, 770), (768,)],
    "two_terms_j101": [(1000, 260), (1000, 101), (700, 260), (700, 101), (700,)],
}
FEW_ROWS = {f"mm_t_rows{m}": [(m, 768), (768, 768)] for m in (1, 2, 3, 5, 8, 13, 16)}
# The last round's tiles alone split (CUVIL_AOT_CUDA_WG_TAIL, on by default; the fixture
# makes sure; test_wgmma_codegen has the model's choices): GPT-2's 144 tiles (126 whole, 18 in
# 3 chunks), a ragged last row of tiles, 192 tiles (120 + 72 in 2), and batches: folded
# into one GEMM of their rows where they step as rows (batch_fold.py: 8 x 128, and 3 x
# 377 rows, whose batches share tiles folded), a residual read by batch and row
TAIL = {
    "linear_gelu_tail": [(1024, 768), (2304, 768), (2304,)],
    "linear_gelu_tail_ragged": [(1000, 768), (2304, 768), (2304,)],
    "linear_gelu_tail_192": [(1024, 768), (3072, 768), (3072,)],
    "shared_weight_tail": [(8, 128, 768), (2304, 768)],
    "residual_gelu_tail": [(8, 128, 768), (2304, 768), (2304,), (8, 128, 2304)],
    "residual_gelu_tail_ragged": [(3, 377, 768), (2304, 768), (2304,), (3, 377, 2304)],
}
SPLIT_TAILS = {"linear_gelu_tail", "linear_gelu_tail_ragged", "linear_gelu_tail_192",
               "shared_weight_tail", "residual_gelu_tail"}  # 1000 to 1024 rows, one GEMM
TF32 = {"mm_t_tf32": [(1024, 768), (768, 768)], "mm_t_tf32_big": [(2048, 1000), (1536, 1000)]}


@pytest.fixture(scope="module")
def gemms(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("wgmma"), SOURCE, cuda_archs=(device_arch(),))


def check(gemms, case: str, shapes, layout: str, *, tf32: bool = False) -> list[str]:
    import torch

    rng = np.random.default_rng(zlib.crc32(f"{case} {layout} {shapes}".encode()))
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    fn = function_for(gemms, case)
    ref_args = [round_tf32(a) if tf32 and a.ndim == 2 else a for a in args]
    ref = fn.py_func(*[a.astype(np.float64) for a in ref_args])
    dev = [put_in_layout(a, layout) for a in args]
    out = torch.full(ref.shape, float("nan"), dtype=torch.float32, device="cuda")  # poisoned
    kernels = kernels_launched(lambda: fn(*dev, out=out))
    got = out.cpu().numpy()
    assert np.isfinite(got).all()
    if tf32:  # float32 accumulation (truncating, in the tensor cores) of exact products
        x, w = (a.astype(np.float64) for a in ref_args)
        k = x.shape[1]
        bound = 4 * k * 2.0 ** -24 * (np.abs(x) @ np.abs(w).T) + 1e-6 * (1 + np.abs(ref))
        worst = np.max(np.abs(got - ref) - bound)
        assert worst <= 0, f"{case}: error over the bound by {worst:.3g} ({kernels})"
    else:
        err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
        assert err < 5e-6, f"||got - ref|| / ||ref|| = {err:.3g}: not float32 accuracy ({kernels})"
        assert_close(got, ref, np.float32, 20)
    # again: a second call replays or reuses (graphs, split-K scratch) and must agree
    out2 = torch.full(ref.shape, float("nan"), dtype=torch.float32, device="cuda")
    fn(*dev, out=out2)
    np.testing.assert_array_equal(out2.cpu().numpy(), got)
    return kernels


def _ran_wg(kernels: list[str]) -> bool:
    return any(k.endswith("_gemm_f32_wg") for k in kernels)


def _hopper() -> bool:
    return device_arch() == "sm_90"


@pytest.mark.parametrize("layout", ["contiguous", "padded"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_k_major_gemms_run_wgmma_with_float32_accuracy(gemms, case, layout):
    kernels = check(gemms, case, CASES[case], layout)
    if _hopper() and kernels:
        assert _ran_wg(kernels), kernels


@pytest.mark.parametrize("case", sorted(CASES))
def test_misaligned_views_fall_back(gemms, case):
    kernels = check(gemms, case, CASES[case], "shifted")
    assert not _ran_wg(kernels), kernels


@pytest.mark.parametrize("layout", ["contiguous", "padded"])
@pytest.mark.parametrize("case", sorted(FALLBACK))
def test_rows_not_16_byte_aligned_fall_back(gemms, case, layout):
    kernels = check(gemms, case, FALLBACK[case], layout)
    if layout == "contiguous":
        assert not _ran_wg(kernels), kernels
    elif _hopper() and kernels:  # padded rows are aligned whatever k is
        assert _ran_wg(kernels), kernels


@pytest.mark.parametrize("case", sorted(FEW_ROWS))
def test_a_few_rows(gemms, case):
    check(gemms, case, FEW_ROWS[case], "contiguous")


@pytest.mark.parametrize("layout", ["contiguous", "padded"])
@pytest.mark.parametrize("case", sorted(TF32))
def test_tf32_policy_takes_one_product(gemms, case, layout):
    kernels = check(gemms, case, TF32[case], layout, tf32=True)
    if _hopper() and kernels:
        assert _ran_wg(kernels), kernels


@pytest.fixture
def tail_split():
    from cuvil_aot.runtime import native

    before = native.info()["cuda_wg_tail"]
    native.configure(cuda_wg_tail=True)
    yield
    native.configure(cuda_wg_tail=before)


@pytest.mark.parametrize("layout", ["contiguous", "padded"])
@pytest.mark.parametrize("case", sorted(TAIL))
def test_the_tail_alone_split(gemms, tail_split, case, layout):
    kernels = check(gemms, case, TAIL[case], layout)
    if _hopper() and kernels:
        assert _ran_wg(kernels), kernels
        if case in SPLIT_TAILS:  # the model splits these (the sums: the unit's _ksum)
            assert any(k.endswith("_ksum") for k in kernels), kernels


def test_batches_that_do_not_step_as_rows_stay_batches(gemms, tail_split):
    """x[:, :128] of an (8, 131, 768) array: its batches 131 rows apart, not 128, so the
    GEMM is not one of 1024 rows (batch_fold.py's check at the call)."""
    import torch

    rng = np.random.default_rng(41)
    store = rng.standard_normal((8, 131, 768)).astype(np.float32)
    w, b = rng.standard_normal((2304, 768)).astype(np.float32), rng.standard_normal(2304)
    r = rng.standard_normal((8, 128, 2304)).astype(np.float32)
    b = b.astype(np.float32)
    x = store[:, :128]
    ref = gemms.residual_gelu.py_func(*(a.astype(np.float64) for a in (x, w, b, r)))
    dev = [torch.from_numpy(store).cuda()[:, :128]] + [torch.from_numpy(a).cuda()
                                                        for a in (w, b, r)]
    out = torch.full(ref.shape, float("nan"), dtype=torch.float32, device="cuda")
    gemms.residual_gelu(*dev, out=out)
    got = out.cpu().numpy()
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 5e-6
    assert_close(got, ref, np.float32, 20)


def test_a_run_time_loop_launches_it_kernel_by_kernel(gemms):
    """A run-time loop's body launches each kernel in turn (gpu_launch._launch_planned).
    Its GEMM reads w.T through a contiguous copy made before the loop (a flat kernel), so B
    is n-contiguous and cv_gemm_tc runs (seen on the H200): only the result is checked."""
    import torch

    rng = np.random.default_rng(23)
    x = (rng.standard_normal((300, 256)) * 0.5).astype(np.float32)
    w = (rng.standard_normal((256, 256)) * 0.1).astype(np.float32)
    ref = gemms.repeat.py_func(x.astype(np.float64), w.astype(np.float64), 3)
    dev = [torch.from_numpy(a).cuda() for a in (x, w)]
    kernels = kernels_launched(lambda: gemms.repeat(*dev, 3))
    got = gemms.repeat(*dev, 3).cpu().numpy()
    err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    assert err < 5e-6, f"||got - ref|| / ||ref|| = {err:.3g} ({kernels})"
