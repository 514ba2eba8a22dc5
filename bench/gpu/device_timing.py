"""Device time of a GPU call, for the bench/gpu scripts: CUDA events around ``calls``
back-to-back calls, the median over ``rounds`` of the time per call (µs). Back to back,
the host's cost of a call hides behind the device's work wherever the kernels are longer
than it; where they are not, this is the host's cost (see call_timeline.py)."""

from __future__ import annotations

import statistics
from collections.abc import Callable

import torch


def device_us(fn: Callable[[], object], calls: int, rounds: int, warmup: int = 10) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(rounds):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3 / calls)
    return statistics.median(times)


def copy_gbps() -> float:
    """Device-to-device copy rate: bytes read + written per second of a 1 GiB copy (GB/s)."""
    src = torch.empty(1 << 28, device="cuda")
    dst = torch.empty_like(src)
    return 2 * src.nbytes / device_us(lambda: dst.copy_(src), 10, 5) / 1e3
