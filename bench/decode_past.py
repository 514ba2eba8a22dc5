"""The GPT-2 decode step by the length of its past (issue 22): the cache appended with
``np.concatenate`` (``transformer_models.gpt2_decode``) against preallocated caches written
in place (``gpt2_decode_inplace``), each step in a process of its own (times on the 2-core
VMs are bimodal from process to process: two processes each), batch 1, one OpenBLAS thread.
Median µs a call over 300 calls after 50.

    python bench/decode_past.py [--past 63,255,1023,2047] > bench/decode_past.txt
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ("concatenate", "in place")


def one(variant: str, past: int) -> float:
    sys.path.insert(0, str(ROOT))
    from bench import transformer_models as T

    rng = np.random.default_rng(0)

    def f32(*shape: int, scale: float = 0.05) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    h, ff = T.HIDDEN, T.FFN
    w = [f32(h) + 1, f32(h), f32(h, 3 * h), f32(3 * h), f32(h, h), f32(h), f32(h) + 1, f32(h),
         f32(h, ff), f32(ff), f32(ff, h), f32(h)]
    x, k_past, v_past = f32(1, 1, h), f32(1, T.HEADS, past, T.HEAD), f32(1, T.HEADS, past, T.HEAD)
    if variant == "concatenate":
        def call() -> object:
            return T.gpt2_decode(x, k_past, v_past, *w)
    else:
        k_cache = np.zeros((1, T.HEADS, past + 1, T.HEAD), np.float32)
        v_cache = k_cache.copy()
        k_cache[:, :, :past], v_cache[:, :, :past] = k_past, v_past

        def call() -> object:
            return T.gpt2_decode_inplace(x, k_cache, v_cache, past, *w)
    for _ in range(50):
        call()
    spent = []
    for _ in range(300):
        t = time.perf_counter()
        call()
        spent.append(time.perf_counter() - t)
    return statistics.median(spent) * 1e6


def cpu_name() -> str:
    """The CPU's model name (Linux), else the machine type."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--past", default="63,255,1023,2047")
    ap.add_argument("--one", nargs=2, metavar=("VARIANT", "PAST"), help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.one:
        print(f"{one(opts.one[0], int(opts.one[1])):.0f}")
        return
    pasts = [int(p) for p in opts.past.split(",")]
    rows = {v: [] for v in VARIANTS}
    for p in pasts:
        for v in VARIANTS:
            runs = [subprocess.run([sys.executable, __file__, "--one", v, str(p)], check=True,
                                   capture_output=True, text=True).stdout.strip()
                    for _ in range(2)]
            rows[v].append(" / ".join(runs))
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cpu_name()}, "
          f"{os.cpu_count()} CPUs: GPT-2 decode step, batch 1, µs a call (median of 300; "
          "two processes each)\n")
    print("| past positions | " + " | ".join(map(str, pasts)) + " |")
    print("|---|" + "---|" * len(pasts))
    for v in VARIANTS:
        print(f"| {v} | " + " | ".join(rows[v]) + " |")


if __name__ == "__main__":
    main()
