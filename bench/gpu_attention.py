"""Attention alone on the GPU (issue 23): cuvil_aot's fused kernel (bench/transformer_models.py's
``attention`` as users write it, causal mask) against PyTorch eager of the same code (a
batched GEMM writing the scores, softmax, a batched GEMM) and
``F.scaled_dot_product_attention`` (float32: its efficient or math kernel), B = 1, 12 heads,
head dim 64, T = S. Device time per call (CUDA events around back-to-back calls), median of
5 runs; every result checked against PyTorch in float64 first.

    python bench/gpu_attention.py [--sizes 512,1024,4096]
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

@cv.optimize(signatures=["f32[B,H,T,D], f32[B,H,T,D], f32[B,H,T,D], f32[T,T]"])
def attention(q, k, v, mask):
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="512,1024,4096")
    sizes = [int(s) for s in parser.parse_args().sizes.split(",")]
    arch = "sm_{}{}".format(*torch.cuda.get_device_capability())
    mod = compile_source(Path(tempfile.mkdtemp()), SOURCE, cuda_archs=(arch,))
    print(f"{'T = S':>6} {'cuvil fused us':>15} {'torch eager us':>15} {'torch sdpa us':>14} "
          f"{'max rel err':>12} {'GFLOP/s fused':>14}")
    for t in sizes:
        rng = np.random.default_rng(t)
        q, k, v = (torch.from_numpy(rng.standard_normal((1, 12, t, 64)).astype(np.float32))
                   .cuda() for _ in range(3))
        mask = torch.triu(torch.full((t, t), -1e9), 1).cuda()
        ref = eager(q.double(), k.double(), v.double(), mask.double())
        got = mod.attention(q, k, v, mask)
        err = ((got.double() - ref).abs().max() / ref.abs().max()).item()
        fused = device_us(lambda: mod.attention(q, k, v, mask))  # noqa: B023
        plain = device_us(lambda: eager(q, k, v, mask))  # noqa: B023
        sdpa = device_us(lambda: F.scaled_dot_product_attention(q, k, v, mask))  # noqa: B023
        flops = 4 * 12 * t * t * 64
        print(f"{t:>6} {fused:>15.1f} {plain:>15.1f} {sdpa:>14.1f} {err:>12.2e} "
              f"{flops / fused / 1e3:>14.0f}")


if __name__ == "__main__":
    main()
