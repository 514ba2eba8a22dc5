"""Every GEMM of the issue-23 models at every token count they run, float32 (issue 23: "at
least as fast as torch.mm at every shape of these models, with the epilogues fused").

Each line is one projection of BERT-base (``x @ w.T + b``, weights (out, in) as a state
dict has them) or GPT-2-small (``x @ w + b``, Conv1D weights (in, out)), with the epilogue
the model gives it (bias; bias + GELU for the FFN up projection: erf GELU in BERT, tanh in
GPT-2), at the rows the cases run (ROWS: BERT 1x8 (the stack), 1x16, 8x128, 32x128; GPT-2
decode 1, 1x128, 8x128).
cuvil_aot computes it in 3xTF32 (float32 accuracy) with the epilogue fused; torch in
float32 through cuBLAS (TF32 off, PyTorch's default), the GELU a kernel of its own. Device
µs per call are the kernels' (torch.profiler), not the host's; the error is max|got - ref|
/ max|ref| against float64 on the GPU.

    PYTHONPATH=. python bench/gpu/model_gemms.py [--models BERT,GPT-2]
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

torch.set_grad_enabled(False)

SOURCE = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
import cuvil_aot as cv
from bench import transformer_models as T

@cv.optimize
def bert_bias(x: cv.f32["M", "K"], w: cv.f32["N", "K"], b: cv.f32["N"]):
    return x @ w.T + b

@cv.optimize
def bert_gelu(x: cv.f32["M", "K"], w: cv.f32["N", "K"], b: cv.f32["N"]):
    return T.gelu_erf(x @ w.T + b)

@cv.optimize
def gpt2_bias(x: cv.f32["M", "K"], w: cv.f32["K", "N"], b: cv.f32["N"]):
    return x @ w + b

@cv.optimize
def gpt2_gelu(x: cv.f32["M", "K"], w: cv.f32["K", "N"], b: cv.f32["N"]):
    return T.gelu_tanh(x @ w + b)

@cv.optimize
def square(a: cv.f32["M", "K"], b: cv.f32["K", "N"]):
    return a @ b
"""

# label -> (function, (k, n))
PROJECTIONS = {
    "BERT q/k/v/o 768->768": ("bert_bias", (768, 768)),
    "BERT ffn up 768->3072 +gelu": ("bert_gelu", (768, 3072)),
    "BERT ffn down 3072->768": ("bert_bias", (3072, 768)),
    "GPT-2 c_attn 768->2304": ("gpt2_bias", (768, 2304)),
    "GPT-2 c_proj 768->768": ("gpt2_bias", (768, 768)),
    "GPT-2 c_fc 768->3072 +gelu": ("gpt2_gelu", (768, 3072)),
    "GPT-2 mlp c_proj 3072->768": ("gpt2_bias", (3072, 768)),
}
ROWS = {"BERT": (8, 16, 1024, 4096), "GPT-2": (1, 128, 1024)}


def torch_version(fn: str, x, w, b):
    """What a torch user runs for the same projection (float32, cuBLAS)."""
    if fn == "bert_bias":
        return F.linear(x, w, b)
    if fn == "bert_gelu":
        return F.gelu(F.linear(x, w, b))
    if fn == "gpt2_bias":
        return torch.addmm(b, x, w)
    return F.gelu(torch.addmm(b, x, w), approximate="tanh")


def device_us(fn) -> float:
    return sum(us for _, us in kernel_times(fn, 20).values())


def rel_err(got: torch.Tensor, ref: torch.Tensor) -> float:
    return float((got.double() - ref).abs().max() / ref.abs().max())


def line(label: str, m: int, n: int, k: int, ours, theirs, ref) -> str:
    t_ours, t_theirs = device_us(ours), device_us(theirs)
    flop = 2.0 * m * n * k
    return (f"| {label} | {m} | {t_ours:.1f} ({flop / t_ours / 1e6:.0f} TF) | "
            f"{t_theirs:.1f} ({flop / t_theirs / 1e6:.0f} TF) | **{t_theirs / t_ours:.2f}×** | "
            f"{rel_err(ours(), ref):.1e} | {rel_err(theirs(), ref):.1e} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="BERT,GPT-2")
    opts = ap.parse_args()
    assert not torch.backends.cuda.matmul.allow_tf32, "torch's float32 GEMMs must be float32"
    mod = compile_source(Path(tempfile.mkdtemp()), SOURCE, cuda_archs=(device_arch(),))
    gen = torch.Generator(device="cuda").manual_seed(0)
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}; device µs per call "
          "(the kernels'), TFLOP/s in brackets; error: max|got - ref| / max|ref| against "
          "float64\n")
    print("| GEMM | rows | cuvil_aot (3xTF32, fused) | torch float32 (cuBLAS) | torch / "
          "cuvil_aot | cuvil_aot error | torch error |")
    print("|---|---|---|---|---|---|---|")
    for model in opts.models.split(","):
        for rows, (label, (fn, (k, n))) in ((r, p) for r in ROWS[model]
                                            for p in PROJECTIONS.items() if p[0].startswith(model)):
            x = torch.randn(rows, k, device="cuda", generator=gen)
            w = torch.randn(*((n, k) if fn.startswith("bert") else (k, n)), device="cuda",
                            generator=gen) * 0.05
            b = torch.randn(n, device="cuda", generator=gen)
            ref = torch_version(fn, x.double(), w.double(), b.double())
            print(line(label, rows, n, k, lambda fn=fn, x=x, w=w, b=b: getattr(mod, fn)(x, w, b),
                       lambda fn=fn, x=x, w=w, b=b: torch_version(fn, x, w, b), ref), flush=True)
    a = torch.randn(4096, 4096, device="cuda", generator=gen)
    b = torch.randn(4096, 4096, device="cuda", generator=gen)
    print(line("square 4096³", 4096, 4096, 4096, lambda: mod.square(a, b),
               lambda: torch.mm(a, b), a.double() @ b.double()))


if __name__ == "__main__":
    main()
