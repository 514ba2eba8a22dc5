"""Compile the bundled models, check each against NumPy in float64, print the speed-up.

    python examples/demo.py

The first run compiles examples/models.py into the cache (~/.cache/cuvil_aot, or
CUVIL_AOT_CACHE_DIR), with CUDA kernels for the GPUs this machine has (none: CPU code
only); later runs load it from there in well under a second.
"""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

import cuvil_aot

sys.path.insert(0, str(Path(__file__).resolve().parent))


def import_models() -> object:
    """Import examples/models.py through the import hook: compiled into the cache once,
    loaded from it on later runs."""
    print("importing examples/models.py (7 functions: compiled on the first run, then "
          "cached) ...", flush=True)
    start = time.perf_counter()
    cuvil_aot.install()
    import models

    how = cuvil_aot.info()["modules"]["models"]["how"]  # type: ignore[index]
    verb = "compiled" if how == "built" else "loaded from the cache"
    print(f"{verb} in {time.perf_counter() - start:.2f} s\n")
    return models


models = import_models()

rng = np.random.default_rng(0)


def f32(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


CASES = {
    "matmul_relu": (models.matmul_relu, lambda: (f32(32, 128), f32(128, 64), f32(64))),
    "lstm_step": (models.lstm_step, lambda: (f32(1, 512), f32(1, 512), f32(1, 512),
                                             f32(512, 2048, scale=0.05),
                                             f32(512, 2048, scale=0.05), f32(2048))),
    "softmax": (models.softmax, lambda: (f32(256, 1000),)),
    "layer_norm": (models.layer_norm, lambda: (f32(256, 768), f32(768), f32(768))),
    "resnet_head": (models.resnet_head, lambda: (f32(8, 512, 7, 7), f32(512, 1000, scale=0.05),
                                                 f32(1000))),
    "ffn_block": (models.ffn_block, lambda: (f32(16, 768), f32(768), f32(768),
                                             f32(768, 3072, scale=0.03), f32(3072),
                                             f32(3072, 768, scale=0.03), f32(768))),
    "elementwise_chain": (models.elementwise_chain, lambda: (f32(1 << 20), f32(1 << 20))),
}


def best_time(fn: object, args: tuple[np.ndarray, ...], repeat: int = 30,
              seconds: float = 0.05) -> float:
    """Median time of a call: at least ``repeat`` calls and ``seconds`` of them (a few
    dozen microsecond calls alone are at the mercy of this machine's other work)."""
    fn(*args)  # type: ignore[operator]  # warm: first touch of outputs, caches
    times: list[float] = []
    total = 0.0
    while len(times) < repeat or total < seconds:
        start = time.perf_counter()
        fn(*args)  # type: ignore[operator]
        times.append(time.perf_counter() - start)
        total += times[-1]
    return float(np.median(times))


def max_error(got: object, ref: object) -> float:
    gots = got if isinstance(got, tuple) else (got,)
    refs = ref if isinstance(ref, tuple) else (ref,)
    return max(float(np.max(np.abs(g - r) / np.maximum(np.abs(r), 1.0)))
               for g, r in zip(gots, refs))


def main() -> int:
    print(f"{'function':<20}{'max rel. error':>16}{'NumPy µs':>12}{'cuvil_aot µs':>14}"
          f"{'speed-up':>10}")
    # Every cuvil_aot timing first, then NumPy's: after a NumPy matmul OpenBLAS's threads
    # keep spinning for a while and would share the cores with cuvil_aot's (README).
    runs = []
    for name, (fn, make) in CASES.items():
        args = make()
        runs.append((name, fn, args, fn(*args), best_time(fn, args) * 1e6))
    failed = 0
    for name, fn, args, got, ours_us in runs:
        err = max_error(got, fn.py_func(*(a.astype(np.float64) for a in args)))
        ok = err < 1e-3
        failed += not ok
        numpy_us = best_time(fn.py_func, args) * 1e6
        print(f"{name:<20}{err:>16.2e}{numpy_us:>12.1f}{ours_us:>14.1f}"
              f"{numpy_us / ours_us:>9.1f}x{'' if ok else '  MISMATCH'}")
    print(textwrap.fill(
        f"\nMedian times of many calls on this machine ({os.cpu_count()} cores, load "
        f"{os.getloadavg()[0]:.1f}). They move with its other work, and NumPy's matmuls run on "
        "OpenBLAS's threads, which keep spinning after each call and share the cores "
        "(README: CUVIL_AOT_NUM_THREADS, OPENBLAS_NUM_THREADS).", 88))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
