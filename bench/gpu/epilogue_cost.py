"""What a GEMM's fused epilogue costs in generated code (issue 23): the BERT layer's GEMM
shapes compiled three ways, ``x @ w.T``, ``+ b``, and GELU (erf form, as the layer writes
it) of that, timed on the device back to back (CUDA events, out= arrays). In the layer
the FFN-up GEMM (1024 x 3072 x 768, GELU) ran 108-114 µs where bench/gpu/wgmma_probe.cu
ran the same shape at 78 (62 TFLOP/s, a plain store): this says how much of the gap is the
epilogue and how much the generated kernel's main loop.

    PYTHONPATH=. python bench/gpu/epilogue_cost.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from conftest import compile_source  # noqa: E402
from gpu_harness import device_arch  # noqa: E402

from bench.gpu.device_timing import device_us  # noqa: E402

SOURCE = '''
import math
import numpy as np
import cuvil_aot as cv

@cv.optimize
def plain(x: cv.f32["M", "K"], w: cv.f32["N", "K"], b: cv.f32["N"]):
    return x @ w.T

@cv.optimize
def bias(x: cv.f32["M", "K"], w: cv.f32["N", "K"], b: cv.f32["N"]):
    return x @ w.T + b

@cv.optimize
def gelu(x: cv.f32["M", "K"], w: cv.f32["N", "K"], b: cv.f32["N"]):
    h = x @ w.T + b
    z = h / math.sqrt(2.0)
    s = np.sign(z)
    a = np.abs(z)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                                                                       + t * 1.061405429))))
    return 0.5 * h * (1.0 + s * (1.0 - y * np.exp(-a * a)))
'''

SHAPES = [(1024, 3072, 768), (1024, 768, 768), (1024, 768, 3072), (4096, 3072, 768)]
"""(m, n, k): FFN up, a projection, FFN down at 8 x 128 tokens; FFN up at 32 x 128"""


def main() -> None:
    mod = compile_source(Path(tempfile.mkdtemp()), SOURCE, cuda_archs=(device_arch(),))
    rng = np.random.default_rng(0)
    print(f"{torch.cuda.get_device_name()}: µs per call (TFLOP/s), back to back, out=")
    print(f"{'m n k':>16} {'x @ w.T':>16} {'+ b':>16} {'gelu(+ b)':>16}")
    for m, n, k in SHAPES:
        x = torch.from_numpy(rng.standard_normal((m, k)).astype(np.float32)).cuda()
        w = torch.from_numpy((rng.standard_normal((n, k)) * 0.02).astype(np.float32)).cuda()
        b = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).cuda()
        out = torch.empty((m, n), device="cuda")
        cells = []
        for fn in (mod.plain, mod.bias, mod.gelu):
            us = device_us(lambda f=fn, a=(x, w, b), o=out: f(*a, out=o), 50, 5)
            cells.append(f"{us:8.1f} ({2 * m * n * k / us / 1e6:5.1f})")
        print(f"{m:>5} {n:>5} {k:>4} " + " ".join(f"{c:>16}" for c in cells))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
