"""Convolutions written with np.lib.stride_tricks.sliding_window_view, cuvil_aot beside NumPy
in one process, rounds interleaved: a Whisper-style 1-D convolution (80 x 3000 -> 384,
kernel 3, as np.einsum over the windows) and a 3 x 3 convolution as im2col (64 x 32 x 32 ->
64: the windows permuted and reshaped into rows, one matmul). Best and median µs of each
round's calls; results checked against float64 first.

    OPENBLAS_NUM_THREADS=1 python bench/conv_windows.py [--rounds 3] > bench/conv_windows.txt
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

SOURCE = textwrap.dedent('''
    import numpy as np
    import cuvil_aot as cv
    from numpy.lib.stride_tricks import sliding_window_view

    @cv.optimize
    def conv1d(x: cv.f32["C", "T"], w: cv.f32["O", "C", 3], b: cv.f32["O"]):
        xp = np.pad(x, ((0, 0), (1, 1)))
        return np.einsum("ctk,ock->ot", sliding_window_view(xp, 3, axis=1), w) + b[:, None]

    @cv.optimize
    def conv2d_im2col(x: cv.f32["C", "H", "W"], w: cv.f32["O", "C", 3, 3]):
        c, h, wd = x.shape
        cols = sliding_window_view(np.pad(x, ((0, 0), (1, 1), (1, 1))), (3, 3), axis=(1, 2))
        cols = cols.transpose(1, 2, 0, 3, 4).reshape(h * wd, c * 9)
        return (cols @ w.reshape(w.shape[0], -1).T).T.reshape(w.shape[0], h, wd)
''')


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def timed(fn, args, calls: int) -> tuple[float, float]:
    fn(*args)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[0] * 1e6, times[len(times) // 2] * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    opts = ap.parse_args()
    work = Path(tempfile.mkdtemp())
    (work / "conv_windows_models.py").write_text(SOURCE)
    sys.path.insert(0, str(work))
    import conv_windows_models as m

    rng = np.random.default_rng(0)
    cases = {
        "conv1d 80x3000 -> 384, k=3 (einsum over windows)": (
            m.conv1d, [rng.standard_normal(s).astype(np.float32)
                       for s in ((80, 3000), (384, 80, 3), (384,))], 10, 3),
        "conv2d 64x32x32 -> 64, 3x3 (im2col)": (
            m.conv2d_im2col, [rng.standard_normal(s).astype(np.float32)
                              for s in ((64, 32, 32), (64, 64, 3, 3))], 30, 30),
    }
    print(f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, {cpu_name()}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}; µs best / median per round")
    for name, (fn, args, calls, numpy_calls) in cases.items():
        ref = fn.py_func(*[a.astype(np.float64) for a in args])
        err = np.abs(fn(*args) - ref).max() / np.abs(ref).max()
        print(f"{name}: max error {err:.1e} (relative to float64)")
        for r in range(opts.rounds):
            ours = timed(fn, args, calls)
            theirs = timed(fn.py_func, args, numpy_calls)
            print(f"  round {r}: cuvil_aot {ours[0]:,.0f} / {ours[1]:,.0f}, NumPy "
                  f"{theirs[0]:,.0f} / {theirs[1]:,.0f}  (NumPy / cuvil_aot, medians: "
                  f"{theirs[1] / ours[1]:.2f}x)")


if __name__ == "__main__":
    main()
