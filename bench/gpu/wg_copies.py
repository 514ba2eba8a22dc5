"""GPT-2's projections as ``x @ w + b`` of (in, out) weights (B N-major: the wgmma main loop
over a transposed copy, gpu_wg_copies.py) against the same product with the weight stored
(out, in) (``x @ w.T + b``: wgmma, no copy) and against ``x @ w + b`` with the copies off
(configure(cuda_wgmma_transpose=False), as CUVIL_AOT_CUDA_WGMMA_TRANSPOSE=0: cv_gemm_tc),
at rows = batch x 128 tokens. Device time per call from CUDA events around back-to-back
calls (median of rounds), TFLOP/s of the GEMM, and the copy kernel's own time per call
(torch's profiler, where CUPTI is there). The copy moves the weight's bytes twice (read,
write): its GB/s is 8 bytes an element over its time.

    PYTHONPATH=. python bench/gpu/wg_copies.py [--rows 128,1024] [--calls 100] [--rounds 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from functools import partial
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from conftest import compile_source  # noqa: E402
from gpu_harness import device_arch  # noqa: E402

sys.path.insert(0, str(ROOT))
from bench.gpu.device_timing import device_us  # noqa: E402
from cuvil_aot.runtime import native  # noqa: E402

SOURCE = '''
import cuvil_aot as cv

@cv.optimize
def kn(x: cv.f32["M", "K"], w: cv.f32["K", "N"], b: cv.f32["N"]):
    return x @ w + b

@cv.optimize
def nk(x: cv.f32["M", "K"], w: cv.f32["N", "K"], b: cv.f32["N"]):
    return x @ w.T + b
'''

SHAPES = [(768, 2304), (768, 768), (768, 3072), (3072, 768)]  # (k, n): GPT-2 small




def kernel_us(fn, calls: int = 20) -> dict[str, float]:
    """Device time per call of each kernel ``fn`` launches (torch's profiler), {} without
    CUPTI."""
    from torch.profiler import ProfilerActivity, profile

    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
    except RuntimeError:
        return {}
    return {e.key: e.device_time_total / calls for e in prof.key_averages()
            if e.device_time_total > 0}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="128,1024")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    mod = compile_source(Path(tempfile.mkdtemp()), SOURCE, cuda_archs=(device_arch(),))
    rng = np.random.default_rng(0)
    print(f"{torch.cuda.get_device_name()}, {opts.calls} calls x {opts.rounds} rounds (median)")
    print(f"{'rows':>5} {'k -> n':>10} {'case':>18} {'us':>8} {'TFLOP/s':>8} {'copy us':>8} "
          f"{'copy GB/s':>9} {'max err':>9}")
    for m in (int(r) for r in opts.rows.split(",")):
        for k, n in SHAPES:
            x = rng.standard_normal((m, k)).astype(np.float32)
            w = (rng.standard_normal((k, n)) * 0.02).astype(np.float32)
            b = rng.standard_normal(n).astype(np.float32)
            want = x.astype(np.float64) @ w.astype(np.float64) + b
            dx, dw, db = (torch.from_numpy(a).cuda() for a in (x, w, b))
            dwt = dw.t().contiguous()
            out = torch.empty((m, n), device="cuda")
            cases = [("x @ w (copy)", partial(mod.kn, dx, dw, db, out=out), True),
                     ("x @ w.T (no copy)", partial(mod.nk, dx, dwt, db, out=out), True),
                     ("x @ w (copies off)", partial(mod.kn, dx, dw, db, out=out), False)]
            for name, fn, copies in cases:
                native.configure(cuda_wgmma_transpose=copies)
                try:
                    us = device_us(fn, opts.calls, opts.rounds)
                    per = kernel_us(fn)
                finally:
                    native.configure(cuda_wgmma_transpose=True)
                copy = per.get("cv_transpose_f32", 0.0)
                err = np.abs(out.cpu().numpy() - want).max() / np.abs(want).max()
                gbs = f"{8 * k * n / copy / 1e3:9.0f}" if copy else f"{'-':>9}"
                print(f"{m:5d} {f'{k}->{n}':>10} {name:>18} {us:8.2f} "
                      f"{2 * m * n * k / us / 1e6:8.1f} {copy:8.2f} {gbs} {err:9.1e}")


if __name__ == "__main__":
    main()
