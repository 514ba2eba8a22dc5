"""Int8 weights against float32 ones by the number of rows (issue 24): x (M, 768) @ W.T,
W (3072, 768), as `x @ (q.astype(f32) * s[:, None]).T` with cuvil_aot.quantize_weights'
per-channel (q, s), for M = 1 to 32; one layer's weight (in cache: the kernels' own speed)
and twelve (34 MB of float32, 9 MB of int8: from memory, as a decode step's weights).
Interleaved rounds, medians in µs per weight matrix.

    OPENBLAS_NUM_THREADS=1 python bench/int8_rows.py > bench/int8_rows.txt
"""

from __future__ import annotations

import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from conftest import compile_source  # noqa: E402
from int8_decode import SOURCE, _times  # noqa: E402  (proj_fp32, proj_int8)

import cuvil_aot as cv  # noqa: E402

K, N, ROUNDS = 768, 3072, 15


def medians(m, ws: list, qs: list, x: np.ndarray) -> tuple[float, float]:
    """fp32's and int8's median µs per weight matrix over interleaved rounds."""
    t = _times({"fp32": (lambda: [m.proj_fp32(x, w) for w in ws],),
                "int8": (lambda: [m.proj_int8(x, q, s) for q, s in qs],)}, ROUNDS)
    return float(np.median(t["fp32"])) / len(ws), float(np.median(t["int8"])) / len(ws)


def main() -> None:
    m = compile_source(Path(tempfile.mkdtemp()), SOURCE)
    rng = np.random.default_rng(0)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
          f"x (M, {K}) @ W.T, W ({N}, {K}); medians of {ROUNDS} interleaved rounds, µs per "
          "weight matrix")
    print("| weights | M | fp32 | int8 | fp32 / int8 |\n| --- | --- | --- | --- | --- |")
    for layers, where in ((1, "1 (in cache)"), (12, "12 (from memory)")):
        ws = [(rng.standard_normal((N, K)) * 0.02).astype(np.float32) for _ in range(layers)]
        qs = [cv.quantize_weights(w) for w in ws]
        for rows in (1, 2, 4, 8, 16, 32):
            x = rng.standard_normal((rows, K)).astype(np.float32)
            a, b = medians(m, ws, qs, x)
            print(f"| {where} | {rows} | {a:.1f} | {b:.1f} | {a / b:.2f} |")


if __name__ == "__main__":
    main()
