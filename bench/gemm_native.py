"""GEMM of the native runtime (cuvil_aot.runtime.native._gemm, store epilogue) vs NumPy.

Run with OpenBLAS on its own CPU detection, from outside the repo root:

    cd /tmp && env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
        python /work/main/bench/gemm_native.py [--dtype float32] [--level N]

Prints GFLOP/s (best over --rounds rounds of timed runs) for cuvil's GEMM,
NumPy's `a @ b` (which allocates its output) and `np.matmul(a, b, out=out)`
(which does not, like cuvil's call here), and the effective bandwidth for
streaming B. For one thread each: OPENBLAS_NUM_THREADS=1 and --threads 1.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from cuvil_aot.runtime import native as rt

SHAPES = [  # m, k, n, B given as W.T (W row-major n x k, as torch's Linear)
    (4096, 1024, 4096, False),
    (32, 128, 64, False),
    (256, 512, 2048, False),
    (1, 512, 2048, False),
    (1, 512, 1000, False),  # ResNet-18 head, batch 1
    (1, 1024, 2048, False),  # LSTM step, batch 1: x @ wx + h @ wh as one GEMM
    (1, 768, 3072, False),
    (1, 3072, 768, False),  # FFN down-projection, 1 token
    (2048, 768, 3072, False),
    (4, 768, 3072, False),
    (16, 768, 3072, False),
    (1, 768, 3072, True),
    (16, 768, 3072, True),
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
    ap.add_argument("--rounds", type=int, default=3, help="rounds; best of all is kept")
    args = ap.parse_args()
    rt.configure(num_threads=args.threads, cpu_level=args.level)
    info = rt.info()
    print(f"cuvil: cpu_level {info['cpu_level']}, {info['num_threads']} threads, {args.dtype}")
    rng = np.random.default_rng(0)
    dt = np.dtype(args.dtype)
    cases = []
    for m, k, n, wt in SHAPES:
        a = rng.standard_normal((m, k)).astype(dt)
        b = rng.standard_normal((n, k) if wt else (k, n)).astype(dt)
        b = b.T if wt else b
        cases.append((a, b, np.empty((m, n), dt)))
    # In each round cuvil first, then NumPy, with a pause in between:
    # OpenBLAS's idle threads keep spinning (and taking a core) for a while
    # after each call, which would slow whatever is timed right after them.
    t_cv = [float("inf")] * len(cases)
    t_np, t_out = list(t_cv), list(t_cv)
    for _ in range(args.rounds):
        for i, c in enumerate(cases):
            t_cv[i] = min(t_cv[i], best_time(lambda c=c: rt._gemm(*c)))
        time.sleep(1.0)
        for i, (a, b, out) in enumerate(cases):
            t_np[i] = min(t_np[i], best_time(lambda a=a, b=b: a @ b))
            t_out[i] = min(t_out[i], best_time(lambda a=a, b=b, o=out: np.matmul(a, b, out=o)))
        time.sleep(1.0)
    for a, b, out in cases:
        rt._gemm(a, b, out)
    errs = [np.abs(out - a @ b).max() / max(1e-30, np.abs(a @ b).max()) for a, b, out in cases]
    print(f"{'m x k x n':>18} {'cuvil':>8} {'a @ b':>8} {'out=':>8}  GFLOP/s | cuvil: B GB/s, time")
    for (a, b, _), tc, tn, to, err in zip(cases, t_cv, t_np, t_out, errs):
        (m, k), n = a.shape, b.shape[1]
        flops = 2.0 * m * n * k
        name = f"{m}x{k}x{n}" + ("(W.T)" if b.strides[0] < b.strides[1] else "")
        print(
            f"{name:>18} {flops / tc / 1e9:8.1f} {flops / tn / 1e9:8.1f} "
            f"{flops / to / 1e9:8.1f}  | {b.nbytes / tc / 1e9:6.1f} GB/s, {tc * 1e6:8.1f} us "
            f"(np {tn * 1e6:.1f} us) rel.err {err:.1e}"
        )


if __name__ == "__main__":
    main()
