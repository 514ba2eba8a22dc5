"""GEMM of the native runtime (cuvil_aot._runtime._gemm, store epilogue) vs NumPy.

Run with OpenBLAS on its own CPU detection, from outside the repo root:

    cd /tmp && env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
        python /work/main/bench/gemm_native.py [--dtype float32] [--level N]

Prints GFLOP/s (best of several timed runs) for cuvil's GEMM, NumPy's `a @ b`
(which allocates its output) and `np.matmul(a, b, out=out)` (which does not,
like cuvil's call here), and the effective bandwidth for streaming B.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from cuvil_aot import _runtime as rt

SHAPES = [  # m, k, n
    (4096, 1024, 4096),
    (32, 128, 64),
    (256, 512, 2048),
    (1, 512, 2048),
    (1, 768, 3072),
    (2048, 768, 3072),
    (4, 768, 3072),
    (16, 768, 3072),
]


def best_time(fn, budget: float = 0.5) -> float:
    fn()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    reps = max(1, min(10_000, int(0.05 / once)))
    best = float("inf")
    deadline = time.perf_counter() + budget
    while True:
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
        if time.perf_counter() > deadline:
            return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--level", type=int, default=0, help="cpu_level for cuvil (0: detected)")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    rt.configure(num_threads=args.threads, cpu_level=args.level)
    info = rt.info()
    print(f"cuvil: cpu_level {info['cpu_level']}, {info['num_threads']} threads, {args.dtype}")
    rng = np.random.default_rng(0)
    dt = np.dtype(args.dtype)
    cases = []
    for m, k, n in SHAPES:
        a = rng.standard_normal((m, k)).astype(dt)
        b = rng.standard_normal((k, n)).astype(dt)
        cases.append((a, b, np.empty((m, n), dt)))
    # cuvil first, then NumPy: OpenBLAS's idle threads keep spinning (and
    # taking a core) for a while after each call, which would slow whatever
    # is timed right after them.
    t_cv = [best_time(lambda c=c: rt._gemm(*c)) for c in cases]
    errs = [np.abs(out - a @ b).max() / max(1e-30, np.abs(a @ b).max()) for a, b, out in cases]
    time.sleep(1.0)
    t_np = [best_time(lambda a=a, b=b: a @ b) for a, b, _ in cases]
    t_out = [best_time(lambda c=c: np.matmul(*c[:2], out=c[2])) for c in cases]
    print(f"{'m x k x n':>18} {'cuvil':>8} {'a @ b':>8} {'out=':>8}  GFLOP/s | cuvil: B GB/s, time")
    for (a, b, _), tc, tn, to, err in zip(cases, t_cv, t_np, t_out, errs):
        (m, k), n = a.shape, b.shape[1]
        flops = 2.0 * m * n * k
        print(
            f"{f'{m}x{k}x{n}':>18} {flops / tc / 1e9:8.1f} {flops / tn / 1e9:8.1f} "
            f"{flops / to / 1e9:8.1f}  | {b.nbytes / tc / 1e9:6.1f} GB/s, {tc * 1e6:8.1f} us "
            f"(np {tn * 1e6:.1f} us) rel.err {err:.1e}"
        )


if __name__ == "__main__":
    main()
