"""Hugging Face's GPT-2 block as users port it (bench/hf_gpt2.py: ``Conv1D``, a
``layer_past`` tuple or None, ``use_cache is True``, nested outputs; 32 compiled versions)
against the same block in nanoGPT's classes (bench/class_gpt2.py) and as one function
(bench/transformer_models.py's ``gpt2_block``, ``gpt2_decode``), all compiled, on the same
weights, and NumPy running the port's code; also the port's first build (a fresh cache).
One process, calls interleaved round by round; µs a call, the round with the least drift.

    python bench/class_hf_gpt2.py > bench/class_hf_gpt2.txt
"""

import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

os.environ["CUVIL_AOT_CACHE_DIR"] = tempfile.mkdtemp(prefix="class_hf_gpt2_")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cuvil_aot  # noqa: E402

cuvil_aot.install()
from bench import class_models as cm  # noqa: E402
from bench import transformer_models as tm  # noqa: E402

HEADS, POSITIONS = 12, 1024


def hf_block(hf, w):
    """The port's block on class_models.weights (the same (in, out) arrays)."""
    return hf.GPT2Block(hf.LayerNorm(w[0], w[1]),
                        hf.GPT2Attention(hf.Conv1D(w[2], w[3]), hf.Conv1D(w[4], w[5]), HEADS,
                                         POSITIONS),
                        hf.LayerNorm(w[6], w[7]), hf.GPT2MLP(hf.Conv1D(w[8], w[9]),
                                                             hf.Conv1D(w[10], w[11])))


def main():
    rng = np.random.default_rng(0)
    w = cm.weights(rng)
    t0 = time.perf_counter()
    from bench import hf_gpt2 as hf
    port = hf_block(hf, w)
    port.forward(rng.standard_normal((1, 2, 768)).astype(np.float32))
    build = time.perf_counter() - t0
    versions = hf.GPT2Block.forward.compiled.__doc__.count("\n")
    nano = cm.block_of(w)
    print(f"# class_hf_gpt2: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"numpy {np.__version__}; the port's first build (fresh cache): {build:.1f} s, "
          f"{versions} compiled versions\n")
    print("| case | HF port µs | nanoGPT classes µs | function µs | NumPy (port) µs | "
          "port / function | NumPy / port | max rel. diff port vs function |")
    print("|---|---|---|---|---|---|---|---|")
    for b, t in ((1, 16), (1, 128), (8, 128)):
        x = rng.standard_normal((b, t, 768)).astype(np.float32)
        calls = {"port": lambda x=x: port.forward(x, use_cache=True),
                 "nano": lambda x=x: nano(x), "function": lambda x=x: tm.gpt2_block(x, *w),
                 "numpy": lambda x=x: hf.GPT2Block.forward.py_func(port, x, use_cache=True)}
        print(row(f"{b} × {t}", calls, port.forward(x)[0], tm.gpt2_block(x, *w)))
    for b in (1, 8):  # one token against 255 past
        x = rng.standard_normal((b, 1, 768)).astype(np.float32)
        past = tuple(rng.standard_normal((b, HEADS, 255, 64)).astype(np.float32)
                     for _ in range(2))
        calls = {"port": lambda x=x, p=past: port.forward(x, p, use_cache=True),
                 "function": lambda x=x, p=past: tm.gpt2_decode(x, *p, *w),
                 "numpy": lambda x=x, p=past: hf.GPT2Block.forward.py_func(port, x, p,
                                                                           use_cache=True)}
        print(row(f"decode {b} × 1, 255 past", calls, port.forward(x, past)[0],
                  tm.gpt2_decode(x, *past, *w)[0]))


def row(case, calls, got, ref):
    diff = float(np.abs(got - ref).max() / np.abs(ref).max())
    us = cm.interleaved(calls)
    cell = lambda n: f"{us[n]:,.0f}" if n in us else "—"  # noqa: E731
    return (f"| {case} | {cell('port')} | {cell('nano')} | {cell('function')} | "
            f"{cell('numpy')} | {us['port'] / us['function']:.2f} | "
            f"{us['numpy'] / us['port']:.2f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
