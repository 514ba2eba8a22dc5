"""Where a cuvil_aot call's device time goes: the kernels of one call of a case of
bench/gpu_transformers.py, from torch.profiler (CUPTI sees the kernels cuvil_aot launches
through the driver), each with its device time per call, beside the wall time per call.

    python bench/gpu/kernel_profile.py [--cases bert_1x16,gpt2_decode_1] [--calls 20]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from bench import gpu_transformers as G  # noqa: E402


def kernel_sequence(fn) -> list[tuple[str, float]]:
    """The kernels of one call in the order they ran, each with its device µs."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return [(e.name, e.device_time) for e in sorted(kernels, key=lambda e: e.time_range.start)]


def kernel_times(fn, calls: int) -> dict[str, tuple[int, float]]:
    """Kernel name -> (launches per call, device µs per call)."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    totals: dict[str, list[float]] = defaultdict(list)
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            totals[event.name].append(event.device_time)
    return {name: (len(ts) // calls, sum(ts) / calls) for name, ts in totals.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="bert_1x16,bert_8x128,gpt2_decode_1")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--sequence", action="store_true",
                        help="also list one call's kernels in launch order")
    opts = parser.parse_args()
    for case in opts.cases.split(","):
        model, _, _ = G.CASES[case]
        args, _ = G.inputs(case, np.random.default_rng(0))
        dev = [torch.from_numpy(a).cuda() for a in args]
        for name, model_fn in [("cuvil_aot", G.cuvil_model(model)),
                               ("PyTorch eager", G.torch_model(model))]:
            def fn(model_fn=model_fn, dev=dev):
                return model_fn(*dev)
            wall = G.wall_us(fn)
            times = kernel_times(fn, opts.calls)
            device = sum(us for _, us in times.values())
            print(f"## {case}, {name}: wall {wall:.1f} us per call, kernels {device:.1f} us")
            for kernel, (count, us) in sorted(times.items(), key=lambda kv: -kv[1][1])[:25]:
                print(f"  {us:9.1f} us  x{count:<3d} {kernel[:110]}")
            if opts.sequence:
                print("  one call, in order:")
                for kernel, us in kernel_sequence(fn):
                    print(f"    {us:9.1f} us  {kernel[:100]}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
