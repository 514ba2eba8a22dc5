"""Meta's LLaMA block as users port it (bench/meta_llama.py: classes, a KV cache written in
place, versions decided by ``seqlen > 1`` and ``n_rep == 1``) against the same-width block
written as one function with fixed sizes (bench/llama_models.py's ``llama_block``: no cache,
halves rotary), NumPy running the class code, and PyTorch eager (Meta's model in torch: its
own threads); also the class module's first build (a fresh cache). One process, one
OpenBLAS thread, rounds interleaved; µs a call, median of 30 (best round of 3); error:
max|got - ref| / max|ref| against the same code in float64.

    python bench/class_llama.py > bench/class_llama.txt
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ["CUVIL_AOT_CACHE_DIR"] = tempfile.mkdtemp(prefix="class_llama_")
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import cuvil_aot  # noqa: E402

cuvil_aot.install()
from bench import llama_models as L  # noqa: E402
from bench.decode_past import cpu_name  # noqa: E402
from bench.llama_block import arguments, torch_block  # noqa: E402

MAX_SEQ = 256


def block(meta, w: list[np.ndarray], batch: int, dtype=np.float32):
    """Meta's block on the weights of llama_block.arguments (cast to ``dtype``), its caches
    zero."""
    wq, wk, wv, wo, g1, g2, w1, w3, w2 = (a.astype(dtype) for a in w[3:])
    cache = [np.zeros((batch, MAX_SEQ, L.KV_HEADS, L.HEAD), dtype) for _ in range(2)]
    att = meta.Attention(wq, wk, wv, wo, *cache, L.HEADS, L.KV_HEADS)
    return meta.TransformerBlock(att, meta.FeedForward(w1, w2, w3), meta.RMSNorm(g1),
                                 meta.RMSNorm(g2))


def timed(fn, rounds: int = 3, calls: int = 30) -> float:
    best = float("inf")
    for _ in range(rounds):
        spent = []
        for _ in range(calls):
            t0 = time.perf_counter()
            fn()
            spent.append(time.perf_counter() - t0)
        best = min(best, statistics.median(spent))
    return best * 1e6


def error(got, ref) -> float:
    return float(np.max(np.abs(np.asarray(got, np.float64) - ref)) / np.abs(ref).max())


def main() -> None:
    t0 = time.perf_counter()
    from bench import meta_llama as meta
    blk = block(meta, arguments(1, 1), 1)
    blk.forward(np.zeros((1, 2, L.HIDDEN), np.float32), 0, *(np.ones((2, L.HEAD // 2),
                                                                    np.float32),) * 2)
    build = time.perf_counter() - t0
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cpu_name()}, "
          f"{os.cpu_count()} CPUs: Meta's LLaMA block as classes (bench/meta_llama.py, "
          f"width {L.HIDDEN}, {L.HEADS} heads over {L.KV_HEADS} K/V heads, FFN {L.FFN}); "
          f"first build of the class module, fresh cache: {build:.1f} s "
          f"({meta.TransformerBlock.forward.compiled.__doc__.count(chr(10))} compiled "
          "versions and size-one specializations)\n")
    print("| case | classes µs | function µs | NumPy (classes) µs | PyTorch eager µs | "
          "classes / function | NumPy / classes | torch / classes | error classes |")
    print("|---|---|---|---|---|---|---|---|---|")
    cos_all, sin_all = meta.precompute_freqs(L.HEAD, MAX_SEQ)
    for b, t, pos in ((1, 16, 0), (4, 128, 0), (1, 1, 128), (4, 1, 128)):
        print(row(meta, b, t, pos, cos_all[pos:pos + t], sin_all[pos:pos + t]))


def row(meta, b: int, t: int, pos: int, c: np.ndarray, s: np.ndarray) -> str:
    """One case: ``t`` tokens of ``b`` sequences after ``pos`` in the caches."""
    args = arguments(b, t)
    fast, slow, exact = block(meta, args, b), block(meta, args, b), \
        block(meta, args, b, np.float64)
    x = args[0]
    for m in (fast, slow, exact):  # a prompt before a decode step: the caches filled
        m.attention.cache_k[:, :pos] = 0.01
        m.attention.cache_v[:, :pos] = 0.01
    ref = meta.TransformerBlock.forward.py_func(exact, x.astype(np.float64), pos,
                                                c.astype(np.float64), s.astype(np.float64))
    calls = {"classes": lambda: fast.forward(x, pos, c, s),
             "numpy": lambda: meta.TransformerBlock.forward.py_func(slow, x, pos, c, s)}
    if pos == 0:
        calls["function"] = lambda: L.llama_block(*args)
        calls["torch"] = torch_block(args)
    err = error(calls["classes"](), ref)
    us = {n: timed(f) for n, f in calls.items()}
    cls = us["classes"]

    def cell(name: str, ratio: bool = False) -> str:
        if name not in us:
            return "—"
        return f"{us[name] / cls:.2f}" if ratio else f"{us[name]:,.0f}"

    function = "—" if "function" not in us else f"{cls / us['function']:.2f}"
    return (f"| {b}x{t} at {pos} | {cls:,.0f} | {cell('function')} | {cell('numpy')} | "
            f"{cell('torch')} | {function} | {cell('numpy', True)} | {cell('torch', True)} | "
            f"{err:.1e} |")

if __name__ == "__main__":
    main()
