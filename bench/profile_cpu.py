"""Where a case's cuvil_aot call spends its time on the CPU, per function (kernel).

    python bench/profile_cpu.py gpt2_decode_1 [--seconds 5] [--top 25]

Calls the case's compiled function in a loop for --seconds (after a warm-up) and, with
`perf` on the PATH, samples every thread of the process (`perf record -g` is not needed:
the generated kernels are leaf functions, the GEMM's are named after the path they
take). Prints the wall time per call, then the top symbols with their share of the
samples and the CPU time per call that means (summed over threads, so it can exceed the
wall time; an idle pool worker's spin shows as `worker_main`). Without perf it prints the
time per call only. The runtime's symbols show only in a build that keeps them (the
cmake build of native/ does; the wheel's is stripped).

Kernels are named `f{function}_s{signature}_k{index}` in the generated code; `python -m
cuvil_aot show MODULE:FUNCTION` (from outside the checkout) lists what each index fuses.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
from cases import BY_NAME  # noqa: E402

RATE = 4999
"""perf samples per second of each thread's CPU time"""


def call_loop(case_name: str, seconds: float) -> tuple[float, int]:
    """Run the case for `seconds` after a warm-up: the best µs per call of 20 slices, and
    the number of calls (the warm-up's included)."""
    case = BY_NAME[case_name]
    fn = getattr(importlib.import_module(case.module), case.model)
    inputs = case.make(np.random.default_rng(0))
    for _ in range(20):
        fn(*inputs)
    best, calls = float("inf"), 20
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        for _ in range(20):
            fn(*inputs)
        best = min(best, (time.perf_counter() - t0) / 20)
        calls += 20
    return best * 1e6, calls


def report(data: Path, calls: int, top: int) -> None:
    """Samples per symbol, over all threads, as µs of CPU time per call."""
    out = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--no-children", "-n",
                          "--sort", "dso,sym", "--percent-limit", "0.3"],
                         capture_output=True, text=True, check=True).stdout
    rows = [line.split(None, 4) for line in out.splitlines()
            if line.strip() and not line.startswith("#")]
    print(f"{'share':>7} {'CPU µs/call':>11}  symbol (dso)")
    for row in rows[:top]:
        if len(row) < 5 or not row[0].endswith("%"):
            continue
        share, samples, dso, sym = float(row[0][:-1]), int(row[1]), row[2], row[4].strip()
        print(f"{share:6.1f}% {samples / RATE / calls * 1e6:11.1f}  {sym}  ({dso})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case", choices=sorted(BY_NAME))
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner or not shutil.which("perf"):
        best, calls = call_loop(args.case, args.seconds)
        print(f"{args.case}: best {best:.1f} µs per call; {calls} calls")
        return
    with tempfile.TemporaryDirectory(prefix="cuvil_profile-") as tmp:
        data = Path(tmp) / "perf.data"
        print(f"{args.case}: best {call_loop(args.case, 2.0)[0]:.1f} µs per call without perf")
        inner = subprocess.run(["perf", "record", "-q", "-F", str(RATE), "-o", str(data), "--",
                                sys.executable, __file__, args.case, "--inner",
                                "--seconds", str(args.seconds)],
                               check=True, env=dict(os.environ), capture_output=True, text=True)
        print(inner.stdout.strip(), "(under perf)")
        report(data, int(inner.stdout.split()[-2]), args.top)


if __name__ == "__main__":
    main()
