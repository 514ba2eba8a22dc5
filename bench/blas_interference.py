"""A cuvil_aot call right after NumPy matmuls in the same process: OpenBLAS's threads keep
spinning for a while after each matmul and share the cores with cuvil_aot's thread pool.
The LSTM step at batch 1, timed alone and right after five NumPy (1x512) @ (512x2048)
products, 40 rounds of 30 calls each; run it once as is and once with
OPENBLAS_NUM_THREADS=1 (the README's advice):

    python bench/blas_interference.py
    OPENBLAS_NUM_THREADS=1 python bench/blas_interference.py
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import models  # noqa: E402

import cuvil_aot  # noqa: E402


def times(fn, args, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn(*args)
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    cuvil_aot.compile_module(models).load()
    rng = np.random.default_rng(0)
    shapes = [(1, 512), (1, 512), (1, 512), (512, 2048), (512, 2048), (2048,)]
    args = [(rng.standard_normal(s) * k).astype(np.float32)
            for s, k in zip(shapes, [1, 1, 1, 0.05, 0.05, 1])]
    w = rng.standard_normal((512, 2048)).astype(np.float32)
    v = rng.standard_normal((1, 512)).astype(np.float32)
    times(models.lstm_step, args, 200)
    alone, after = [], []
    for _ in range(40):
        alone += times(models.lstm_step, args, 30)
        for _ in range(5):
            v @ w
        after += times(models.lstm_step, args, 30)
    print(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}: "
          f"lstm_step b1 {np.median(alone) * 1e6:.1f} us in the rounds' first halves, "
          f"{np.median(after) * 1e6:.1f} us right after the NumPy matmuls")


if __name__ == "__main__":
    main()
