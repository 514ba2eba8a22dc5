"""Interleaved A/B of native runtime builds on the GEMM, in one process.

Build each variant of the runtime into its own file, then time them
alternately (ABBA order) on a sequence of GEMMs with a bias+relu epilogue,
as generated code calls them (cv_run_gemm_f32 through ctypes):

    PY=$(python -c "import sysconfig; print(sysconfig.get_paths()['include'])")
    gcc -O3 -fPIC -shared -std=gnu11 -fno-math-errno -fno-trapping-math \\
        -Inative/include -Inative/src -I$PY native/src/*.c -o /tmp/a.so -lpthread -ldl
    (change the sources, build /tmp/b.so the same way)
    python bench/gemm_ab.py /tmp/a.so /tmp/b.so --gemm 4096 1024 4096
    python bench/gemm_ab.py /tmp/a.so /tmp/b.so --gemm 1 768 3072 --gemm 1 3072 768
    python bench/gemm_ab.py /tmp/a.so /tmp/b.so --wt --gemm 16 768 3072

--wt gives B as W.T, W row-major (n, k) as PyTorch's Linear weights (x @ w.T), instead
of a row-major (k, n) B.

Several --gemm run one after the other in each timed call (the FFN's two
GEMVs alternate their weights in L3 that way). Every build is checked
against NumPy first. Prints the median and the minimum per build; on this
noisy VM only differences seen in several runs mean anything.
"""

from __future__ import annotations

import argparse
import ctypes as C
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

EPILOGUE = r"""
#include <stdint.h>
typedef struct { const float *bias; float *out; int64_t ldo; } ctx_t;
void epi(void *vctx, int64_t batch, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
         const float *acc, int64_t ld) {
    const ctx_t *a = vctx;
    (void)batch;
    for (int64_t i = r0; i < r1; i++)
        for (int64_t j = c0; j < c1; j++) {
            float v = acc[(i - r0) * ld + j - c0] + a->bias[j];
            a->out[i * a->ldo + j] = v > 0 ? v : 0;
        }
}
"""


class Term(C.Structure):
    _fields_ = [
        (f, C.c_void_p if f in "ab" else C.c_int64)
        for f in ("a", "a_rs", "a_cs", "a_bs", "b", "b_rs", "b_cs", "b_bs", "k")
    ]


class Gemm(C.Structure):
    _fields_ = [
        ("nbatch", C.c_int64),
        ("m", C.c_int64),
        ("n", C.c_int64),
        ("nterms", C.c_int),
        ("terms", C.POINTER(Term)),
        ("epilogue", C.c_void_p),
        ("ctx", C.c_void_p),
    ]


class Ctx(C.Structure):
    _fields_ = [("bias", C.c_void_p), ("out", C.c_void_p), ("ldo", C.c_int64)]


def epilogue(tmp: str) -> C.CDLL:
    src, lib = os.path.join(tmp, "epi.c"), os.path.join(tmp, "epi.so")
    with open(src, "w") as f:
        f.write(EPILOGUE)
    subprocess.run(["cc", "-O3", "-march=native", "-fPIC", "-shared", src, "-o", lib], check=True)
    return C.CDLL(lib)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("builds", nargs="+", help="runtime .so files to compare")
    ap.add_argument("--gemm", nargs=3, type=int, action="append", metavar=("M", "K", "N"))
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--level", type=int, default=0, help="cpu_level (0: detected)")
    ap.add_argument("--wt", action="store_true", help="B = W.T, W row-major (n, k)")
    ap.add_argument("--threads", type=int, default=0, help="pool size (0: the default)")
    args = ap.parse_args()
    shapes = args.gemm or [[4096, 1024, 4096]]
    with tempfile.TemporaryDirectory() as tmp:
        epi = C.cast(epilogue(tmp).epi, C.c_void_p).value
    runs = []
    for path in args.builds:
        lib = C.CDLL(os.path.abspath(path))
        if args.level:
            lib.cv_set_cpu_level(args.level)
        if args.threads:
            lib.cv_set_num_threads(args.threads)
        lib.cv_run_gemm_f32.argtypes = [C.POINTER(Gemm)]
        runs.append(lib.cv_run_gemm_f32)
    rng = np.random.default_rng(0)
    keep, calls = [], []
    for m, k, n in shapes:
        x = rng.standard_normal((m, k)).astype(np.float32)
        w = (rng.standard_normal((k, n)) * k**-0.5).astype(np.float32)
        if args.wt:
            w = np.ascontiguousarray(w.T).T  # the same values, W.T of a row-major W
        bias = rng.standard_normal(n).astype(np.float32)
        out = np.empty((m, n), np.float32)
        want = np.maximum(0, x.astype(np.float64) @ w + bias)
        b_rs, b_cs = (s // 4 for s in w.strides)
        term = Term(x.ctypes.data, k, 1, 0, w.ctypes.data, b_rs, b_cs, 0, k)
        ctx = Ctx(bias.ctypes.data, out.ctypes.data, n)
        g = Gemm(1, m, n, 1, C.pointer(term), epi, C.addressof(ctx))
        for path, run in zip(args.builds, runs):
            out.fill(np.nan)
            if run(C.byref(g)) != 0:
                sys.exit(f"{path}: out of memory")
            err = np.abs(out - want).max() / np.abs(want).max()
            if not err < 1e-5:
                sys.exit(f"{path}: {m}x{k}x{n} rel. error {err:.1e}")
        keep += [x, w, bias, out, term, ctx]
        calls.append(g)
    t0 = time.perf_counter()
    for g in calls:
        runs[0](C.byref(g))
    # Samples of >= 20 ms: each build's idle pool workers spin ~50 us after
    # its last call, slowing the start of the other build's sample.
    reps = max(1, int(0.02 / (time.perf_counter() - t0)))
    times: list[list[float]] = [[] for _ in runs]
    for s in range(args.samples):
        for i in range(len(runs)) if s % 2 == 0 else reversed(range(len(runs))):
            t0 = time.perf_counter()
            for _ in range(reps):
                for g in calls:
                    runs[i](C.byref(g))
            times[i].append((time.perf_counter() - t0) / reps)
    print(" then ".join(f"{m}x{k}x{n}" for m, k, n in shapes) + f", {reps} per sample:")
    base = statistics.median(times[0])
    for path, t in zip(args.builds, times):
        med = statistics.median(t)
        print(
            f"  {path}: median {med * 1e6:10.1f} us  min {min(t) * 1e6:10.1f} us  x{med / base:.3f}"
        )


if __name__ == "__main__":
    main()
