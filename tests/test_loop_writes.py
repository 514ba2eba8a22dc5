"""Assignment into arrays inside loops whose trip count is known only at run time, against
NumPy: rows of a local array written at the loop's index (``y[t] = ...``), a KV cache
argument written in place (the caller's array changes, only the written rows; a strided
one through a copy written back), a prefix sum reading what the previous iteration wrote,
``x += v`` on an argument, a greedy decode loop storing its tokens, negative indices that
wrap and out-of-range ones that raise NumPy's IndexError, empty loops; what is refused, at
the line; the same on the GPU, and the CUDA source compiling with nvcc."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import assert_close, compile_source, gpu_build, load_source, to64
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv
from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.toolchain import nvcc

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[T,D], int", "f64[T,D], int"])
def fill_rows(x, n):
    y = np.zeros((2 * x.shape[0] + 1, x.shape[1]), x.dtype)
    for t in range(n):
        y[t] = np.tanh(x[t % x.shape[0]]) * t
    return y

@cv.optimize(signatures=["f32[B,L,D], f32[B,L,D], f32[B,T,D], f32[B,T,D], int",
                         "f64[B,L,D], f64[B,L,D], f64[B,T,D], f64[B,T,D], int"])
def cache_append(k_cache, v_cache, k_new, v_new, pos):
    for t in range(k_new.shape[1]):
        k_cache[:, pos + t] = k_new[:, t]
        v_cache[:, pos + t] = v_new[:, t] * 0.5
    return (k_cache * v_cache).sum(axis=2)

@cv.optimize(signatures=["f32[N], int", "f64[N], int", "i32[N], int"])
def prefix(x, n):
    y = x.copy()
    for t in range(1, n):
        y[t] += y[t - 1]
    return y

@cv.optimize(signatures=["f32[N, M], int", "i64[N, M], int"])
def bump(x, n):
    for t in range(n):
        x += 1
        x[t % x.shape[0], -1] = t
    return x

@cv.optimize(signatures=["f32[V,H], f32[H,V], f32[H,H], f32[H], int"])
def greedy(emb, w_out, w_h, h0, steps):
    tokens = np.zeros(16, np.int64)
    h = h0
    for t in range(steps):
        tok = np.argmax(h @ w_out)
        tokens[t] = tok
        h = np.tanh(emb[tok] + h @ w_h)
    return tokens, h

@cv.optimize(signatures=["f32[N], int, int", "f64[N], int, int"])
def at_offset(x, n, k):
    y = x * 1.0
    for t in range(n):
        y[t - k] = y[t - k] * 2 + t
    return y
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[N], int"])
def alias_read(x, n):
    y = x.copy()
    z = y
    for t in range(n):
        y[t] = z[t] + 1
    return y

@cv.optimize(signatures=["f32[N], int"])
def written_then_rebound(x, n):
    y = x.copy()
    for t in range(n):
        y[t] = 1.0
        y = y * 2
    return y

def put(a, t):
    a[t] = 0.0

@cv.optimize(signatures=["f32[N], int"])
def helper_writes(x, n):
    y = x.copy()
    for t in range(n):
        put(y, t)
    return y

@cv.optimize(signatures=["f32[N,M], int"])
def view_written(x, n):
    v = x[:, :2]
    for t in range(n):
        v[t] = 0.0
    return x
'''

SIZES = st.sampled_from([0, 1, 2, 3, 5, 8, 17])


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("loop_writes"), SOURCE)


def _array(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    if dtype.startswith("i"):
        return rng.integers(-50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _check(fn: Any, args: list[Any]) -> tuple[tuple[Any, ...], list[Any]]:
    """Results and the arguments after the call equal NumPy's (float results judged against
    float64 on float64 copies of the arguments); NumPy's exception raised the same."""
    mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    real = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    wide = to64([a.copy() if isinstance(a, np.ndarray) else a for a in args])
    try:
        with np.errstate(all="ignore"):
            expect = fn.py_func(*real)
    except IndexError as exc:
        with pytest.raises(IndexError, match=re.escape(str(exc))):
            fn(*mine)
        return (), mine
    with np.errstate(all="ignore"):
        ref = fn.py_func(*wide)
    got = fn(*mine)
    as_tuple = (lambda r: r if isinstance(r, tuple) else (r,))
    for g, e, r in zip(as_tuple(got), as_tuple(expect), as_tuple(ref)):
        assert np.asarray(g).dtype == np.asarray(e).dtype
        kind = np.asarray(e).dtype
        assert_close(np.asarray(g), r if kind.kind == "f" else e, kind, 4.0, e)
    for m, r, w in zip(mine, real, wide):
        if isinstance(m, np.ndarray):
            assert_close(m, w if m.dtype.kind == "f" else r, m.dtype, 4.0, r)
    return as_tuple(got), mine


@settings(max_examples=25, deadline=None)
@given(t=SIZES.filter(bool), d=SIZES, n=st.integers(0, 40), seed=st.integers(0, 2**32 - 1))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rows_of_a_local_array(compiled, dtype, t, d, n, seed):
    x = _array(np.random.default_rng(seed), dtype, (t, d))
    _check(compiled.fill_rows, [x, n])  # n past 2T + 1 raises IndexError, as NumPy


@settings(max_examples=25, deadline=None)
@given(b=SIZES, ln=SIZES, t=SIZES, d=SIZES, pos=st.integers(-20, 20),
       seed=st.integers(0, 2**32 - 1))
def test_kv_cache_written_in_place(compiled, b, ln, t, d, pos, seed):
    rng = np.random.default_rng(seed)
    for dtype in ("float32", "float64"):
        args = [_array(rng, dtype, (b, ln, d)) for _ in range(2)] + [
            _array(rng, dtype, (b, t, d)) for _ in range(2)] + [pos]
        got, mine = _check(compiled.cache_append, args)


def test_the_callers_cache_is_written_and_nothing_else(compiled):
    rng = np.random.default_rng(0)
    k, v = (_array(rng, "float32", (2, 9, 4)) for _ in range(2))
    before_k, before_v = k.copy(), v.copy()
    k_new, v_new = (_array(rng, "float32", (2, 3, 4)) for _ in range(2))
    compiled.cache_append(k, v, k_new, v_new, 5)
    np.testing.assert_array_equal(k[:, 5:8], k_new)
    np.testing.assert_array_equal(v[:, 5:8], v_new * np.float32(0.5))
    for got, before in ((k, before_k), (v, before_v)):
        np.testing.assert_array_equal(got[:, :5], before[:, :5])
        np.testing.assert_array_equal(got[:, 8:], before[:, 8:])
    base = rng.standard_normal((2, 9, 8)).astype(np.float32)
    ref = base.copy()
    strided = base[:, :, ::2]  # not C-contiguous: written through a copy, copied back
    compiled.cache_append(strided, strided.copy(), k_new, v_new, -4)
    compiled.cache_append.py_func(ref[:, :, ::2], ref[:, :, ::2].copy(), k_new, v_new, -4)
    np.testing.assert_array_equal(base, ref)


@settings(max_examples=25, deadline=None)
@given(size=SIZES, n=st.integers(0, 20), seed=st.integers(0, 2**32 - 1))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_a_prefix_sum_reads_the_previous_write(compiled, dtype, size, n, seed):
    _check(compiled.prefix, [_array(np.random.default_rng(seed), dtype, (size,)), n])


@settings(max_examples=20, deadline=None)
@given(rows=SIZES.filter(bool), cols=SIZES.filter(bool), n=st.integers(0, 9),
       seed=st.integers(0, 2**32 - 1))
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_augmented_assignment_writes_the_argument(compiled, dtype, rows, cols, n, seed):
    x = _array(np.random.default_rng(seed), dtype, (rows, cols))
    got, mine = _check(compiled.bump, [x, n])
    assert got[0] is mine[0]  # the caller's array, returned as itself


@settings(max_examples=15, deadline=None)
@given(v=st.sampled_from([1, 3, 11]), h=st.sampled_from([1, 4, 9]), steps=st.integers(0, 16),
       seed=st.integers(0, 2**32 - 1))
def test_a_greedy_decode_loop_stores_its_tokens(compiled, v, h, steps, seed):
    rng = np.random.default_rng(seed)
    args = [_array(rng, "float32", s) for s in ((v, h), (h, v), (h, h), (h,))]
    got = compiled.greedy(*args, steps)
    expect = compiled.greedy.py_func(*args, steps)
    # argmax on float32 products may pick another token where two logits tie within
    # rounding: compare the tokens up to the first tie and the state where none differs
    np.testing.assert_array_equal(got[0][steps:], 0)
    if np.array_equal(got[0], expect[0]):
        assert_close(got[1], expect[1].astype(np.float64), np.float32, 8.0, expect[1])


@settings(max_examples=25, deadline=None)
@given(size=SIZES, n=st.integers(0, 20), k=st.integers(-20, 20), seed=st.integers(0, 2**32 - 1))
def test_negative_indices_wrap_and_out_of_range_raises(compiled, size, n, k, seed):
    _check(compiled.at_offset, [_array(np.random.default_rng(seed), "float64", (size,)), n, k])


def test_out_of_range_names_the_index_and_axis(compiled):
    with pytest.raises(IndexError, match=re.escape(
            "index 7 is out of bounds for axis 0 with size 7")):
        compiled.fill_rows(np.ones((3, 2), np.float32), 8)


def test_one_buffer_across_iterations(tmp_path: Path):
    """A written array is one buffer the body's kernels write in place: a row per
    iteration (no copy of the array per iteration), and a written argument's loop
    starts from the caller's array itself (no copy of the cache per call)."""
    module = load_source(tmp_path, SOURCE)
    lowered = pipeline.compile_ir(module, pipeline.Options(cuda_archs=()))[2]
    (_, fn), *_ = lowered["cache_append"]
    (loop,) = [g for g in fn.groups if g.loop is not None]
    spaces = [tuple(str(d) for d in g.space.shape) for g in loop.loop.fn.groups]
    assert spaces == [("B", "D"), ("B", "D")], spaces
    sources = pipeline.generate_sources(module, pipeline.Options(cuda_archs=()))[3]
    c_text = "".join(text for name, text in sources.items() if name.endswith(".c"))
    assert re.search(r"L0cur\[0\] = .*\? (\(char \*\)\(buf\[\d+\]\)) : \1;", c_text)


def test_refusals_point_at_the_line(tmp_path: Path):
    mod = compile_source(tmp_path, REFUSED)
    x = np.zeros(4, np.float32)
    lines = REFUSED.splitlines()
    for name, message in [
            ("alias_read", "'z' holds the array 'y' that a run-time loop writes into"),
            ("written_then_rebound", "'y' is assigned into and then rebound"),
            ("helper_writes", "assign in the loop's body itself"),
            ("view_written", "a view of another array")]:
        with pytest.raises(cv.CompileError) as err:
            getattr(mod, name)(x if name != "view_written" else x.reshape(2, 2), 1)
        text = str(err.value)
        assert message in text, text
        start = lines.index(f"def {name}(x, n):")  # the error is at the loop's line
        at = lines.index("    for t in range(n):", start) + 1
        assert re.search(rf"\.py:{at}:\d+: error", text), text


# GPU ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_compiled(tmp_path_factory):
    from gpu_harness import device_arch

    return compile_source(tmp_path_factory.mktemp("gpu_loop_writes"), SOURCE,
                          cuda_archs=(device_arch(),))


@pytest.mark.gpu
def test_gpu_against_numpy(gpu_compiled):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    cases: list[tuple[str, list[Any]]] = []
    for t, d, n in [(3, 4, 5), (1, 1, 3), (5, 33, 0), (2, 64, 5)]:
        cases.append(("fill_rows", [_array(rng, "float32", (t, d)), n]))
    for b, ln, t, d, pos in [(2, 9, 3, 4, 5), (1, 4, 2, 64, -2), (3, 16, 0, 8, 1)]:
        cases.append(("cache_append", [_array(rng, "float32", s) for s in
                                       ((b, ln, d), (b, ln, d), (b, t, d), (b, t, d))] + [pos]))
    for size, n in [(7, 5), (1, 1), (40, 40)]:
        cases.append(("prefix", [_array(rng, "float32", (size,)), n]))
        cases.append(("bump", [_array(rng, "float32", (size, 3)), n % 9]))
    failures = []
    for name, args in cases:
        fn = getattr(gpu_compiled, name)
        host = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        dev = [torch.from_numpy(a.copy()).cuda() if isinstance(a, np.ndarray) else a
               for a in args]
        expect = fn.py_func(*host)
        got = fn(*dev)
        pairs = list(zip(got if isinstance(got, tuple) else (got,),
                         expect if isinstance(expect, tuple) else (expect,)))
        pairs += [(d, h) for d, h in zip(dev, host) if isinstance(h, np.ndarray)]
        for g, e in pairs:
            if not np.allclose(g.cpu().numpy(), e, rtol=1e-4, atol=1e-4):
                failures.append(f"{name} {[np.shape(a) for a in args]}")
    assert not failures, failures
    with pytest.raises(IndexError, match="out of bounds for axis 0"):
        gpu_compiled.fill_rows(torch.ones((3, 2), device="cuda"), 8)


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")
def test_cuda_kernels_compile(tmp_path: Path):
    """Every loop that writes into arrays compiles for the GPU (nvcc, no device)."""
    artifact = gpu_build(tmp_path, SOURCE)
    assert "cache_append" in artifact.sources["module.c"]
