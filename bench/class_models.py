"""A model written as classes costs no more than the same model written as functions:
bench/class_gpt2.py's GPT-2-small block (instances, symbolic sizes, ``n_head`` an int
attribute) against bench/transformer_models.py's ``gpt2_block`` (arguments, sizes fixed in
its signature) on the same weights, and NumPy running the class code; also each module's
first build (a fresh cache). One process, calls interleaved round by round.

    python bench/class_models.py > bench/class_models.txt
"""

import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

os.environ["CUVIL_AOT_CACHE_DIR"] = tempfile.mkdtemp(prefix="class_models_")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import class_gpt2 as cg  # noqa: E402
from bench import transformer_models as tm  # noqa: E402


def weights(rng):
    f = lambda *s: (0.02 * rng.standard_normal(s)).astype(np.float32)  # noqa: E731
    c = 768
    return [1 + f(c), f(c), f(c, 3 * c), f(3 * c), f(c, c), f(c), 1 + f(c), f(c),
            f(c, 4 * c), f(4 * c), f(4 * c, c), f(c)]


def block_of(w):
    return cg.Block(cg.LayerNorm(w[0], w[1]),
                    cg.Attention(cg.Linear(w[2], w[3]), cg.Linear(w[4], w[5]), 12),
                    cg.LayerNorm(w[6], w[7]),
                    cg.MLP(cg.Linear(w[8], w[9]), cg.Linear(w[10], w[11])))


def timed(fn, seconds=0.4):
    samples, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end or len(samples) < 5:
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e6, min(samples) * 1e6


def interleaved(calls):
    """µs a call of each of ``calls`` (name -> function), the least of three rounds'
    medians, the calls interleaved round by round so the machine's drift hits all alike
    (NumPy's, the slowest, timed for less)."""
    rounds = {name: [] for name in calls}
    for _ in range(3):
        for name, call in calls.items():
            rounds[name].append(timed(call, 0.2 if name == "numpy" else 0.4)[0])
    return {name: min(r) for name, r in rounds.items()}


def main():
    rng = np.random.default_rng(0)
    w = weights(rng)
    blk = block_of(w)
    print(f"# class_models: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"numpy {np.__version__}")
    x = rng.standard_normal((1, 8, 768)).astype(np.float32)
    for name, call in (("classes", lambda: blk(x)), ("functions", lambda: tm.gpt2_block(x, *w))):
        t0 = time.perf_counter()
        call()
        print(f"first call (build, fresh cache) {name}: {time.perf_counter() - t0:.1f} s")
    print("\n| batch × tokens | classes µs | functions µs | NumPy (classes) µs | "
          "classes / functions | NumPy / classes | max rel. diff classes vs functions |")
    print("|---|---|---|---|---|---|---|")
    for b, t in ((1, 16), (1, 128), (8, 128)):
        x = rng.standard_normal((b, t, 768)).astype(np.float32)
        got, ref = blk(x), tm.gpt2_block(x, *w)
        diff = float(np.abs(got - ref).max() / np.abs(ref).max())
        rounds = {"c": [], "f": [], "n": []}
        for _ in range(3):  # interleaved: the machine's drift hits all alike
            rounds["c"].append(timed(lambda x=x: blk(x)))
            rounds["f"].append(timed(lambda x=x: tm.gpt2_block(x, *w)))
            rounds["n"].append(timed(lambda x=x: cg.Block.__call__.py_func(blk, x), 0.2))
        c, f, n = (min(r)[0] for r in rounds.values())  # the round with the least drift
        print(f"| {b} × {t} | {c:,.0f} | {f:,.0f} | {n:,.0f} | {c / f:.2f} | {n / c:.2f} | "
              f"{diff:.1e} |")


if __name__ == "__main__":
    main()
