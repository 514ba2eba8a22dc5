"""``if`` statements and conditional expressions on run-time conditions against NumPy:
both blocks run and each name they assign is picked per call, elif chains, nested ifs,
an if inside a run-time loop's body, gathers on the side Python does not run never
raising, early returns, ``if c: raise E("...")`` checked at the call; and what is
refused, at the user's line, where the condition reads array data (on int arguments and
sizes those compile as versions: test_versions.py): a return where the other block goes
on, a raise, a write into an array inside such a block, two values of different shapes
or dtypes, a list that grows in one block; and a name only one block assigns read after
it."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import check, compile_source, gpu_build
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv
from cuvil_aot.compiler.toolchain import nvcc

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[N], int", "f64[N], int"])
def chain(x, t):
    if t > 0:
        y = x * 2
        s = 0.5
    elif t == 0:
        y = x + 1
        s = 1.5
    else:
        y = np.tanh(x)
        s = 2.0
    if 0 <= t < x.shape[0]:
        z = x[t]  # never raises where Python skips it
    else:
        z = x.sum()
    return y * s, z

@cv.optimize(signatures=["f32[N], int, float"])
def nested(x, t, a):
    y = x
    if t > 1:
        if a > 0.5:
            y = y * a
        else:
            y = y - a
        w = y.sum()
    else:
        w = x.sum() * a
    return y + w

@cv.optimize(signatures=["f32[T,N], f32[N]"])
def in_a_loop(xs, h):
    for t in range(xs.shape[0]):
        if t % 2 == 0:
            h = h + xs[t]
        else:
            h = h * 0.5
    return h

@cv.optimize(signatures=["f32[N,M]", "f64[N,M]"])
def early(x):
    if x.shape[0] == 0:
        return x, x.sum()
    if x.shape == (2, 2):
        y = x - 1
        return y * 2, y.sum()
    h = x.sum(axis=0) * 3
    return x + h, h.sum()

@cv.optimize(signatures=["f32[N,K], f32[M,H], int"])
def validated(x, w, t):
    if x.shape[1] != w.shape[0]:
        raise ValueError("x and w do not fit")
    if t < 0 or t > 3:
        raise IndexError
    return x @ w * t

@cv.optimize(signatures=["f32[N], f32[N]"])
def on_data(x, y):
    if x.sum() > y.sum():  # a condition from array data: picked on the device
        out = x - y
    else:
        out = y - x
    return out
'''

sizes = st.integers(0, 6)


def _array(seed: int, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 6), t=st.integers(-4, 8), seed=st.integers(0, 2**16))
def test_if_elif_else(compiled, n, t, seed):
    """(n >= 1: a gather along an empty axis raises on the side not taken too, as the
    README says.)"""
    for dtype in ("float32", "float64"):
        x = _array(seed, (n,), dtype)
        try:
            compiled.chain.py_func(x, t)
        except IndexError as exc:  # (never: the gather is guarded as Python's if)
            with pytest.raises(IndexError, match=str(exc)):
                compiled.chain(x, t)
            continue
        check(compiled.chain, x, t)


@settings(max_examples=40, deadline=None)
@given(n=sizes, t=st.integers(-2, 4), a=st.floats(-2, 2), seed=st.integers(0, 2**16))
def test_nested_ifs(compiled, n, t, a, seed):
    check(compiled.nested, _array(seed, (n,), "float32"), t, a)


@settings(max_examples=30, deadline=None)
@given(steps=sizes, n=sizes, seed=st.integers(0, 2**16))
def test_if_in_a_run_time_loop(compiled, steps, n, seed):
    check(compiled.in_a_loop, _array(seed, (steps, n), "float32"),
          _array(seed + 1, (n,), "float32"))


@settings(max_examples=40, deadline=None)
@given(n=sizes, m=sizes, seed=st.integers(0, 2**16))
def test_early_returns(compiled, n, m, seed):
    """``if c: return a`` then more code: the rest runs where c is false, as Python's."""
    for dtype in ("float32", "float64"):
        check(compiled.early, _array(seed, (n, m), dtype))


@settings(max_examples=40, deadline=None)
@given(n=sizes, k=sizes, m=sizes, h=sizes, t=st.integers(-2, 5), seed=st.integers(0, 2**16))
def test_raise_on_a_condition_the_call_checks(compiled, n, k, m, h, t, seed):
    """``if c: raise ValueError("...")`` on int arguments and dimensions: Python's exception
    and message at the call, where c holds."""
    x, w = _array(seed, (n, k), "float32"), _array(seed + 1, (m, h), "float32")
    try:
        compiled.validated.py_func(x, w, t)
    except (ValueError, IndexError) as exc:
        with pytest.raises(type(exc), match=f"^{exc}$"):
            compiled.validated(x, w, t)
        return
    check(compiled.validated, x, w, t)


@settings(max_examples=30, deadline=None)
@given(n=sizes, seed=st.integers(0, 2**16))
def test_condition_from_array_data(compiled, n, seed):
    check(compiled.on_data, _array(seed, (n,), "float32"), _array(seed + 1, (n,), "float32"))


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")
def test_the_gpu_path_compiles(tmp_path):
    """The picks, guarded gathers and call-time raises in the GPU wrapper and kernels
    (nvcc and cc, no device)."""
    gpu_build(tmp_path, SOURCE)


REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def returns(x: cv.f32["N"], t: int):
    for i in range(2):
        if x.sum() > t + i:
            return x
        x = x * 2
    return x

@cv.optimize
def writes(x: cv.f32["N"], t: int):
    y = x * 1
    if x.sum() > t:
        y[0] = 1.0
    return y

@cv.optimize
def shapes(x: cv.f32["N"], t: int):
    if x.sum() > t:
        y = x
    else:
        y = 0.0
    return y

@cv.optimize
def dtypes(x: cv.f32["N"], t: int):
    if x.sum() > t:
        s = 1
    else:
        s = 2.5
    return x * s

@cv.optimize
def one_side(x: cv.f32["N"], t: int):
    if t > 0:
        y = x * 2
    return y

@cv.optimize
def grows(x: cv.f32["N"], t: int):
    parts = [x]
    if x.sum() > t:
        parts.append(x * 2)
    return np.stack(parts)

@cv.optimize
def raises(x: cv.f32["N"], t: int):
    if x.sum() < t:
        raise ValueError("too small")
    return x
'''


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("refused_ifs"), REFUSED)


@pytest.mark.parametrize(("name", "line", "message"), [
    ("returns", 8, "a return in one block of an if on a run-time condition only"),
    ("writes", 17, "assignment into an array inside an if on a run-time condition"),
    ("shapes", 22, "'y' has different shapes, (N,) and (): which one"),
    ("dtypes", 30, "'s' is int64 and float64: which dtype the result has"),
    ("one_side", 40, "'y' is assigned in one block of an if on a run-time condition only"),
    ("grows", 45, "a list changed in a block of an if on a run-time condition"),
    ("raises", 51, "this raise depends on the values of 'x', 't': the call checks"),
])
def test_refusals_point_at_the_line(refused, name, line, message):
    fn = getattr(refused, name)
    with pytest.raises(cv.CompileError) as info:
        fn(np.ones(3, np.float32), 1)
    text = str(info.value)
    assert message in text, text
    assert f":{line}:" in text, text
