"""np.repeat (and ndarray.repeat) and np.tile with one count per axis, against NumPy in
float64 on random shapes (frontend/shapes.py: a new axis broadcast and merged into its
neighbour): every axis, negative axes, no axis (flattened), counts 0 and 1, a count from a
dimension, tile's reps longer and shorter than the array's rank, and the grouped-query
attention pattern that brings users to it (K and V heads repeated for the query heads).
The results are new arrays (a write into one leaves the argument as it was, count 1 too);
a count from an int argument the call knows (``n_heads // n_kv_heads``) too, NumPy's
ValueError where it is negative; counts per element, counts from array data and negative
constants are refused at the user's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import check, compile_source
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv

SOURCE = '''
import math
import numpy as np
import cuvil_aot as cv

@cv.optimize
def repeats(x: cv.f32["A", "B", "C"]):
    return (np.repeat(x, 3, axis=0), np.repeat(x, 2, axis=1), x.repeat(4, axis=-1),
            np.repeat(x, 2), np.repeat(x, 1, axis=1), np.repeat(x, 0, axis=2) + 1)

@cv.optimize
def by_dimension(x: cv.f32["A", "B"], y: cv.f32["N"]):
    return np.repeat(x, y.shape[0], axis=0) * 2

@cv.optimize
def tiles(x: cv.f32["A", "B"]):
    return np.tile(x, 2), np.tile(x, (3, 1)), np.tile(x, (2, 1, 2)), np.tile(x, (1, 1)) - 1

@cv.optimize(signatures=["i64[N]", "f64[A,B]"])
def other_types(x):
    return np.repeat(x, 2, axis=0), np.tile(x, 3)

@cv.optimize
def gqa(q: cv.f32["B", 8, "T", 16], k: cv.f32["B", 2, "T", 16], v: cv.f32["B", 2, "T", 16]):
    k = np.repeat(k, 4, axis=1)
    v = np.repeat(v, 4, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(16)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v

@cv.optimize
def written(x: cv.f32["A", "B"]):
    r = np.repeat(x, 1, axis=0)
    t = np.tile(x, 1)
    r[0] = 5.0
    t[:, 0] = -5.0
    return r, t, x * 1

@cv.optimize
def by_int(x: cv.f32["H", "T"], n_heads: int):
    return np.repeat(x, n_heads // x.shape[0], axis=0) * 2

'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def per_element(x: cv.f32["N"]):
    return np.repeat(x, [1, 2, 3])

@cv.optimize
def from_data(x: cv.f32["N"]):
    return np.repeat(x, int(x.sum()))

@cv.optimize
def negative(x: cv.f32["N"]):
    return np.tile(x, -1)
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("repeat_tile"), SOURCE)


sizes = st.integers(0, 5)


@settings(max_examples=25, deadline=None)
@given(a=sizes, b=sizes, c=sizes, t=st.integers(1, 9), seed=st.integers(0, 2**32 - 1))
def test_against_numpy(m, a: int, b: int, c: int, t: int, seed: int) -> None:
    r = np.random.default_rng(seed)

    def f32(*shape: int) -> np.ndarray:
        return r.standard_normal(shape).astype(np.float32)

    check(m.repeats, f32(a, b, c))
    check(m.by_dimension, f32(a, b), f32(c))
    check(m.tiles, f32(a, b))
    check(m.other_types, r.integers(-9, 9, a))
    check(m.other_types, r.standard_normal((a, b)))
    check(m.gqa, f32(2, 8, t, 16), f32(2, 2, t, 16), f32(2, 2, t, 16), scale=4)
    check(m.by_int, f32(a + 1, b), (a + 1) * (t % 4))
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        m.by_int(f32(a + 1, b), -(a + 1))


def test_results_are_new_arrays(m) -> None:
    x = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    before = x.copy()
    r, t, same = m.written(x)
    np.testing.assert_array_equal(x, before)
    np.testing.assert_array_equal(same, before)
    want_r, want_t = before.copy(), before.copy()
    want_r[0], want_t[:, 0] = 5.0, -5.0
    np.testing.assert_array_equal(r, want_r)
    np.testing.assert_array_equal(t, want_t)


def test_counts_numpy_would_take_per_element_or_at_run_time_are_refused(tmp_path: Path):
    mod = compile_source(tmp_path, REFUSED)
    x = np.zeros(3, np.float32)
    with pytest.raises(cv.CompileError, match="np.repeat with a count per element is not "
                                              "supported") as e:
        mod.per_element(x)
    assert "np.repeat(x, [1, 2, 3])" in str(e.value) and "^" in str(e.value)
    with pytest.raises(cv.CompileError, match="repeats must be ints known before the "
                                              "kernels run"):
        mod.from_data(x)
    with pytest.raises(cv.CompileError, match="negative dimensions are not allowed"):
        mod.negative(x)


# GPU ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_compiled(tmp_path_factory):
    from gpu_harness import device_arch

    return compile_source(tmp_path_factory.mktemp("gpu_repeat_tile"), SOURCE,
                          cuda_archs=(device_arch(),))


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["cupy", "torch"])
@pytest.mark.parametrize("view", ["contiguous", "strided"])
def test_gpu_against_numpy(gpu_compiled, framework, view):
    from gpu_harness import Framework, run_check

    fw = Framework(framework)
    r = np.random.default_rng(11)
    for a, b, c, t in ((3, 4, 5, 7), (1, 0, 2, 1), (2, 5, 1, 33)):
        x = r.standard_normal((a, b, c)).astype(np.float32)
        run_check(gpu_compiled.repeats, fw, [x], view, 1.0)
        run_check(gpu_compiled.tiles, fw, [x[0]], view, 1.0)
        y = r.standard_normal(c).astype(np.float32)  # its length only (x[0, 0]: b may be 0)
        run_check(gpu_compiled.by_dimension, fw, [x[0], y], view, 1.0)
        q, k, v = (r.standard_normal((2, h, t, 16)).astype(np.float32) for h in (8, 2, 2))
        run_check(gpu_compiled.gqa, fw, [q, k, v], view, 4.0)
