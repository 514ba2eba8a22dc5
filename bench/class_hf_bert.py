"""Hugging Face's BERT encoder as users port it (bench/hf_bert.py: ``transpose_for_scores``,
``head_mask`` per layer or None, config flags as class constants, the outputs a tuple of
what is not None), two BERT-base layers, against the same two layers as one function each
(bench/transformer_models.py's ``bert_layer``, called twice), both compiled, on the same
weights, and NumPy running the port's code; also the port's first build (a fresh cache).
One process, calls interleaved round by round; µs a call, the round with the least drift.
The port's mask is the additive one transformers builds, ``(1 - m) * finfo.min``; the
function's is ``(1 - m) * -10000``: with every token kept both add zeros.

    python bench/class_hf_bert.py > bench/class_hf_bert.txt
"""

import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

os.environ["CUVIL_AOT_CACHE_DIR"] = tempfile.mkdtemp(prefix="class_hf_bert_")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cuvil_aot  # noqa: E402

cuvil_aot.install()
from bench import class_models as cm  # noqa: E402
from bench import transformer_models as tm  # noqa: E402

E, HEADS, INNER = 768, 12, 3072


def layer_weights(rng):
    """bert_layer's 16 weights: wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2."""
    f = lambda *s: (0.02 * rng.standard_normal(s)).astype(np.float32)  # noqa: E731
    return [f(E, E), f(E), f(E, E), f(E), f(E, E), f(E), f(E, E), f(E), 1 + f(E), f(E),
            f(INNER, E), f(INNER), f(E, INNER), f(E), 1 + f(E), f(E)]


def hf_layer(hf, w):
    attention = hf.BertAttention(
        hf.BertSelfAttention(hf.Linear(w[0], w[1]), hf.Linear(w[2], w[3]),
                             hf.Linear(w[4], w[5]), HEADS),
        hf.BertSelfOutput(hf.Linear(w[6], w[7]), hf.LayerNorm(w[8], w[9])))
    return hf.BertLayer(attention, hf.BertIntermediate(hf.Linear(w[10], w[11])),
                        hf.BertOutput(hf.Linear(w[12], w[13]), hf.LayerNorm(w[14], w[15])))


def main():
    rng = np.random.default_rng(0)
    ws = [layer_weights(rng) for _ in range(2)]
    t0 = time.perf_counter()
    from bench import hf_bert as hf
    port = hf.BertEncoder([hf_layer(hf, w) for w in ws])
    port.forward(rng.standard_normal((1, 2, E)).astype(np.float32))
    build = time.perf_counter() - t0
    versions = hf.BertEncoder.forward.compiled.__doc__.count("\n")
    print(f"# class_hf_bert: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"numpy {np.__version__}; the port's first build (fresh cache): {build:.1f} s, "
          f"{versions} compiled versions; two BERT-base layers\n")
    print("| case | HF port µs | function ×2 µs | NumPy (port) µs | port / function | "
          "NumPy / port | max rel. diff port vs function |")
    print("|---|---|---|---|---|---|---|")
    for b, t in ((1, 16), (1, 128), (8, 128)):
        x = rng.standard_normal((b, t, E)).astype(np.float32)
        keep = np.ones((b, t), np.float32)
        mask = ((1.0 - keep[:, None, None, :]) * np.finfo(np.float32).min).astype(np.float32)

        def function(x=x, keep=keep):
            return tm.bert_layer(tm.bert_layer(x, keep, *ws[0]), keep, *ws[1])

        calls = {"port": lambda x=x, m=mask: port.forward(x, m), "function": function,
                 "numpy": lambda x=x, m=mask: hf.BertEncoder.forward.py_func(port, x, m)}
        print(row(f"{b} × {t}", calls, port.forward(x, mask)[0], function()))


def row(case, calls, got, ref):
    diff = float(np.abs(got - ref).max() / np.abs(ref).max())
    us = cm.interleaved(calls)
    return (f"| {case} | {us['port']:,.0f} | {us['function']:,.0f} | {us['numpy']:,.0f} | "
            f"{us['port'] / us['function']:.2f} | {us['numpy'] / us['port']:.2f} | "
            f"{diff:.1e} |")


if __name__ == "__main__":
    main()
