"""The Hopper GEMM over operands that are not K-major on a real device, both ways: an
N-major B read as it is, its tiles transposed in shared memory (cuda_wg_split.h's
cv_wg_split_nmajor; CUVIL_AOT_CUDA_WG_NMAJOR=1, the default), and K-major copies (with it 0,
gpu_wg_copies.py, cuda_transpose.h; and where B cannot be mapped as it is or A is
M-major). ``x @ w`` of (in, out) weights (B N-major), batched 3-D
``x @ w + b`` with a GELU epilogue, per-batch N-major B (``np.matmul(a, b)``), an M-major A
(``a.T @ b``: both copied), two terms, odd m/n/k, padded, misaligned and strided (every
other column) weights. Float32 accuracy against NumPy in float64 (3xTF32; one TF32 product
under precision="tf32": float64 arithmetic on the rounded operands), outputs poisoned. A
second call must agree; an MLP of two such GEMMs (a CUDA graph of its launches from the
second call) called with other weights each time must follow the new pointers. On a device
of compute capability 9.0, a profile checks that cv_transpose_f32 and ``_wg`` ran (in a
run-time loop too), and that CUVIL_AOT_CUDA_WGMMA_TRANSPOSE=0 (configure's
cuda_wgmma_transpose) keeps them off.

Run on a machine with an NVIDIA GPU (tools/gpu_check.sh); skipped elsewhere."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from conftest import assert_close, compile_source, tolerance
from gpu_harness import device_arch, function_for, kernels_launched, put_in_layout

from cuvil_aot.compiler.ir.ops import round_tf32

pytestmark = pytest.mark.gpu

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def mm(a: cv.f32["M", "K"], b: cv.f32["K", "N"]):
    return a @ b

@cv.optimize
def linear_gelu(x: cv.f32["B", "T", "K"], w: cv.f32["K", "N"], b: cv.f32["N"]):
    h = x @ w + b
    return 0.5 * h * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))

@cv.optimize
def bmm(a: cv.f32["Z", "M", "K"], b: cv.f32["Z", "K", "N"]):
    return np.matmul(a, b) * 0.5

@cv.optimize
def at_b(a: cv.f32["K", "M"], b: cv.f32["K", "N"]):
    return a.T @ b - 1.0

@cv.optimize
def two_terms(x: cv.f32["M", "K"], h: cv.f32["M", "J"], wx: cv.f32["K", "N"],
              wh: cv.f32["J", "N"], bias: cv.f32["N"]):
    return (x @ wx + h @ wh + bias) * 0.5

@cv.optimize
def mlp(x: cv.f32["M", "K"], w1: cv.f32["K", "H"], b1: cv.f32["H"], w2: cv.f32["H", "N"],
        b2: cv.f32["N"]):
    return np.maximum(x @ w1 + b1, 0) @ w2 + b2

@cv.optimize
def repeat(x: cv.f32["M", "K"], w: cv.f32["K", "K"], n: int):
    for i in range(n):
        x = np.tanh(x @ w)
    return x

@cv.optimize(precision="tf32")
def mm_tf32(a: cv.f32["M", "K"], b: cv.f32["K", "N"]):
    return np.tanh(a @ b)
'''

# name: argument shapes (enough work that the copies pay: gpu_wrap.h's model)
CASES = {
    "mm_gpt2_qkv": [(1024, 768), (768, 2304)],
    "mm_ragged": [(1000, 300), (300, 517)],
    "mm_rows100": [(100, 768), (768, 2304)],
    "mm_deep": [(700, 4100), (4100, 300)],
    "linear_gelu_8x128": [(8, 128, 768), (768, 2304), (2304,)],
    "linear_gelu_1x128": [(1, 128, 768), (768, 3072), (3072,)],
    "linear_gelu_ragged": [(3, 377, 260), (260, 1001), (1001,)],
    "bmm": [(16, 300, 512), (16, 512, 300)],
    "bmm_ragged": [(5, 531, 260), (5, 260, 777)],
    "at_b": [(768, 1024), (768, 768)],
    "two_terms": [(1500, 260), (1500, 100), (260, 700), (100, 700), (700,)],
    "mlp": [(512, 768), (768, 3072), (3072,), (3072, 768), (768,)],
}
# A K-major with rows not 16-byte aligned (k % 4 != 0, contiguous): no maps for A, so no
# wgmma (A is never copied where it is K-major); B's copy would have been fine
NO_COPIES = {"mm_rows100", "linear_gelu_1x128"}  # cv_gemm_tc on the operands as they are
ODD_K = {"mm_odd_k": [(1001, 301), (301, 999)]}
WEIGHTS = {"mm": (1,), "linear": (1,), "bmm": (1,), "at": (0, 1), "two": (2, 3), "mlp": (1, 3)}


@pytest.fixture(params=[True, False], ids=["nmajor", "copies"])
def nmajor(request):
    """The runtime's CUVIL_AOT_CUDA_WG_NMAJOR for the test: N-major B read as it is, or
    copied."""
    from cuvil_aot.runtime import native

    before = native.info()["cuda_wg_nmajor"]
    native.configure(cuda_wg_nmajor=request.param)
    yield request.param
    native.configure(cuda_wg_nmajor=before)


@pytest.fixture(scope="module")
def gemms(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("wgcopies"), SOURCE,
                          cuda_archs=(device_arch(),))


def _args(case: str, shapes, seed: str = "") -> list[np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(f"{case} {shapes} {seed}".encode()))
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def check(gemms, case: str, shapes, layout: str, *, tf32: bool = False) -> list[str]:
    """The case's weights (WEIGHTS) put as ``layout``, the rest contiguous."""
    import torch

    args = _args(case, shapes)
    fn = function_for(gemms, case)
    ref_args = [round_tf32(a) if tf32 else a for a in args]
    ref = fn.py_func(*[a.astype(np.float64) for a in ref_args])
    weights = WEIGHTS.get(case.split("_")[0], (1,))
    dev = [put_in_layout(a, layout if i in weights else "contiguous") for i, a in enumerate(args)]
    out = torch.full(ref.shape, float("nan"), dtype=torch.float32, device="cuda")  # poisoned
    kernels = kernels_launched(lambda: fn(*dev, out=out))
    got = out.cpu().numpy()
    assert np.isfinite(got).all()
    if tf32:  # float32 accumulation of exact products of the rounded operands
        x, w = (a.astype(np.float64) for a in ref_args)
        bound = 4 * x.shape[1] * 2.0 ** -24 * (np.abs(x) @ np.abs(w)) + 1e-6 * (1 + np.abs(ref))
        worst = np.max(np.abs(got - ref) - bound)
        assert worst <= 0, f"{case}: error over the bound by {worst:.3g} ({kernels})"
    else:
        err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
        assert err < 5e-6, f"||got - ref|| / ||ref|| = {err:.3g}: not float32 accuracy ({kernels})"
        # at most twice NumPy's own float32 error (its BLAS) where that passes 20 ulps: in the
        # MLP the first GEMM's rounding, summed over 3072 terms, does (OpenBLAS 1.1e-3
        # relative to max(|ref|, 1), 3xTF32 8.8e-4: H200, 2026-12-03)
        numpy_f32 = fn.py_func(*args)
        worst = np.max(np.abs(numpy_f32 - ref) / np.maximum(np.abs(ref), 1.0))
        assert_close(got, ref, np.float32, max(20.0, 2 * worst / tolerance(np.float32)))
    out2 = torch.full(ref.shape, float("nan"), dtype=torch.float32, device="cuda")
    fn(*dev, out=out2)  # again: graphs, scratch reused
    np.testing.assert_array_equal(out2.cpu().numpy(), got)
    return kernels


def _ran(kernels: list[str]) -> tuple[bool, bool]:
    """Whether the wgmma main loop ran, and whether a copy did."""
    return any(k.endswith("_gemm_f32_wg") for k in kernels), "cv_transpose_f32" in kernels


def _hopper() -> bool:
    return device_arch() == "sm_90"


def _copied(case: str, layout: str, nmajor: bool) -> bool:
    """Whether the case's wgmma GEMM needs copies: A M-major (``a.T @ b``), or a weight that
    TMA cannot read as it is (misaligned, strided, or rows of n % 4 != 0 floats), or the
    N-major path off."""
    if not nmajor or case.startswith("at_b") or layout in ("shifted", "strided"):
        return True
    weights = WEIGHTS.get(case.split("_")[0], (1,))
    return layout == "contiguous" and any(CASES[case][i][-1] % 4 for i in weights)


@pytest.mark.parametrize("layout", ["contiguous", "padded", "shifted", "strided"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_n_major_weights_run_wgmma(gemms, nmajor, case, layout):
    kernels = check(gemms, case, CASES[case], layout)
    if _hopper() and kernels:  # at 128 rows and fewer wgmma does not pay (gpu_wrap.h)
        want = (False, False) if case in NO_COPIES else (True, _copied(case, layout, nmajor))
        assert _ran(kernels) == want, kernels


@pytest.mark.parametrize("layout", ["contiguous", "padded"])
def test_an_unaligned_k_major_a_falls_back(gemms, layout):
    """k = 301: contiguous rows of A are not 16-byte aligned (no map, and a K-major A is
    never copied): cv_gemm_tc whatever B's layout, and no copy of B is made."""
    kernels = check(gemms, "mm_odd_k", ODD_K["mm_odd_k"], layout)
    if _hopper() and kernels:
        assert not any(_ran(kernels)), kernels


def test_padded_a_with_odd_k_runs_wgmma(gemms):
    import torch

    a, b = _args("odd", [(1001, 301), (301, 999)])
    ref = a.astype(np.float64) @ b.astype(np.float64)
    da, db = put_in_layout(a, "padded"), torch.from_numpy(b).cuda()
    out = torch.full(ref.shape, float("nan"), dtype=torch.float32, device="cuda")
    kernels = kernels_launched(lambda: gemms.mm(da, db, out=out))
    assert_close(out.cpu().numpy(), ref, np.float32, 20)
    if _hopper() and kernels:
        assert _ran(kernels) == (True, True), kernels


@pytest.mark.parametrize("case", ["mm_tf32", "mm_tf32_big"])
def test_tf32_policy_over_copies(gemms, case):
    shapes = {"mm_tf32": [(1024, 768), (768, 768)], "mm_tf32_big": [(2048, 1000), (1000, 1536)]}
    kernels = check(gemms, case, shapes[case], "contiguous", tf32=True)
    if _hopper() and kernels:
        assert _ran(kernels) == (True, True), kernels


def test_graph_replays_follow_new_weights(gemms, nmajor):
    """The MLP's launches (two GEMMs, split-K sums; two copies where nmajor is off) replay
    as a CUDA graph from the second call: every call with other weights and inputs gives
    their product. The graph threshold is 2 launches here: without the copies the MLP may
    have fewer than the default 4."""
    import torch

    import cuvil_aot
    from cuvil_aot.runtime import native

    threshold = cuvil_aot.info()["cuda_graph"]
    native.configure(cuda_graph=2)
    try:
        before = cuvil_aot.info()["cuda_graph_stats"]["replays"]
        for i in range(4):
            args = _args("mlp", CASES["mlp"], seed=str(i))
            ref = gemms.mlp.py_func(*[a.astype(np.float64) for a in args])
            dev = [torch.from_numpy(a).cuda() for a in args]
            got = gemms.mlp(*dev).cpu().numpy()
            err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
            assert err < 5e-6, f"call {i}: ||got - ref|| / ||ref|| = {err:.3g}"
        if _hopper():
            assert cuvil_aot.info()["cuda_graph_stats"]["replays"] > before
    finally:
        native.configure(cuda_graph=threshold)


def test_the_knob_keeps_copies_off(gemms):
    from cuvil_aot.runtime import native

    native.configure(cuda_wgmma_transpose=False)
    try:
        kernels = check(gemms, "mm_gpt2_qkv", CASES["mm_gpt2_qkv"], "contiguous")
    finally:
        native.configure(cuda_wgmma_transpose=True)
    assert not any(_ran(kernels)), kernels


def test_a_run_time_loop_runs_wgmma_each_trip(gemms, nmajor):
    """A run-time loop's body plans and launches each kernel in turn (its copies first
    where nmajor is off, gpu_wg_copies.launch_now; the last trip's scratch given back
    before the next)."""
    import torch

    rng = np.random.default_rng(29)
    x = (rng.standard_normal((1024, 768)) * 0.5).astype(np.float32)
    w = (rng.standard_normal((768, 768)) * 0.04).astype(np.float32)
    ref = gemms.repeat.py_func(x.astype(np.float64), w.astype(np.float64), 3)
    dev = [torch.from_numpy(a).cuda() for a in (x, w)]
    kernels = kernels_launched(lambda: gemms.repeat(*dev, 3))
    got = gemms.repeat(*dev, 3).cpu().numpy()
    err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    assert err < 5e-6, f"||got - ref|| / ||ref|| = {err:.3g} ({kernels})"
    if _hopper() and kernels:
        assert _ran(kernels) == (True, not nmajor), kernels
