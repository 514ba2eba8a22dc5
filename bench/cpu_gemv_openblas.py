"""OpenBLAS's own SGEMV (NumPy's ``v @ W``) over GPT-2's four decode weights scaled to
8-48 MiB in all, one after the other, best of 200: the rate a library reaches on weights
that sit between L3 and memory (bench/cpu_batch1_notes.md, tenth session).

    python bench/cpu_gemv_openblas.py
"""

from __future__ import annotations

import time

import numpy as np

SHAPES = [(768, 2304), (768, 768), (768, 3072), (3072, 768)]  # 27 MiB


def best_us(vs: list[np.ndarray], ws: list[np.ndarray], samples: int = 200) -> float:
    best = float("inf")
    for _ in range(samples):
        t0 = time.perf_counter()
        for v, w in zip(vs, ws):
            v @ w
        best = min(best, time.perf_counter() - t0)
    return best * 1e6


def main() -> None:
    rng = np.random.default_rng(0)
    for total_mib in (8, 16, 24, 27, 32, 48):
        scale = total_mib / 27
        ws = [rng.standard_normal((k, int(n * scale))).astype(np.float32) for k, n in SHAPES]
        vs = [rng.standard_normal((1, w.shape[0])).astype(np.float32) for w in ws]
        best_us(vs, ws, 20)  # warm-up
        us = best_us(vs, ws)
        nbytes = sum(w.nbytes for w in ws)
        print(f"{nbytes / 2**20:.1f} MiB: best {us:.0f} us = {nbytes / us / 1e3:.0f} GB/s")


if __name__ == "__main__":
    main()
