"""bfloat16 on the GPU (issue 24), in one command: the generated bf16 GEMM at 4096^3 against
torch.mm in bfloat16 (cuBLAS), and the BERT-base layer of bench/gpu_transformers.py at
32 x 128 under ``precision="bf16"`` against PyTorch with autocast bfloat16, eager and
torch.compile. Each time has its max error beside it: max |got - ref| / max |ref|, ref in
float64 (for the GEMMs, of the operands as the GEMM reads them: bfloat16 values).

Targets: the GEMM at >= 85% of torch.mm's bf16 throughput; the BERT layer 1.3x faster than
torch.compile with autocast bf16.

- GEMM: device time per call from CUDA events around back-to-back calls (median of rounds),
  TFLOP/s = 2 m n k / time. ``bf16 -> bf16``: bfloat16 tensors in, the float32 sums rounded
  to bfloat16 in the epilogue (torch.mm's contract); ``bf16 -> f32``: the float32 result;
  ``policy``: float32 tensors, rounded to bfloat16 into scratch each call, then the GEMM;
  ``x @ w (N-major w)``: B n-contiguous, the SIMT tiles on bfloat16 (no wgmma).
- BERT: bench/gpu_transformers.py's wall_us (the Python call until the result is ready,
  a synchronize per call, median); also with the six weight matrices held in bfloat16 on
  both sides (cast once, as servers keep them: no rounding of weights per call).

    PYTHONPATH=. python bench/gpu/bf16.py OUTDIR [--size 4096] [--cases bert_32x128]
        [--modes default,max-autotune-no-cudagraphs] [--rounds 5] [--profile]

``--size 0`` skips the GEMMs (the layer alone).

``--profile`` also writes ``bf16_kernels.txt``: each implementation's kernels (torch.profiler)
with their device µs per call, and one call's kernels in launch order.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from conftest import compile_source  # noqa: E402
from gpu_harness import device_arch  # noqa: E402

from bench import gpu_transformers as G  # noqa: E402
from bench import transformer_models as T  # noqa: E402
from bench.gpu.device_timing import device_us  # noqa: E402
from bench.gpu.kernel_profile import kernel_sequence, kernel_times  # noqa: E402

torch.set_grad_enabled(False)

W16_ARGS = (2, 4, 6, 8, 12, 14)  # wq, wk, wv, wo, wi, wf of the BERT signature

SOURCE = f'''
import sys
sys.path.insert(0, {str(ROOT)!r})
import numpy as np
import ml_dtypes
import cuvil_aot as cv
from bench import transformer_models as T

# the layer's six weight matrices stored in bfloat16, as servers keep them (cast once)
BERT_W16 = ", ".join(f"bf16{{s[3:]}}" if i in {W16_ARGS} else s
                     for i, s in enumerate(T.BERT.split(", ")))

@cv.optimize
def mm(x: cv.bf16["M", "K"], w: cv.bf16["N", "K"]):
    return (x @ w.T).astype(ml_dtypes.bfloat16)

@cv.optimize
def mm_f32(x: cv.bf16["M", "K"], w: cv.bf16["N", "K"]):
    return x @ w.T

@cv.optimize(precision="bf16")
def mm_policy(x: cv.f32["M", "K"], w: cv.f32["N", "K"]):
    return x @ w.T

@cv.optimize
def mm_kn(x: cv.bf16["M", "K"], w: cv.bf16["K", "N"]):
    return x @ w

@cv.optimize(signatures=[T.BERT], precision="bf16")
def bert_bf16(x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2):
    return T._bert(x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2,
                   T.gelu_erf)

@cv.optimize(signatures=[BERT_W16], precision="bf16")
def bert_bf16_weights(x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2):
    return T._bert(x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2,
                   T.gelu_erf)

@cv.optimize(signatures=[T.BERT])
def bert_f32(x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2):
    return T._bert(x, mask, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2,
                   T.gelu_erf)
'''




def rel_err(got: torch.Tensor, ref: torch.Tensor) -> float:
    return float((got.double() - ref).abs().max() / ref.abs().max())


def gemm_rows(mod, size: int, rounds: int, profiles: list[str] | None = None) -> list[dict]:
    m = n = k = size
    gen = torch.Generator(device="cuda").manual_seed(0)
    x32 = torch.randn(m, k, device="cuda", generator=gen)
    w32 = torch.randn(n, k, device="cuda", generator=gen)
    x, w = x32.bfloat16(), w32.bfloat16()
    wkn = w.t().contiguous()
    ref = x.double() @ w.double().t()  # the bfloat16 operands' exact products, in float64
    flop = 2.0 * m * n * k
    calls = max(3, int(2e12 / flop))  # ~ a few ms of work per round
    cases = {
        "torch.mm bf16 -> bf16 (cuBLAS)": lambda: torch.mm(x, w.t()),
        "cuvil_aot bf16 -> bf16": lambda: mod.mm(x, w),
        "cuvil_aot bf16 -> f32": lambda: mod.mm_f32(x, w),
        "cuvil_aot policy f32 -> f32 (rounding included)": lambda: mod.mm_policy(x32, w32),
        "cuvil_aot x @ w (N-major w, SIMT tiles)": lambda: mod.mm_kn(x, wkn),
    }
    rows = []
    for name, fn in cases.items():
        try:
            err = rel_err(fn(), ref)
            us = device_us(fn, calls, rounds)
            rows.append({"case": f"GEMM {m}x{n}x{k}", "name": name, "us": us,
                         "tflops": flop / us / 1e6, "max_err": err})
        except Exception as exc:  # reported, never timed
            traceback.print_exc()
            rows.append({"case": f"GEMM {m}x{n}x{k}", "name": name,
                         "error": f"{type(exc).__name__}: {exc}"[:300]})
        print(rows[-1], flush=True)
        if profiles is not None and "error" not in rows[-1]:
            profiles.append(profile_text(f"GEMM {m}x{n}x{k}, {name}", fn))
    return rows


def torch_autocast(fn: Callable) -> Callable:
    def run(*args):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return fn(*args)
    return run


def bert_rows(mod, case: str, modes: list[str],
              profiles: list[str] | None = None) -> list[dict]:
    args, _ = G.inputs(case, np.random.default_rng(0))
    ref = T.bert_layer.py_func(*(a.astype(np.float64) for a in args))
    dev = [torch.from_numpy(a).cuda() for a in args]
    dev16 = [a.bfloat16() if i in W16_ARGS else a for i, a in enumerate(dev)]
    ref16 = T.bert_layer.py_func(*(a.double().cpu().numpy() for a in dev16))
    cases: dict[str, Callable[[], object]] = {
        "cuvil_aot precision='bf16'": lambda: mod.bert_bf16(*dev),
        "cuvil_aot precision='bf16', bf16 weights": lambda: mod.bert_bf16_weights(*dev16),
        "cuvil_aot fp32": lambda: mod.bert_f32(*dev),
        "PyTorch eager autocast bf16": lambda: torch_autocast(G.torch_bert)(*dev),
    }
    for mode in modes:
        compiled = torch.compile(torch_autocast(G.torch_bert), mode=mode, dynamic=False)
        cases[f"torch.compile {mode} autocast bf16"] = (lambda c: lambda: c(*dev))(compiled)
        if mode == "reduce-overhead":  # the same graph with the weights held in bfloat16
            cases[f"torch.compile {mode} autocast bf16, bf16 weights"] = (
                lambda c: lambda: c(*dev16))(compiled)
    rows = []
    for name, fn in cases.items():
        try:
            t0 = time.perf_counter()
            err = G.max_err(fn(), ref16 if "bf16 weights" in name else ref)
            first = time.perf_counter() - t0
            rows.append({"case": case, "name": name, "us": G.wall_us(fn), "max_err": err,
                         "first_call_s": first})
        except Exception as exc:
            traceback.print_exc()
            rows.append({"case": case, "name": name,
                         "error": f"{type(exc).__name__}: {exc}"[:300]})
        print(rows[-1], flush=True)
        if profiles is not None and "error" not in rows[-1] and "reduce-overhead" not in name:
            profiles.append(profile_text(f"{case}, {name}", fn))
    return rows


def profile_text(label: str, fn: Callable[[], object], calls: int = 10) -> str:
    times = kernel_times(fn, calls)
    lines = [f"## {label}: kernels {sum(us for _, us in times.values()):,.1f} us a call"]
    for kernel, (count, us) in sorted(times.items(), key=lambda kv: -kv[1][1])[:30]:
        lines.append(f"  {us:9.1f} us  x{count:<3d} {kernel[:110]}")
    lines.append("  one call, in order:")
    lines += [f"    {us:9.1f} us  {kernel[:100]}" for kernel, us in kernel_sequence(fn)]
    print("\n".join(lines), flush=True)
    return "\n".join(lines)


def report(rows: list[dict]) -> str:
    lines = ["| case | implementation | time | TFLOP/s | max err vs float64 |",
             "|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | {r['name']} | error: {r['error']} | | |")
            continue
        tf = f"{r['tflops']:.0f}" if "tflops" in r else ""
        lines.append(f"| {r['case']} | {r['name']} | {r['us']:,.1f} µs | {tf} | "
                     f"{r['max_err']:.2e} |")
    verdicts = []
    by = {(r["case"], r["name"]): r for r in rows if "us" in r}
    for (case, name), r in by.items():
        if name == "cuvil_aot bf16 -> bf16":
            cublas = by.get((case, "torch.mm bf16 -> bf16 (cuBLAS)"))
            if cublas:
                verdicts.append(f"- {case}: cuvil_aot at {cublas['us'] / r['us']:.0%} of "
                                "torch.mm's bf16 throughput (target >= 85%)")
        if name == "cuvil_aot precision='bf16'":
            others = [v["us"] for (c, n), v in by.items() if c == case and
                      n.startswith("torch.compile")]
            if others:
                verdicts.append(f"- {case}: the fastest torch.compile autocast bf16 takes "
                                f"{min(others) / r['us']:.2f}x cuvil_aot's time (target 1.3x)")
    return "\n".join(lines + [""] + verdicts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--size", type=int, default=4096, help="0: no GEMM rows")
    ap.add_argument("--cases", default="bert_32x128")
    ap.add_argument("--modes", default="default,max-autotune-no-cudagraphs",
                    help="torch.compile modes, comma-separated; 'none' for none")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", action="store_true",
                    help="also write each implementation's kernels to bf16_kernels.txt")
    opts = ap.parse_args()
    opts.outdir.mkdir(parents=True, exist_ok=True)
    modes = [] if opts.modes == "none" else opts.modes.split(",")
    t0 = time.perf_counter()
    mod = compile_source(Path(tempfile.mkdtemp()), SOURCE, cuda_archs=(device_arch(),))
    build = time.perf_counter() - t0
    profiles: list[str] | None = [] if opts.profile else None
    rows = gemm_rows(mod, opts.size, opts.rounds, profiles) if opts.size else []
    for case in opts.cases.split(","):
        rows += bert_rows(mod, case, modes, profiles)
    if profiles:
        (opts.outdir / "bf16_kernels.txt").write_text("\n\n".join(profiles) + "\n")
    text = (f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
            f"{torch.cuda.get_device_name()} ({device_arch()}); torch {torch.__version__}; "
            f"module import {build:.1f} s\n\n{report(rows)}\n")
    (opts.outdir / "bf16.md").write_text(text)
    (opts.outdir / "bf16.json").write_text(json.dumps(rows, indent=1))
    print(text)


if __name__ == "__main__":
    main()
