"""Interleaved A/B of native runtime builds on a whole benchmark case.

    python bench/ab_native.py CASE /tmp/a.so /tmp/b.so [--turns 10] [--seconds 0.5]

Each turn starts one process per build (in alternating order), which loads that build as
`cuvil_aot.runtime.native`, warms the case's compiled function up and times calls for
--seconds; the script prints, per build, the median over turns of each turn's median and
the best call seen. Alternating short turns spreads the other work on a shared machine
over both builds; only differences seen in several runs mean anything. Build each
variant with cmake and copy its .so aside:

    cmake -S . -B /tmp/rtb -G Ninja -DPython_EXECUTABLE=$(which python)
    cmake --build /tmp/rtb && cp /tmp/rtb/native*.so /tmp/a.so
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import importlib, importlib.machinery, importlib.util, json, statistics, sys, time
sys.path[:0] = [{here!r}, {root!r}]
spec = importlib.util.spec_from_file_location(
    "cuvil_aot.runtime.native", {so!r},
    loader=importlib.machinery.ExtensionFileLoader("cuvil_aot.runtime.native", {so!r}))
native = importlib.util.module_from_spec(spec)
sys.modules["cuvil_aot.runtime.native"] = native
spec.loader.exec_module(native)
import cuvil_aot.runtime
cuvil_aot.runtime.native = native
import numpy as np
from cases import BY_NAME
case = BY_NAME[{case!r}]
fn = getattr(importlib.import_module(case.module), case.model)
inputs = case.make(np.random.default_rng(0))
for _ in range(20):
    fn(*inputs)
times = []
end = time.perf_counter() + {seconds}
while time.perf_counter() < end:
    t0 = time.perf_counter()
    fn(*inputs)
    times.append(time.perf_counter() - t0)
print(json.dumps([statistics.median(times), min(times)]))
"""


def turn(case: str, so: str, seconds: float) -> tuple[float, float]:
    code = CHILD.format(here=str(HERE), root=str(HERE.parent), so=os.path.abspath(so),
                        case=case, seconds=seconds)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{so}: {proc.stderr[-2000:]}")
    med, best = json.loads(proc.stdout.strip().splitlines()[-1])
    return med, best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case")
    ap.add_argument("builds", nargs="+")
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=0.5)
    args = ap.parse_args()
    meds: dict[str, list[float]] = {b: [] for b in args.builds}
    bests: dict[str, list[float]] = {b: [] for b in args.builds}
    for t in range(args.turns):
        for so in args.builds if t % 2 == 0 else reversed(args.builds):
            med, best = turn(args.case, so, args.seconds)
            meds[so].append(med)
            bests[so].append(best)
    base = statistics.median(meds[args.builds[0]])
    print(f"{args.case}, {args.turns} turns of {args.seconds} s:")
    for so in args.builds:
        med = statistics.median(meds[so])
        print(f"  {so}: median {med * 1e6:9.1f} us  best {min(bests[so]) * 1e6:9.1f} us  "
              f"x{med / base:.3f}")


if __name__ == "__main__":
    main()
