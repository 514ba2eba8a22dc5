"""Iteration known at compile time (frontend/unrolled.py) against NumPy in float64 on
random shapes: list comprehensions (one or two generators, filters, over enumerate, zip
and reversed, inside np.stack / np.concatenate, a 1-D convolution's shifted windows),
generator expressions in Python's builtins (used up once, as Python's) and for loops over
enumerate, zip and reversed of tuples and ranges, as real models write them (``for i, w in
enumerate(layers)``). A comprehension's names stay its own, as in Python 3.
Comprehensions over a range known only at run time, filters on run-time values and a
generator expression where NumPy wants a sequence are refused at the user's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import check, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def conv1d(x: cv.f32["C", "L"], w: cv.f32["O", "C", 3], b: cv.f32["O"]):
    xp = np.pad(x, ((0, 0), (1, 1)))
    cols = np.stack([xp[:, i:i + x.shape[1]] for i in range(3)], axis=1)
    return np.einsum("ock,ckl->ol", w, cols) + b[:, None]

@cv.optimize
def heads(x: cv.f32["T", 12]):
    parts = [x[:, 3 * h:3 * h + 3] * (h + 1) for h in range(4) if h != 2]
    pairs = [p * q for p in parts for q in parts[:1]]
    return np.concatenate(parts, axis=1), np.stack(pairs), len(pairs)

@cv.optimize
def layers(x: cv.f32["N", 4], w1: cv.f32[4, 4], w2: cv.f32[4, 4], w3: cv.f32[4, 4]):
    i = 10.0
    ws = (w1, w2, w3)
    outs = [np.tanh(x @ w) * i for i, w in enumerate(ws)]
    h = x
    for j, w in enumerate(ws):
        h = np.tanh(h @ w) + j
    for a, c in zip(ws, reversed(ws)):
        h = h @ (a - c) * 0.5
    for w in reversed(ws[1:]):
        h = h @ w
    for j in reversed(range(1, 3)):
        h = h * 0.5 + ws[j][0]
    return np.stack(outs), h, x * i

@cv.optimize
def generated(x: cv.f32["N", 6]):
    half = x.reshape(tuple(d // 2 for d in (4 * x.shape[0], x.shape[1])))
    parts = (x[:, 2 * j:2 * j + 2] * (j + 1) for j in range(3))
    total = sum(p * p for p in parts)
    again = sum(parts, 0.5)  # used up: Python's sum of nothing, 0.5
    widest = max(d * 2 for d in (x.shape[1], 1)) + len(list(h for h in range(4) if h % 2))
    stacked = np.stack(list(x[:, j] for j in range(2)))
    for w in (x[:, j:j + 1] for j in range(2)):
        total = total + w
    return half, total, again, widest, stacked, any(d > 5 for d in x.shape[1:])
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def run_time_range(x: cv.f32["N"], n: int):
    return np.stack([x * i for i in range(n)])

@cv.optimize
def run_time_filter(x: cv.f32["N"], s: float):
    return np.stack([x * i for i in range(3) if s > i])

@cv.optimize
def generator(x: cv.f32["N"]):
    return np.stack(x * i for i in range(3))

@cv.optimize
def run_time_truth(x: cv.f32["N"]):  # Python's any of a size the call knows
    return x * any([d > 5 for d in x.shape])
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("unrolled"), SOURCE)


@settings(max_examples=20, deadline=None)
@given(a=st.integers(0, 6), b=st.integers(1, 9), seed=st.integers(0, 2**32 - 1))
def test_against_numpy(m, a: int, b: int, seed: int) -> None:
    r = np.random.default_rng(seed)

    def f32(*shape: int) -> np.ndarray:
        return r.standard_normal(shape).astype(np.float32)

    check(m.conv1d, f32(a, b), f32(5, a, 3), f32(5), scale=4)
    check(m.heads, f32(b, 12))
    check(m.layers, f32(a, 4), f32(4, 4), f32(4, 4), f32(4, 4), scale=8)
    check(m.generated, f32(a, 6))


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    x = np.zeros(3, np.float32)
    with pytest.raises(cv.CompileError, match="comprehension over a range known only at run") as e:
        mod.run_time_range(x, 2)
    assert "range(n)" in str(e.value) and "^" in str(e.value)
    with pytest.raises(cv.CompileError, match="condition must be known at compile time"):
        mod.run_time_filter(x, 1.0)
    with pytest.raises(cv.CompileError, match=r"stack\(\) of a generator expression: NumPy "
                       "wants a sequence here"):
        mod.generator(x)
    with pytest.raises(cv.CompileError, match=r"any\(\) of a number known only at run time"):
        mod.run_time_truth(x)  # was any() of nodes, each true: a silent wrong answer
