"""The BERT-base layer's GEMMs one at a time (issues 23 and 24): each of its three GEMM
shapes with the epilogue the layer gives it (bias; bias + erf GELU; none), float32 under
3xTF32 and bfloat16 operands, each kernel's device time (torch.profiler) beside cuBLAS
through torch on the same shapes and types. Where the layer's GEMMs lose (in-layer times in
bench/gpu/bf16.py --profile) shows here without the layer's other kernels around them.

    PYTHONPATH=. python bench/gpu/layer_gemms.py [--rows 4096] [--only gelu16] [--shape "ffn up"]

(--only and --shape pick cases, e.g. for ncu; --define NAME=VALUE passes -D to nvcc, for an
A/B of a header's knob such as CV_WG_OUT_UNROLL; --flag passes any nvcc flag, e.g.
--flag=-prec-div=false to see what IEEE division costs an epilogue.)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from conftest import compile_source  # noqa: E402
from gpu_harness import device_arch  # noqa: E402

from bench.gpu.kernel_profile import kernel_times  # noqa: E402
from cuvil_aot.compiler.toolchain import nvcc  # noqa: E402

torch.set_grad_enabled(False)

# each epilogue over float32 operands (suffix 32) and bfloat16 ones (16)
EPILOGUES = {"plain": "x @ w.T", "bias": "x @ w.T + b", "gelu": "T.gelu_erf(x @ w.T + b)"}
BIAS = ', b: cv.f32["N"]'
SOURCE = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
import ml_dtypes
import cuvil_aot as cv
from bench import transformer_models as T
""" + "".join(f"""
@cv.optimize
def {name}{bits}(x: cv.{t}["M", "K"], w: cv.{t}["N", "K"]{"" if name == "plain" else BIAS}):
    return {body}
""" for bits, t in (("32", "f32"), ("16", "bf16")) for name, body in EPILOGUES.items()) + """
@cv.optimize
def bias16b(x: cv.bf16["M", "K"], w: cv.bf16["N", "K"], b: cv.f32["N"]):
    return (x @ w.T + b).astype(ml_dtypes.bfloat16)

@cv.optimize
def gelu16b(x: cv.bf16["M", "K"], w: cv.bf16["N", "K"], b: cv.f32["N"]):
    return T.gelu_erf(x @ w.T + b).astype(ml_dtypes.bfloat16)
"""

SHAPES = {"qkvo 768x768": (768, 768), "ffn up 3072x768": (3072, 768),
          "ffn down 768x3072": (768, 3072)}


def shape_lines(mod, label: str, m: int, n: int, k: int, gen: torch.Generator,
                only: str | None) -> None:
    x = torch.randn(m, k, device="cuda", generator=gen)
    w = torch.randn(n, k, device="cuda", generator=gen) * 0.05
    b = torch.randn(n, device="cuda", generator=gen)
    xb, wb, bb = x.bfloat16(), w.bfloat16(), b.bfloat16()
    flop = 2.0 * m * n * k
    cases = {
        "plain32": lambda: mod.plain32(x, w), "bias32": lambda: mod.bias32(x, w, b),
        "gelu32": lambda: mod.gelu32(x, w, b),
        "plain16": lambda: mod.plain16(xb, wb), "bias16": lambda: mod.bias16(xb, wb, b),
        "gelu16": lambda: mod.gelu16(xb, wb, b),
        # the result stored in bfloat16, as the layer's FFN up stores it
        "bias16 -> bf16": lambda: mod.bias16b(xb, wb, b),
        "gelu16 -> bf16": lambda: mod.gelu16b(xb, wb, b),
        "torch f32 linear": lambda: F.linear(x, w, b),
        "torch bf16 linear": lambda: F.linear(xb, wb, bb),
        "torch bf16 linear+gelu": lambda: F.gelu(F.linear(xb, wb, bb)),
    }
    for name, fn in cases.items():
        if only and name != only:
            continue
        times = kernel_times(fn, 20)
        total = sum(us for _, us in times.values())
        parts = ", ".join(f"{kn[:40]} {us:.1f}" for kn, (_, us) in
                          sorted(times.items(), key=lambda kv: -kv[1][1]))
        print(f"{label:18s} {name:24s} {total:8.1f} us {flop / total / 1e6:6.0f} TF | {parts}",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--only", help="one case (plain32, gelu16, ...)")
    ap.add_argument("--shape", help="shapes whose label starts with this")
    ap.add_argument("--define", action="append", default=[], help="NAME=VALUE for nvcc -D")
    ap.add_argument("--flag", action="append", default=[], help="an nvcc flag")
    opts = ap.parse_args()
    nvcc.NVCC_FLAGS += (*(f"-D{d}" for d in opts.define), *opts.flag)  # part of the images' key
    mod = compile_source(Path(tempfile.mkdtemp()), SOURCE, cuda_archs=(device_arch(),))
    gen = torch.Generator(device="cuda").manual_seed(0)
    print(f"# {torch.cuda.get_device_name()}, rows {opts.rows}, -D {opts.define}, flags "
          f"{opts.flag}; device us per "
          "call (kernels)")
    for label, (n, k) in SHAPES.items():
        if not opts.shape or label.startswith(opts.shape):
            shape_lines(mod, label, opts.rows, n, k, gen, opts.only)


if __name__ == "__main__":
    main()
