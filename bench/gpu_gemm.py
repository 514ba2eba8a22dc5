"""GPU GEMM main loops (issue 6): correctness against float64 and device time against cuBLAS.

Checks every case on fresh random data into a NaN-poisoned out= array: all elements written,
||out - ref|| / ||ref|| at float32 level (the 3xTF32 tensor-core loop must not show TF32's
~3e-4). Cases cover both main loops: aligned operands (tensor cores, B n- or k-contiguous,
ragged m/n/k through padded views, batches, two terms) and misaligned ones (SIMT fallback).
Then times ours against torch.mm (cuBLAS SGEMM, TF32 off) with CUDA events; table last.

    python bench/gpu_gemm.py [OUTDIR]
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from conftest import compile_source  # noqa: E402
from gpu_harness import device_arch  # noqa: E402

from bench.gpu.device_timing import device_us  # noqa: E402

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def gemm_bias_relu(x: cv.f32["M", "K"], w: cv.f32["K", "N"], b: cv.f32["N"]):
    return np.maximum(0, x @ w + b)

@cv.optimize
def mm(a: cv.f32["M", "K"], b: cv.f32["K", "N"]):
    return a @ b

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
'''

FP32_TOL = 5e-6  # ||out - ref|| / ||ref||: float32 accumulation lands near 1e-7..1e-6


def rand(shape: tuple[int, ...], scale: float = 1.0, layout: str = "c") -> torch.Tensor:
    """Fresh normal data. layout "c": contiguous; "pad": last axis padded to a multiple of 4
    (aligned rows, ragged sizes); "mis": one element of offset (misaligned: SIMT path)."""
    last = shape[-1]
    if layout == "c":
        return torch.randn(shape, device="cuda") * scale
    if layout == "pad":
        store = torch.randn((*shape[:-1], (last + 3) // 4 * 4 + 4), device="cuda") * scale
        return store[..., :last]
    store = torch.randn((*shape[:-1], last + 1), device="cuda") * scale
    return store[..., 1:]


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    if not torch.isfinite(out).all():
        return float("nan")
    d = out.double() - ref
    return float(d.norm() / ref.norm().clamp_min(1e-300))


def check_cases(mod: Any) -> list[dict[str, Any]]:
    rows = []

    def case(name: str, fn: Callable[..., Any], args: list[torch.Tensor],
             ref_fn: Callable[..., torch.Tensor]) -> None:
        ref = ref_fn(*[a.double() for a in args])
        out = torch.full(ref.shape, float("nan"), device="cuda")
        fn(*args, out=out)
        torch.cuda.synchronize()
        err = rel_err(out, ref)
        fp32 = rel_err(ref_fn(*args), ref)  # torch in float32 (cuBLAS SGEMM)
        ok = err == err and err < max(FP32_TOL, 4 * fp32)
        rows.append({"case": name, "err": err, "torch_fp32_err": fp32, "ok": ok})
        print(f"{'ok  ' if ok else 'FAIL'} {name}: err {err:.2e} (torch fp32 {fp32:.2e})",
              flush=True)

    relu = torch.relu
    gbr = lambda x, w, b: relu(x @ w + b)  # noqa: E731
    for m, k, n, lay in [(4096, 1024, 4096, "c"), (1537, 999, 1543, "pad"),
                         (1536, 3, 1600, "pad"), (2000, 1, 2000, "pad"),
                         (1000, 999, 1003, "c"), (1537, 999, 1543, "mis")]:
        x, w, b = rand((m, k), 1, lay), rand((k, n), 0.03, lay), rand((n,), 0.1)
        case(f"gemm_bias_relu {m}x{k}x{n} {lay}", mod.gemm_bias_relu, [x, w, b], gbr)
    a, bt = rand((2048, 515), 1, "pad"), rand((2053, 515), 1, "pad")
    case("mm_t 2048x515x2053 pad (B k-contiguous)", mod.mm_t, [a, bt], lambda a, b: a @ b.T)
    a, bt = rand((2048, 515), 1, "c"), rand((2053, 515), 1, "c")
    case("mm_t 2048x515x2053 c (unaligned rows: SIMT)", mod.mm_t, [a, bt],
         lambda a, b: a @ b.T)
    a, b = rand((16, 300, 129), 1, "pad"), rand((16, 129, 520), 1, "pad")
    case("bmm 16x300x129x520 pad", mod.bmm, [a, b], lambda a, b: a @ b + 1)
    a, b = rand((2, 2048, 256), 1, "c"), rand((2, 256, 2048), 1, "c")
    case("bmm 2x2048x256x2048 c", mod.bmm, [a, b], lambda a, b: a @ b + 1)
    x, h = rand((1536, 260)), rand((1536, 100))
    wx, wh, bias = rand((260, 1536), 0.06), rand((100, 1536), 0.1), rand((1536,))
    case("two_terms 1536x(260+100)x1536", mod.two_terms, [x, h, wx, wh, bias],
         lambda x, h, wx, wh, b: (x @ wx + h @ wh + b) * 0.5)
    # A transposed (m contiguous): the host must pick SIMT
    at, b = rand((777, 1600), 1, "c").T, rand((777, 1700), 1, "c")
    case("mm A.T 1600x777x1700 (A m-contiguous: SIMT)", mod.mm, [at, b], lambda a, b: a @ b)
    return rows




gemm_us = partial(device_us, calls=20, rounds=7, warmup=3)


def time_shape(mod: Any, m: int, k: int, n: int) -> dict[str, Any]:
    x, w, b = rand((m, k)), rand((k, n), 0.03), rand((n,), 0.1)
    xm = rand((m, k), 1, "mis")  # the same shape through the SIMT loop
    out = torch.empty((m, n), device="cuda")
    flop = 2.0 * m * n * k
    t = {"ours": gemm_us(lambda: mod.gemm_bias_relu(x, w, b, out=out)),
         "ours_simt": gemm_us(lambda: mod.gemm_bias_relu(xm, w, b, out=out)),
         "cublas_mm": gemm_us(lambda: torch.mm(x, w, out=out)),
         "torch_addmm_relu": gemm_us(lambda: torch.relu(torch.addmm(b, x, w)))}
    return {"shape": f"{m}x{k}x{n}", **{f"{key}_us": v for key, v in t.items()},
            **{f"{key}_tflops": flop / v / 1e6 for key, v in t.items()}}


def timings(mod: Any) -> list[dict[str, Any]]:
    rows = []
    for m, k, n in [(4096, 1024, 4096), (4096, 4096, 4096), (2048, 2048, 2048),
                    (8192, 1024, 8192), (1536, 768, 3072)]:
        rows.append(time_shape(mod, m, k, n))
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False  # the bar is fp32 SGEMM
    torch.manual_seed(0)
    arch = device_arch()
    mod = compile_source(Path(tempfile.mkdtemp()), SOURCE, cuda_archs=(arch,))
    print(f"{torch.cuda.get_device_name()} {arch}", flush=True)
    checks = check_cases(mod)
    times = timings(mod)
    (out_dir / "gpu_gemm.json").write_text(json.dumps({"checks": checks, "times": times},
                                                      indent=2))
    bad = [c["case"] for c in checks if not c["ok"]]
    print(f"\nchecks: {len(checks) - len(bad)}/{len(checks)} ok" + (f"; FAILED: {bad}" if bad
                                                                    else ""))
    print(f"{'m x k x n':>16} {'ours':>8} {'simt':>8} {'cuBLAS':>8} {'addmm+relu':>10}  "
          "us (TFLOP/s ours / cuBLAS; ours/cuBLAS)")
    for r in times:
        print(f"{r['shape']:>16} {r['ours_us']:8.1f} {r['ours_simt_us']:8.1f} "
              f"{r['cublas_mm_us']:8.1f} {r['torch_addmm_relu_us']:10.1f}  "
              f"({r['ours_tflops']:.1f} / {r['cublas_mm_tflops']:.1f}; "
              f"{r['ours_us'] / r['cublas_mm_us']:.2f}x)")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
