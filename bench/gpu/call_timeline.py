"""Where a GPU call's time goes beyond its kernels, for cases of bench/gpu_transformers.py:
the CUDA graph counters over 200 calls (replays, node updates), the host time of a call
without a synchronize (everything before the graph launches), the wall time with one, and
one call's kernels on a timeline (start, duration, gap after the previous one).

    python bench/gpu/call_timeline.py gpt2_8x128,bert_8x128
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import cuvil_aot  # noqa: E402
from bench import gpu_transformers as G  # noqa: E402


def graph_stats() -> dict[str, int]:
    return dict(cuvil_aot.info()["cuda_graph_stats"])  # type: ignore[call-overload]


def host_us(fn: Callable[[], object], calls: int = 200) -> float:
    """Median µs a call takes to return, the device synchronized between calls."""
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
        torch.cuda.synchronize()
    return statistics.median(samples) * 1e6


def timeline(fn: Callable[[], object]) -> list[str]:
    """One call's kernels: start (µs after the first), duration, gap after the last end."""
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    kernels = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                     key=lambda e: e.time_range.start)
    lines, first, end = [], kernels[0].time_range.start, kernels[0].time_range.start
    for e in kernels:
        start, stop = e.time_range.start, e.time_range.end
        lines.append(f"  {start - first:8.1f} +{stop - start:6.1f}  gap {start - end:6.1f}  "
                     f"{e.name[:60]}")
        end = stop
    return lines


def main() -> None:
    for case in sys.argv[1].split(","):
        model, _, _ = G.CASES[case]
        args, _ = G.inputs(case, np.random.default_rng(0))
        dev = [torch.from_numpy(a).cuda() for a in args]
        compiled = G.cuvil_model(model)

        def fn(compiled=compiled, dev=dev):
            return compiled(*dev)

        for _ in range(10):
            fn()
        torch.cuda.synchronize()
        before = graph_stats()
        host = host_us(fn)
        after = graph_stats()
        counts = {k: after[k] - before[k] for k in after}
        print(f"## {case}: wall {G.wall_us(fn):.1f} us, host {host:.1f} us, "
              f"graph counters over 200 calls {counts}")
        print("\n".join(timeline(fn)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
