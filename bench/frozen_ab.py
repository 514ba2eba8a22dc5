"""A transformer case's compiled function on its weights as given and on the same weights
through cuvil_aot.freeze, calls interleaved in one process (bench/cpu_batch1_notes.md,
thirtieth session):

    python bench/frozen_ab.py gpt2_1x128 [pairs]
"""

from __future__ import annotations

import importlib
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from cases import BY_NAME  # noqa: E402

import cuvil_aot as cv  # noqa: E402


def main() -> None:
    case = BY_NAME[sys.argv[1]]
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    fn = getattr(importlib.import_module(case.module), case.model)
    plain = case.make(np.random.default_rng(0))
    first = len(plain) - case.weight_inputs
    frozen = plain[:first] + tuple(cv.freeze(w) for w in plain[first:])
    a, b = fn(*plain), fn(*frozen)
    a, b = (a if isinstance(a, tuple) else (a,)), (b if isinstance(b, tuple) else (b,))
    print("max |plain - frozen|:", max(float(np.abs(x - y).max()) for x, y in zip(a, b)))
    times: dict[str, list[float]] = {"plain": [], "frozen": []}
    for _ in range(pairs):
        for name, args in (("plain", plain), ("frozen", frozen)):
            t0 = time.perf_counter()
            fn(*args)
            times[name].append(time.perf_counter() - t0)
    for name, ts in times.items():
        print(f"{name:6s} median {statistics.median(ts) * 1e6:9.1f} us  best {min(ts) * 1e6:9.1f}")
    ratio = statistics.median(times["frozen"]) / statistics.median(times["plain"])
    print(f"frozen / plain {ratio:.3f}")


if __name__ == "__main__":
    main()
