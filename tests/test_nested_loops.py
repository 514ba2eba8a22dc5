"""Run-time loops inside run-time loops, against NumPy: a stack of layers stepped over
time (the inner loop's carried state read by the outer), rows written at both indices
with a number accumulated across both, a KV cache per layer written in place by the
inner loop, an inner ``while`` that counts, empty outer and inner ranges; an inner loop
whose bounds depend on the outer's variable is refused at the line; the same on the GPU,
and the CUDA source compiling with nvcc."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_close, check, compile_source, gpu_build, to64
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv
from cuvil_aot.compiler.toolchain import nvcc

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[L,H,H], f32[B,H], int", "f64[L,H,H], f64[B,H], int"])
def layers_over_steps(w, h, steps):
    for s in range(steps):
        for l in range(w.shape[0]):
            h = np.tanh(h @ w[l]) + 0.1 * s
    return h

@cv.optimize(signatures=["f32[N,M]", "f64[N,M]"])
def grid(x):
    y = np.zeros_like(x)
    acc = np.zeros((), x.dtype)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            y[i, j] = x[i, j] * i + j
            acc = acc + x[i, j] * j
    return y, acc

@cv.optimize(signatures=["f32[L,B,S,D], f32[L,B,T,D], int",
                         "f64[L,B,S,D], f64[L,B,T,D], int"])
def caches_per_layer(cache, new, pos):
    for l in range(cache.shape[0]):
        for t in range(new.shape[2]):
            cache[l, :, pos + t] = new[l, :, t] * (l + 1)
    return cache.sum()

@cv.optimize(signatures=["f32[N], int, int", "f64[N], int, int"])
def inner_while(x, n, m):
    y = x
    for i in range(n):
        j = 0
        while j < m:
            y = y * 0.5 + j
            j += 1
    return y
'''

SIZES = st.sampled_from([0, 1, 2, 3, 5, 8])


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("nested_loops"), SOURCE)


def _normal(seed: int, shape: tuple[int, ...], dtype: str, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


@settings(max_examples=20, deadline=None)
@given(layers=SIZES, b=SIZES, h=SIZES, steps=st.integers(0, 4), seed=st.integers(0, 2**32 - 1))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layers_over_steps(compiled, dtype, layers, b, h, steps, seed):
    w = _normal(seed, (layers, h, h), dtype, 0.5)
    check(compiled.layers_over_steps, w, _normal(seed + 1, (b, h), dtype), steps, scale=4.0)


@settings(max_examples=20, deadline=None)
@given(n=SIZES, m=SIZES, seed=st.integers(0, 2**32 - 1))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rows_and_a_number_across_both_loops(compiled, dtype, n, m, seed):
    check(compiled.grid, _normal(seed, (n, m), dtype), scale=4.0)


@settings(max_examples=20, deadline=None)
@given(layers=SIZES, b=SIZES, t=SIZES, d=SIZES, extra=st.integers(0, 3),
       pos=st.integers(-9, 9), seed=st.integers(0, 2**32 - 1))
def test_a_cache_per_layer_written_in_place(compiled, layers, b, t, d, extra, pos, seed):
    s = t + extra
    cache = _normal(seed, (layers, b, s, d), "float32")
    new = _normal(seed + 1, (layers, b, t, d), "float32")
    mine, real = cache.copy(), cache.copy()
    try:
        expect = compiled.caches_per_layer.py_func(real, new, pos)
    except IndexError as exc:
        with pytest.raises(IndexError, match=re.escape(str(exc))):
            compiled.caches_per_layer(mine, new, pos)
        return
    got = compiled.caches_per_layer(mine, new, pos)
    np.testing.assert_array_equal(mine, real)  # copies, times small ints: exact
    wide = to64([cache.copy(), new, pos])
    assert_close(np.asarray(got), compiled.caches_per_layer.py_func(*wide), np.float32, 4.0,
                 expect)


@settings(max_examples=20, deadline=None)
@given(size=SIZES, n=st.integers(-1, 4), m=st.integers(-1, 4), seed=st.integers(0, 2**32 - 1))
def test_an_inner_while_that_counts(compiled, size, n, m, seed):
    check(compiled.inner_while, _normal(seed, (size,), "float64"), n, m)


def test_bounds_from_the_outer_variable_are_refused(tmp_path: Path):
    source = '''
import cuvil_aot as cv

@cv.optimize
def triangle(x: cv.f32["N"], n: int):
    s = x * 0
    for i in range(n):
        for j in range(i):
            s = s + x
    return s
'''
    mod = compile_source(tmp_path, source)
    with pytest.raises(cv.CompileError) as err:
        mod.triangle(np.zeros(3, np.float32), 2)
    text = str(err.value)
    assert "whose bounds depend on the outer loop's variable" in text, text
    assert re.search(r"\.py:8:\d+: error", text), text  # the inner loop


# GPU ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_compiled(tmp_path_factory):
    from gpu_harness import device_arch

    return compile_source(tmp_path_factory.mktemp("gpu_nested_loops"), SOURCE,
                          cuda_archs=(device_arch(),))


@pytest.mark.gpu
def test_gpu_against_numpy(gpu_compiled):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    failures = []
    cases = [("layers_over_steps", [(3, 8, 8), (2, 8)], [3]),
             ("layers_over_steps", [(1, 1, 1), (1, 1)], [0]),
             ("grid", [(4, 5)], []), ("grid", [(1, 33)], []),
             ("caches_per_layer", [(2, 3, 9, 4), (2, 3, 4, 4)], [5]),
             ("inner_while", [(7,)], [3, 2])]
    for name, shapes, ints in cases:
        fn = getattr(gpu_compiled, name)
        arrays = [(rng.standard_normal(s) * 0.5).astype(np.float32) for s in shapes]
        host = [a.copy() for a in arrays]
        dev = [torch.from_numpy(a.copy()).cuda() for a in arrays]
        expect = fn.py_func(*host, *ints)
        got = fn(*dev, *ints)
        pairs = list(zip(got if isinstance(got, tuple) else (got,),
                         expect if isinstance(expect, tuple) else (expect,)))
        pairs += list(zip(dev, host))
        for g, e in pairs:
            value = g.cpu().numpy() if hasattr(g, "cpu") else np.asarray(g)
            if not np.allclose(value, e, rtol=1e-4, atol=1e-4):
                failures.append(f"{name} {shapes} {ints}")
    assert not failures, failures


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")
def test_cuda_kernels_compile(tmp_path: Path):
    """Nested loops compile for the GPU (nvcc, no device)."""
    artifact = gpu_build(tmp_path, SOURCE)
    assert "caches_per_layer" in artifact.sources["module.c"]
