"""Int8 weights against fp32 ones in a GPT-2 decode step's projections at batch 1 (issue
24), for bench/precision.py: per layer x (1, 768) -> 2304 -> its first 768 -> 768 ->
3072 (tanh) -> 768 (+ x), twelve layers of their own weights (fp32: 340 MB, int8: 85 MB,
more than L3: streamed from memory each step, as in a real decode), and each projection
alone on one layer's weights (cache-resident: the kernels' own speed).

Rounds interleave the cases (the machine is shared: others' load comes and goes);
medians and bests. Errors are max |got - want| / max |want| against float64: "kernel"
with the same weights (the dequantized ones for int8), "total" against the float64 model
of the unquantized weights (the quantization's own error included).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
from conftest import compile_source

import cuvil_aot as cv

SOURCE = '''
import numpy as np
import cuvil_aot as cv

def _layer(x, w1, w2, w3, w4):
    d = x.shape[1]
    a = x @ w1.T
    b = a[:, :d] @ w2.T
    return np.tanh(b @ w3.T) @ w4.T + x

@cv.optimize
def layer_fp32(x: cv.f32["M", "D"], w1: cv.f32["E", "D"], w2: cv.f32["D", "D"],
               w3: cv.f32["F", "D"], w4: cv.f32["D", "F"]):
    return _layer(x, w1, w2, w3, w4)

def _c(q, s):
    return q.astype(np.float32) * s[:, None]

@cv.optimize
def layer_int8(x: cv.f32["M", "D"], q1: cv.i8["E", "D"], s1: cv.f32["E"],
               q2: cv.i8["D", "D"], s2: cv.f32["D"], q3: cv.i8["F", "D"], s3: cv.f32["F"],
               q4: cv.i8["D", "F"], s4: cv.f32["D"]):
    return _layer(x, _c(q1, s1), _c(q2, s2), _c(q3, s3), _c(q4, s4))

def _g(q, s):
    n, k = q.shape
    return (q.reshape(n, k // 128, 128) * s[:, :, None]).reshape(n, k)

@cv.optimize
def layer_int8_g128(x: cv.f32["M", "D"], q1: cv.i8["E", "D"], s1: cv.f32["E", "G"],
                    q2: cv.i8["D", "D"], s2: cv.f32["D", "H"], q3: cv.i8["F", "D"],
                    s3: cv.f32["F", "H"], q4: cv.i8["D", "F"], s4: cv.f32["D", "J"]):
    return _layer(x, _g(q1, s1), _g(q2, s2), _g(q3, s3), _g(q4, s4))

@cv.optimize
def proj_fp32(x: cv.f32["M", "K"], w: cv.f32["N", "K"]):
    return x @ w.T

@cv.optimize
def proj_int8(x: cv.f32["M", "K"], q: cv.i8["N", "K"], s: cv.f32["N"]):
    return x @ (q.astype(np.float32) * s[:, None]).T
'''
LAYERS, D = 12, 768
SHAPES = [(3 * D, D), (D, D), (4 * D, D), (D, 4 * D)]


def _reference(x: np.ndarray, layers: list[list[np.ndarray]]) -> np.ndarray:
    x = x.astype(np.float64)
    for w1, w2, w3, w4 in layers:
        a = x @ w1.T
        x = np.tanh(a[:, :D] @ w2.T @ w3.T) @ w4.T + x
    return x


def _times(cases: dict[str, tuple], rounds: int) -> dict[str, np.ndarray]:
    spent: dict[str, list[float]] = {name: [] for name in cases}
    for fn, *args in cases.values():
        fn(*args)
    for _ in range(rounds):
        for name, (fn, *args) in cases.items():
            t = time.perf_counter()
            fn(*args)
            spent[name].append(time.perf_counter() - t)
    return {name: np.array(v) * 1e6 for name, v in spent.items()}


def int8_decode(rounds: int) -> None:
    mod = compile_source(Path(tempfile.mkdtemp()), SOURCE)
    rng = np.random.default_rng(0)
    weights = [[(rng.standard_normal(s) * 0.02).astype(np.float32) for s in SHAPES]
               for _ in range(LAYERS)]
    chan = [[cv.quantize_weights(w) for w in ws] for ws in weights]
    g128 = [[cv.quantize_weights(w, group=128) for w in ws] for ws in weights]
    x = rng.standard_normal((1, D)).astype(np.float32)

    def run(layer, params):
        def step(x):
            for p in params:
                x = layer(x, *p)
            return x
        return step

    flat = [[a for qs in layer for a in qs] for layer in chan]
    flat128 = [[a for qs in layer for a in qs] for layer in g128]
    steps = {"fp32 weights": (run(mod.layer_fp32, weights), x),
             "int8 per channel": (run(mod.layer_int8, flat), x),
             "int8 per group of 128": (run(mod.layer_int8_g128, flat128), x)}
    own = {"fp32 weights": weights,
           "int8 per channel": [[q.astype(np.float64) * s[:, None] for q, s in ls]
                                for ls in chan],
           "int8 per group of 128": [[q.astype(np.float64) * np.repeat(s, 128, axis=1)
                                      for q, s in ls] for ls in g128]}
    exact = _reference(x, weights)
    print(f"\n# int8 weights: GPT-2 decode step projections, batch 1, {LAYERS} layers "
          f"(768->2304->768->3072->768); {rounds} interleaved rounds; us")
    print("| case | median | best | fp32 / this (median) | (best) | kernel error | "
          "total error |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    spent = _times(steps, rounds)
    base = spent["fp32 weights"]
    for name, (fn, arg) in steps.items():
        got = fn(arg).astype(np.float64)
        kernel = np.abs(got - _reference(x, own[name])).max() / np.abs(exact).max()
        total = np.abs(got - exact).max() / np.abs(exact).max()
        t = spent[name]
        print(f"| {name} | {np.median(t):.0f} | {t.min():.0f} | "
              f"{np.median(base) / np.median(t):.2f} | {base.min() / t.min():.2f} | "
              f"{kernel:.1e} | {total:.1e} |")
    print("\n| projection (one layer's weights, in cache) | fp32 median / best | "
          "int8 median / best | fp32 / int8 (median) |")
    print("| --- | --- | --- | --- |")
    for (n, k), w, (q, s) in zip(SHAPES, weights[0], chan[0]):
        v = rng.standard_normal((1, k)).astype(np.float32)
        t = _times({"fp32": (mod.proj_fp32, v, w), "int8": (mod.proj_int8, v, q, s)},
                   rounds * 5)
        print(f"| 1x{k} @ {k}x{n} | {np.median(t['fp32']):.1f} / {t['fp32'].min():.1f} | "
              f"{np.median(t['int8']):.1f} / {t['int8'].min():.1f} | "
              f"{np.median(t['fp32']) / np.median(t['int8']):.2f} |")
