"""Hugging Face's LLaMA decoder layer as users port it (bench/hf_llama.py: RMSNorm with its
dtype round trip, rotary embeddings from ``inv_freq`` and position ids, ``repeat_kv``, the
heads split by ``(*input_shape, -1, self.head_dim)``, outputs a tuple grown by what is asked)
against the same layer as one function (bench/llama_models.py's ``llama_block``, given cos
and sin as NumPy computes them outside it), both compiled, on the same weights, and NumPy
running the port's code; a decode step against a cache (the port only: the function has
none); the port's first build (a fresh cache). One process, calls interleaved round by
round; µs a call, the least of three rounds' medians. Width 512, 8 heads over 2 K/V heads,
FFN 1408.

    python bench/class_hf_llama.py > bench/class_hf_llama.txt
"""

import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

os.environ["CUVIL_AOT_CACHE_DIR"] = tempfile.mkdtemp(prefix="class_hf_llama_")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cuvil_aot  # noqa: E402

cuvil_aot.install()
from bench import class_models as cm  # noqa: E402
from bench import llama_models as lm  # noqa: E402

E, HEADS, KV, D, FFN = lm.HIDDEN, lm.HEADS, lm.KV_HEADS, lm.HEAD, lm.FFN


def weights(rng):
    """llama_block's weights: wq, wk, wv, wo, g1, g2, w1 (gate), w3 (up), w2 (down)."""
    w = lambda *s: (rng.standard_normal(s) / s[-1] ** 0.5).astype(np.float32)  # noqa: E731
    return [w(E, E), w(KV * D, E), w(KV * D, E), w(E, E), 1 + 0.1 * w(E), 1 + 0.1 * w(E),
            w(FFN, E), w(FFN, E), w(E, FFN)]


def port_layer(hf, w):
    wq, wk, wv, wo, g1, g2, w1, w3, w2 = w
    attention = hf.LlamaAttention(hf.Linear(wq), hf.Linear(wk), hf.Linear(wv), hf.Linear(wo),
                                  HEADS, KV)
    mlp = hf.LlamaMLP(hf.Linear(w1), hf.Linear(w3), hf.Linear(w2))
    return hf.LlamaDecoderLayer(attention, mlp, hf.LlamaRMSNorm(g1), hf.LlamaRMSNorm(g2),
                                hf.LlamaRotaryEmbedding(D))


def main():
    rng = np.random.default_rng(0)
    w = weights(rng)
    t0 = time.perf_counter()
    from bench import hf_llama as hf
    layer = port_layer(hf, w)
    layer.forward(rng.standard_normal((1, 2, E)).astype(np.float32), np.arange(2)[None])
    build = time.perf_counter() - t0
    print(f"# class_hf_llama: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"numpy {np.__version__}; the port's first build (fresh cache, its call with no "
          f"mask and no cache only): {build:.1f} s; width {E}, {HEADS} heads over {KV}\n")
    print("| case | HF port µs | function µs | NumPy (port) µs | port / function | "
          "NumPy / port | max rel. diff port vs function |")
    print("|---|---|---|---|---|---|---|")
    for b, t in ((1, 16), (1, 128), (4, 128)):
        x = rng.standard_normal((b, t, E)).astype(np.float32)
        positions = np.arange(t)[None].repeat(b, 0)
        mask = np.triu(np.full((t, t), np.finfo(np.float32).min, np.float32), 1)[
            None, None].repeat(b, 0)
        cos, sin = (a[0] for a in layer.rotary_emb(x, positions[:1]))

        def function(x=x, cos=cos, sin=sin):
            wq, wk, wv, wo, g1, g2, w1, w3, w2 = w
            return lm.llama_block(x, cos, sin, wq, wk, wv, wo, g1, g2, w1, w3, w2)

        calls = {"port": lambda x=x, p=positions, m=mask: layer.forward(x, p, m),
                 "function": function,
                 "numpy": lambda x=x, p=positions, m=mask:
                     hf.LlamaDecoderLayer.forward.py_func(layer, x, p, m)}
        print(row(f"{b} × {t}", calls, layer.forward(x, positions, mask)[0], function()))
    for b in (1, 4):  # a decode step: one token against 128 past ones
        x = rng.standard_normal((b, 1, E)).astype(np.float32)
        cache = tuple(rng.standard_normal((b, KV, 128, D)).astype(np.float32) for _ in "kv")
        positions = np.full((b, 1), 128)
        calls = {"port": lambda x=x, p=positions, c=cache: layer.forward(x, p, None, c, False,
                                                                          True),
                 "numpy": lambda x=x, p=positions, c=cache:
                     hf.LlamaDecoderLayer.forward.py_func(layer, x, p, None, c, False, True)}
        print(row(f"{b} × 1 at 128 (cache)", calls, None, None))


def row(case, calls, got, ref):
    diff = "—" if ref is None else f"{float(np.abs(got - ref).max() / np.abs(ref).max()):.1e}"
    us = cm.interleaved(calls)
    if "function" not in us:
        return (f"| {case} | {us['port']:,.0f} | — | {us['numpy']:,.0f} | — | "
                f"{us['numpy'] / us['port']:.2f} | {diff} |")
    return (f"| {case} | {us['port']:,.0f} | {us['function']:,.0f} | {us['numpy']:,.0f} | "
            f"{us['port'] / us['function']:.2f} | {us['numpy'] / us['port']:.2f} | {diff} |")


if __name__ == "__main__":
    main()
