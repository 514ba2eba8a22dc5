"""Attention alone on the GPU (issue 23): cuvil_aot's fused kernel (bench/transformer_models.py's
``attention`` as users write it) against PyTorch eager of the same code (a batched GEMM
writing the scores, softmax, a batched GEMM) and ``F.scaled_dot_product_attention``
(float32: its efficient or math kernel), 12 heads, head dim 64 (static, as in the models:
the kernel's 64-column build), T = S: BERT's padding mask at 32 x 128 and 8 x 128 tokens
(``padded``, a (B, 1, 1, S) mask of 0 and -10000), GPT-2's causal mask at 8 x 128, then
B = 1 with a causal mask at each of ``--sizes``. Device time per call (CUDA events around
back-to-back calls), median of 5 runs; every result checked against PyTorch in float64
first.

    python bench/gpu_attention.py [--sizes 512,1024,4096] [--batches 32x128:pad,8x128:pad,8x128]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import compile_source  # noqa: E402

torch.set_grad_enabled(False)

SOURCE = '''
import numpy as np
import cuvil_aot as cv

def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

@cv.optimize(signatures=["f32[B,H,T,64], f32[B,H,T,64], f32[B,H,T,64], f32[T,T]"])
def attention(q, k, v, mask):
    scores = q @ k.transpose(0, 1, 3, 2) * (1.0 / q.shape[-1] ** 0.5) + mask
    return softmax(scores) @ v

@cv.optimize(signatures=["f32[B,H,T,64], f32[B,H,T,64], f32[B,H,T,64], f32[B,1,1,T]"])
def padded(q, k, v, mask):
    scores = q @ k.transpose(0, 1, 3, 2) * (1.0 / q.shape[-1] ** 0.5) + mask
    return softmax(scores) @ v
'''


def eager(q, k, v, mask):
    scores = q @ k.transpose(-1, -2) * (1.0 / q.shape[-1] ** 0.5) + mask
    return torch.softmax(scores, dim=-1) @ v


def device_us(fn, calls: int = 20) -> float:
    fn()
    torch.cuda.synchronize()
    runs = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        torch.cuda.synchronize()
        runs.append(start.elapsed_time(end) * 1000 / calls)
    return statistics.median(runs)


def case(mod, label: str, b: int, t: int, pad: bool) -> None:
    rng = np.random.default_rng(b * 100003 + t)
    q, k, v = (torch.from_numpy(rng.standard_normal((b, 12, t, 64)).astype(np.float32))
               .cuda() for _ in range(3))
    if pad:  # BERT's (1 - mask) * -10000: the last keys of some sequences masked
        keep = rng.random((b, 1, 1, t)) < 0.8
        keep[..., 0] = True
        mask = torch.from_numpy(np.where(keep, 0.0, -10000.0).astype(np.float32)).cuda()
        fn = mod.padded
    else:
        mask = torch.triu(torch.full((t, t), -1e9), 1).cuda()
        fn = mod.attention
    ref = eager(q.double(), k.double(), v.double(), mask.double())
    got = fn(q, k, v, mask)
    err = ((got.double() - ref).abs().max() / ref.abs().max()).item()
    fused = device_us(lambda: fn(q, k, v, mask))
    plain = device_us(lambda: eager(q, k, v, mask))
    sdpa = device_us(lambda: F.scaled_dot_product_attention(q, k, v, mask))
    flops = 4 * b * 12 * t * t * 64
    print(f"{label:>16} {fused:>15.1f} {plain:>15.1f} {sdpa:>14.1f} {fused / sdpa:>11.2f} "
          f"{err:>12.2e} {flops / fused / 1e3:>14.0f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="512,1024,4096")
    parser.add_argument("--batches", default="32x128:pad,8x128:pad,8x128")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    batches = [c for c in args.batches.split(",") if c]
    arch = "sm_{}{}".format(*torch.cuda.get_device_capability())
    mod = compile_source(Path(tempfile.mkdtemp()), SOURCE, cuda_archs=(arch,))
    print(f"{'B x T (mask)':>16} {'cuvil fused us':>15} {'torch eager us':>15} "
          f"{'torch sdpa us':>14} {'fused/sdpa':>11} {'max rel err':>12} {'GFLOP/s fused':>14}")
    for c in batches:
        shape, _, kind = c.partition(":")
        b, t = (int(x) for x in shape.split("x"))
        case(mod, f"{b}x{t} {'pad' if kind == 'pad' else 'causal'}", b, t, kind == "pad")
    for t in sizes:
        case(mod, f"1x{t} causal", 1, t, False)


if __name__ == "__main__":
    main()
