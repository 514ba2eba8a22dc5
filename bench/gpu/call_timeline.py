"""One cuvil_aot call on the GPU as a timeline: when the host calls into the driver, when
each kernel runs, and where the device waits (issue 23: wall time minus kernel time is
40-75 µs a call on the transformer cases). torch.profiler records the driver API calls
(cuGraphLaunch, cuLaunchKernel, ...) made by any library of the process, and CUPTI the
kernels; a record_function span marks the call.

    python bench/gpu/call_timeline.py [--cases bert_8x128,gpt2_1x128] [--calls 5]

Prints, per case, the last profiled call: every driver call and kernel with its start
(µs from the call's start) and duration, then the totals: host time until the first
kernel starts, device idle time between kernels, kernel time, and the call's wall time.
Before that, over 200 unprofiled calls: the median host time of a call (until it returns,
the device synchronized between calls) and cuvil_aot's CUDA graph counters (replays, node
updates: a replay whose arguments changed updates nodes first, host time before launch).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile, record_function

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import cuvil_aot  # noqa: E402
from bench import gpu_transformers as G  # noqa: E402


def host_and_graphs(fn: Callable[[], object], calls: int = 200) -> str:
    """The median host time of a call and the graph counters' change over `calls` calls."""
    def counters() -> dict[str, int]:
        return dict(cuvil_aot.info()["cuda_graph_stats"])  # type: ignore[call-overload]

    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    before, samples = counters(), []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
        torch.cuda.synchronize()
    after = counters()
    change = {k: after[k] - before[k] for k in after}
    return f"host {statistics.median(samples) * 1e6:.1f} us a call; graphs over {calls}: {change}"


def timeline(fn, calls: int) -> list[tuple[float, float, str, str]]:
    """(start µs, duration µs, 'host'|'kernel', name) of the last call, from its start."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            with record_function(f"call{i}"):
                fn()
                torch.cuda.synchronize()
    events = prof.events()
    span = next(e for e in events if e.name == f"call{calls - 1}")
    t0, t1 = span.time_range.start, span.time_range.end
    rows = []
    for e in events:
        start = e.time_range.start
        if not t0 <= start <= t1 or e is span:
            continue
        kind = "kernel" if e.device_type == torch.autograd.DeviceType.CUDA else "host"
        rows.append((start - t0, e.time_range.end - start, kind, e.name))
    rows.append((0.0, t1 - t0, "call", "whole call"))
    return sorted(rows)


def summary(rows: list[tuple[float, float, str, str]]) -> str:
    kernels = [(s, d) for s, d, kind, _ in rows if kind == "kernel"]
    wall = next(d for _, d, kind, _ in rows if kind == "call")
    if not kernels:
        return f"wall {wall:.1f} us, no kernels seen"
    busy = sum(d for _, d in kernels)
    first = kernels[0][0]
    last_end = max(s + d for s, d in kernels)
    return (f"wall {wall:.1f} us: host until the first kernel {first:.1f}, kernels "
            f"{busy:.1f}, device idle between kernels {last_end - first - busy:.1f}, after "
            f"the last kernel {wall - last_end:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="bert_8x128,gpt2_1x128,bert_1x16")
    parser.add_argument("--calls", type=int, default=5)
    opts = parser.parse_args()
    for case in opts.cases.split(","):
        model, _, _ = G.CASES[case]
        args, _ = G.inputs(case, np.random.default_rng(0))
        dev = [torch.from_numpy(a).cuda() for a in args]
        fn = G.cuvil_model(model)
        print(f"## {case}: {host_and_graphs(lambda fn=fn, dev=dev: fn(*dev))}")
        rows = timeline(lambda fn=fn, dev=dev: fn(*dev), opts.calls)
        print(f"## {case}: {summary(rows)}")
        for start, dur, kind, name in rows:
            print(f"  {start:8.1f} {dur:8.1f}  {kind:6s} {name[:90]}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
