"""An elementwise kernel runs its two innermost loops as one where every operand's strides
allow it (checked at the call: codegen/launch.merge_condition), so short rows, a K/V
cache's (12, 255, 64) copy into np.concatenate's result say, cost no per-row setup. Every
layout, merged or not, against NumPy in float64."""

from __future__ import annotations

import numpy as np
from conftest import check
from hypothesis import given, settings
from hypothesis import strategies as st

from cuvil_aot.compiler import pipeline

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[A,B,S,E], f32[A,B,T,E]", "f64[A,B,S,E], f64[A,B,T,E]"])
def grow(cache, new):
    return np.concatenate([cache, new], axis=2)

@cv.optimize(signatures=["f32[A,S,E], f32[A,S,E]"])
def add(x, y):
    return x * 2.0 + y

@cv.optimize(signatures=["f32[A,S,E], f32[A,1,E]"])
def add_row(x, r):
    return x + r
'''

dims = st.integers(0, 6)
LAYOUTS = ["contiguous", "strided", "reversed", "padded", "transposed", "flipped"]


def view(rng: np.random.Generator, shape: tuple[int, ...], layout: str, dtype) -> np.ndarray:
    """An array of `shape` whose last two axes are laid out as `layout` says: merged
    (contiguous; every other element: strided) or not (the others)."""
    *lead, s, e = shape
    if layout == "strided":
        return rng.standard_normal((*lead, s, 2 * e)).astype(dtype)[..., ::2]
    if layout == "reversed":
        return rng.standard_normal(shape).astype(dtype)[..., ::-1]
    if layout == "padded":
        return rng.standard_normal((*lead, s, e + 3)).astype(dtype)[..., :e]
    if layout == "transposed":
        return rng.standard_normal((*lead, e, s)).astype(dtype).swapaxes(-1, -2)
    if layout == "flipped":
        return rng.standard_normal(shape).astype(dtype)[..., ::-1, :]
    return rng.standard_normal(shape).astype(dtype)


@settings(max_examples=40, deadline=None)
@given(a=dims, b=dims, s=dims, t=dims, e=st.integers(0, 70), seed=st.integers(0, 2**32 - 1),
       layouts=st.tuples(st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS)))
def test_concatenate_any_layout(compiled, a, b, s, t, e, seed, layouts):
    rng = np.random.default_rng(seed)
    for dtype in (np.float32, np.float64):
        check(compiled.grow, view(rng, (a, b, s, e), layouts[0], dtype),
              view(rng, (a, b, t, e), layouts[1], dtype))


@settings(max_examples=40, deadline=None)
@given(a=dims, s=dims, e=st.integers(0, 70), seed=st.integers(0, 2**32 - 1),
       layouts=st.tuples(st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS)))
def test_elementwise_any_layout(compiled, a, s, e, seed, layouts):
    rng = np.random.default_rng(seed)
    x, y = (view(rng, (a, s, e), lay, np.float32) for lay in layouts)
    check(compiled.add, x, y)
    check(compiled.add_row, x, view(rng, (a, 1, e), layouts[1], np.float32))


def test_only_kernels_whose_operands_all_move_with_both_loops_merge(compiled):
    """The copies of grow and add's kernel may merge; add_row's r stays put along S (a
    broadcast), so its kernel never does."""
    text = pipeline.generate_sources(compiled, pipeline.Options(), None)[3]["module.c"]
    assert text.count("a.merged = ") == 2 * 2 + 1, text.count("a.merged = ")
