"""Throughput of vmath.h loops against libm and NumPy, in elements per second.

Builds one shared library per -march level the CPU runs (flags as generated kernels use),
each holding `y[i] = f(x[i])` loops over vmath.h functions and over the libm functions they
replace, and times them with NumPy's ufuncs on the same arrays. One thread; best of --repeat.

    python bench/vmath_speed.py [--n 1000000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import ctypes
import math
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

INCLUDE = Path(__file__).resolve().parents[1] / "native" / "include"
CFLAGS = ["-O3", "-fno-math-errno", "-fno-trapping-math", "-fopenmp-simd"]
LEVEL_FLAGS = {
    "x86-64": set(),
    "x86-64-v2": {"sse4_2", "popcnt"},
    "x86-64-v3": {"avx2", "fma", "bmi2"},
    "x86-64-v4": {"avx512f", "avx512bw", "avx512dq", "avx512vl"},
}
# (row label, C expression over x[i], C type, NumPy doing the same into y)
KERNELS = [
    ("cv_expf", "cv_expf(x[i])", "float", lambda x, y: np.exp(x, out=y)),
    ("libm expf", "expf(x[i])", "float", None),
    ("cv_tanhf", "cv_tanhf(x[i])", "float", lambda x, y: np.tanh(x, out=y)),
    ("libm tanhf", "tanhf(x[i])", "float", None),
    ("cv_sigmoidf", "cv_sigmoidf(x[i])", "float", lambda x, y: np.divide(1, 1 + np.exp(-x), out=y)),
    ("libm 1/(1+expf(-x))", "1.0f / (1.0f + expf(-x[i]))", "float", None),
    ("cv_logf", "cv_logf(x[i])", "float", lambda x, y: np.log(x, out=y)),
    ("libm logf", "logf(x[i])", "float", None),
    ("cv_sinf", "cv_sinf(x[i])", "float", lambda x, y: np.sin(x, out=y)),
    ("libm sinf", "sinf(x[i])", "float", None),
    ("cv_exp (f64)", "cv_exp(x[i])", "double", lambda x, y: np.exp(x, out=y)),
    ("libm exp (f64)", "exp(x[i])", "double", None),
    ("cv_tanh (f64)", "cv_tanh(x[i])", "double", lambda x, y: np.tanh(x, out=y)),
    ("libm tanh (f64)", "tanh(x[i])", "double", None),
]


def levels() -> list[str]:
    text = Path("/proc/cpuinfo").read_text()
    have = set(re.search(r"^flags\s*:(.*)$", text, re.M).group(1).split())
    out, need = [], set()
    for level, flags in LEVEL_FLAGS.items():
        need |= flags
        if need <= have:
            out.append(level)
    return out


def build(level: str, d: Path) -> ctypes.CDLL:
    src = ['#include "cuvil_aot/vmath.h"']
    for k, (_, expr, ct, _) in enumerate(KERNELS):
        src.append(
            f"void k{k}(const {ct} *restrict x, {ct} *restrict y, long n) "
            f"{{ for (long i = 0; i < n; i++) y[i] = {expr}; }}"
        )
    (d / "bench.c").write_text("\n".join(src) + "\n")
    so = d / f"bench_{level}.so"
    cc = shutil.which("gcc") or "cc"
    subprocess.run(
        [
            cc,
            *CFLAGS,
            f"-march={level}",
            "-shared",
            "-fPIC",
            "-I",
            str(INCLUDE),
            str(d / "bench.c"),
            "-o",
            str(so),
            "-lm",
        ],
        check=True,
    )
    return ctypes.CDLL(str(so))


def best_rate(fn, args: tuple, n: int, repeat: int) -> float:
    """Elements per second of fn(*args) over n elements, best of repeat calls after a warm-up."""
    fn(*args)
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t)
    return n / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="elements per call")
    ap.add_argument("--repeat", type=int, default=20, help="timed calls per row (best is kept)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    data = {t: rng.uniform(-10, 10, args.n).astype(t) for t in (np.float32, np.float64)}
    data_log = {t: np.abs(a) + 1e-3 for t, a in data.items()}
    lvls = levels()
    with tempfile.TemporaryDirectory() as tmp:
        libs = {lv: build(lv, Path(tmp)) for lv in lvls}
        print(f"n = {args.n}, Gelem/s (best of {args.repeat}), one thread")
        print(f"{'kernel':24s}" + "".join(f"{lv:>12s}" for lv in lvls) + f"{'numpy':>12s}")
        for k, (label, expr, ct, np_fn) in enumerate(KERNELS):
            t = np.float32 if ct == "float" else np.float64
            x = (data_log if "log" in expr else data)[t]
            y = np.empty_like(x)
            c_args = (
                ctypes.c_void_p(x.ctypes.data),
                ctypes.c_void_p(y.ctypes.data),
                ctypes.c_long(args.n),
            )
            rates = [
                best_rate(getattr(libs[lv], f"k{k}"), c_args, args.n, args.repeat) for lv in lvls
            ]
            if np_fn is not None:
                with np.errstate(all="ignore"):
                    rates.append(best_rate(np_fn, (x, y), args.n, args.repeat))
            print(f"{label:24s}" + "".join(f"{r / 1e9:12.3f}" for r in rates))


if __name__ == "__main__":
    main()
