"""Int8 against float32 weights in the GPT-2 decode projections at batch 1 (issue 24):
768->2304, 768->768, 768->3072, 3072->768, each a compiled ``x @ w.T + b`` on torch CUDA
tensors; per channel and per group of 128 for int8. Device time per call from CUDA events
around 200 back-to-back calls (median of 5 rounds), GB/s of the weight's bytes (int8: q
and s; float32: w) at that time, and max |got - want| / max |want| against float64 of the
weight as computed (the dequantized one for int8). The issue's target: the int8 GEMV at
>= 80% of device-to-device copy bandwidth (H200: ~4.2 TB/s), so ~3.4 TB/s of weight bytes
once the weight is big enough to hide the launch (it is not at these sizes: 2.36 MB in
0.56 us at 4.2 TB/s, against a few us of launch and one memory round trip).

`kernel us` is the device time of the call's kernels alone (torch.profiler: CUPTI sees the
kernels cuvil_aot launches through the driver), the calls rotating over enough copies of
the weight (> 2x the L2) that each is read from HBM; `kernel GB/s` is the weight's bytes
over it, `of copy` that against the device-to-device copy rate measured in the same run
(bytes read + written over the time of a 1 GiB copy). Two larger projections (a 7B
model's 4096 -> 4096 and 4096 -> 11008) show the kernel where the launch no longer hides it.

    PYTHONPATH=. python bench/gpu/q8_gemv.py [--calls 200] [--rounds 5] [--m 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from conftest import compile_source  # noqa: E402
from gpu_harness import device_arch  # noqa: E402

sys.path.insert(0, str(ROOT))
import cuvil_aot as cv  # noqa: E402
from bench.gpu.device_timing import copy_gbps, device_us  # noqa: E402

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def fp32(x: cv.f32["M", "K"], w: cv.f32["N", "K"], b: cv.f32["N"]):
    return x @ w.T + b

@cv.optimize
def int8(x: cv.f32["M", "K"], q: cv.i8["N", "K"], s: cv.f32["N"], b: cv.f32["N"]):
    return x @ (q.astype(np.float32) * s[:, None]).T + b

@cv.optimize
def int8_g128(x: cv.f32["M", "K"], q: cv.i8["N", "K"], s: cv.f32["N", "G"], b: cv.f32["N"]):
    n, k = q.shape
    return x @ (q.reshape(n, k // 128, 128) * s[:, :, None]).reshape(n, k).T + b
'''

SHAPES = [(768, 2304), (768, 768), (768, 3072), (3072, 768), (4096, 4096), (4096, 11008)]
"""(k, n): GPT-2's decode projections, then two of a 7B model's"""
L2_ROTATION_BYTES = 256 << 20  # weight copies rotated through: several times the 50 MB L2


def kernel_us(fn, arg_sets: list, calls: int) -> float:
    """Device time of the kernels per call, calls rotating over arg_sets."""
    for args in arg_sets[:4]:
        fn(args)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            fn(arg_sets[i % len(arg_sets)])
        torch.cuda.synchronize()
    return sum(e.device_time for e in prof.events()
               if e.device_type == torch.autograd.DeviceType.CUDA) / calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--m", type=int, default=1)
    parser.add_argument("--only", help="one shape, K,N (e.g. for ncu)")
    opts = parser.parse_args()
    mod = compile_source(Path(tempfile.mkdtemp()), SOURCE, cuda_archs=(device_arch(),))
    rng = np.random.default_rng(0)
    print(f"{torch.cuda.get_device_name()}, m = {opts.m}, {opts.calls} calls x "
          f"{opts.rounds} rounds (median)")
    copy = copy_gbps()
    print(f"device-to-device copy: {copy:.0f} GB/s")
    print(f"{'k -> n':>12} {'weights':>10} {'call us':>8} {'GB/s':>8} {'kernel us':>9} "
          f"{'kernel GB/s':>11} {'of copy':>7} {'max err':>9}")
    shapes = [tuple(map(int, opts.only.split(',')))] if opts.only else SHAPES
    for k, n in shapes:
        x = rng.standard_normal((opts.m, k)).astype(np.float32)
        w = (rng.standard_normal((n, k)) * 0.02).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        cases = [("fp32", mod.fp32, [x, w, b], w.astype(np.float64), w.nbytes)]
        for name, fn, group in (("int8", mod.int8, None), ("int8 g128", mod.int8_g128, 128)):
            q, s = cv.quantize_weights(w, group=group)
            wq = q.astype(np.float64) * (s[:, None] if group is None else
                                         np.repeat(s.astype(np.float64), group, axis=1))
            cases.append((name, fn, [x, q, s, b], wq, q.nbytes + s.nbytes))
        for name, fn, args, wd, nbytes in cases:
            dev = [torch.from_numpy(a).cuda() for a in args]
            out = torch.empty((opts.m, n), device="cuda")
            us = device_us(lambda f=fn, d=dev, o=out: f(*d, out=o), opts.calls, opts.rounds)
            want = x.astype(np.float64) @ wd.T + b
            err = np.abs(out.cpu().numpy() - want).max() / np.abs(want).max()
            copies = [[torch.from_numpy(a).cuda() if a.ndim == 2 else d for a, d in zip(args, dev)]
                      for _ in range(max(2, L2_ROTATION_BYTES // nbytes))]
            kus = kernel_us(lambda d, f=fn, o=out: f(*d, out=o), copies, opts.calls)
            kbw = nbytes / kus / 1e3
            print(f"{f'{k}->{n}':>12} {name:>10} {us:8.2f} {nbytes / us / 1e3:8.0f} {kus:9.2f} "
                  f"{kbw:11.0f} {kbw / copy:7.0%} {err:9.1e}")
            del copies


if __name__ == "__main__":
    main()
