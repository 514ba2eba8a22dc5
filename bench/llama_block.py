"""The LLaMA-style block of bench/llama_models.py on the CPU: cuvil_aot (float32 as written
with ``math.sqrt``, and the ``np.sqrt`` spelling that NumPy computes in float64), NumPy, and
PyTorch eager (the same math in torch, its own threads), rounds interleaved in one process,
one OpenBLAS thread. Median µs a call over 50 calls a round (best of 3 rounds), and each
result's largest error against NumPy in float64 relative to max|ref|.

    python bench/llama_block.py [--shapes 1x16,2x16,4x128] > bench/llama_block.txt
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import cuvil_aot  # noqa: E402

cuvil_aot.install()
from bench import llama_models as L  # noqa: E402
from bench.decode_past import cpu_name  # noqa: E402


def arguments(b: int, t: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)

    def f32(*shape: int, scale: float = 0.05) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    pos = np.arange(t)[:, None] / (10000 ** (np.arange(0, L.HEAD, 2) / L.HEAD))[None, :]
    cos = np.cos(np.concatenate([pos, pos], -1)).astype(np.float32)
    sin = np.sin(np.concatenate([pos, pos], -1)).astype(np.float32)
    kv = L.KV_HEADS * L.HEAD
    return [f32(b, t, L.HIDDEN, scale=1.0), cos, sin, f32(L.HIDDEN, L.HIDDEN), f32(kv, L.HIDDEN),
            f32(kv, L.HIDDEN), f32(L.HIDDEN, L.HIDDEN), 1 + f32(L.HIDDEN), 1 + f32(L.HIDDEN),
            f32(L.FFN, L.HIDDEN), f32(L.FFN, L.HIDDEN), f32(L.HIDDEN, L.FFN)]


def torch_block(args: list[np.ndarray]):
    import torch

    t_args = [torch.from_numpy(a) for a in args]

    def rms(x, w):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w

    def rot(x):
        h = x.shape[-1] // 2
        return torch.cat([-x[..., h:], x[..., :h]], -1)

    @torch.inference_mode()
    def call():
        x, cos, sin, wq, wk, wv, wo, g1, g2, w1, w3, w2 = t_args
        b, t, _ = x.shape
        h = rms(x, g1)
        q = (h @ wq.T).view(b, t, L.HEADS, L.HEAD).transpose(1, 2)
        k = (h @ wk.T).view(b, t, L.KV_HEADS, L.HEAD).transpose(1, 2)
        v = (h @ wv.T).view(b, t, L.KV_HEADS, L.HEAD).transpose(1, 2)
        q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
        rep = L.HEADS // L.KV_HEADS
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + a.transpose(1, 2).reshape(b, t, L.HIDDEN) @ wo.T
        h = rms(x, g2)
        return (x + (torch.nn.functional.silu(h @ w1.T) * (h @ w3.T)) @ w2.T).numpy()
    return call


def bound(fn, args: list[np.ndarray]):
    return lambda: fn(*args)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="1x16,2x16,4x128")
    opts = ap.parse_args()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cpu_name()}, "
          f"{os.cpu_count()} CPUs: LLaMA-style block (bench/llama_models.py), µs a call, "
          "median of 50 (best round of 3); error: max|got - ref| / max|ref| against NumPy "
          "in float64\n")
    print("| batch x tokens | cuvil_aot | cuvil_aot, np.sqrt spelling (float64) | NumPy | "
          "PyTorch eager | NumPy / cuvil_aot | torch / cuvil_aot |")
    print("|---|---|---|---|---|---|---|")
    for shape in opts.shapes.split(","):
        b, t = (int(v) for v in shape.split("x"))
        args = arguments(b, t)
        ref = L.llama_block.py_func(*[a.astype(np.float64) for a in args])
        calls = {"cuvil": bound(L.llama_block, args), "cuvil64": bound(L.llama_block_sqrt, args),
                 "numpy": bound(L.llama_block.py_func, args), "torch": torch_block(args)}
        errors = {n: float(np.max(np.abs(np.asarray(c(), np.float64) - ref)) / np.abs(ref).max())
                  for n, c in calls.items()}
        best = {n: float("inf") for n in calls}
        for _ in range(3):
            for n, c in calls.items():
                spent = []
                for _ in range(50):
                    t0 = time.perf_counter()
                    c()
                    spent.append(time.perf_counter() - t0)
                best[n] = min(best[n], statistics.median(spent) * 1e6)
        cell = {n: f"{best[n]:,.0f} (err {errors[n]:.1e})" for n in calls}
        print(f"| {b}x{t} | {cell['cuvil']} | {cell['cuvil64']} | {cell['numpy']} | "
              f"{cell['torch']} | {best['numpy'] / best['cuvil']:.2f}x | "
              f"{best['torch'] / best['cuvil']:.2f}x |")


if __name__ == "__main__":
    main()
