"""Assignment into arrays against NumPy: slices with negative starts and steps, ``...``,
int indices known at run time, boolean masks, augmented assignment, casting as
``__setitem__`` casts; into arguments (the caller's array is written, only the region,
and returned as the same object; read-only arrays, out-of-range indices, strided
arguments); what is refused, with its diagnostic; and the same on the GPU."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import assert_close, check, compile_source, gpu_build, load_source, to64
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv
from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.toolchain import nvcc

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[N,M]", "f64[N,M]", "i32[N,M]"])
def local_slices(x):
    y = np.zeros_like(x)
    y[:, ::2] = x[:, ::2] * 2
    y[::-1, ::3] = 3
    y[:, ::-2] += x[:, ::-2]
    return y

@cv.optimize(signatures=["f32[N,M]", "i64[N,M]"])
def offsets(x):
    y = x + 0
    y[::-1, 1::2] = 3
    y[-2::-3] = x[-2::-3] + 1
    y[1, -1] = -7
    return y

@cv.optimize(signatures=["f32[T,D]", "f64[T,D]"])
def sinusoidal(x):
    t, d = x.shape
    position = np.arange(t)[:, None]
    div_term = np.exp(np.arange(0, d, 2) * (-np.log(10000.0) / d))
    pe = np.zeros((t, d), dtype=x.dtype)
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term)
    return x + pe

@cv.optimize(signatures=["f32[N,M]", "f64[N,M]"])
def last_column(x):
    y = x * 1
    y[..., -1] = 1.0
    y[x > 0.5] = 0
    return y

@cv.optimize(signatures=["f32[N,M]", "i64[N,M]"])
def augmented(x):
    y = x * 2
    y[1:] += x[:-1]
    y *= 3
    return y

@cv.optimize(signatures=["f32[N,M]", "i64[N,M]"])
def views_around_a_write(x):
    y = x * 2
    v = y[:, :1]
    before = v * 3       # read before the write
    y[-1, -1] = 7
    v = y[:, :1]         # taken again after it
    return before, v + 0, y

@cv.optimize(signatures=["i32[N]", "f64[N]"])
def into_int8(x):
    y = np.zeros(x.shape, np.int8)
    y[...] = x * 2.5
    return y

@cv.optimize(signatures=["f32[B,S,D], f32[B,S,D], f32[B,D], f32[B,D], int",
                         "f64[B,S,D], f64[B,S,D], f64[B,D], f64[B,D], int"])
def kv_write(k_cache, v_cache, k, v, t):
    k_cache[:, t] = k
    v_cache[:, t] = v
    return k_cache, v_cache

@cv.optimize(signatures=["f32[N,M], int", "i32[N,M], int"])
def hidden_write(x, t):
    old = x.sum(axis=1)
    x[:, t] = 5
    return old, x.sum(axis=1)

@cv.optimize(signatures=["f32[N]"])
def shift(x):
    x[1:] = x[:-1]
    return x

@cv.optimize(signatures=["f32[N,M]"])
def bump(x):
    x += 1
    return x * 2
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def view(x: cv.f32["N", "M"]):
    y = x * 1
    v = y[:, :1]
    v[...] = 0
    return y

@cv.optimize
def stale_view(x: cv.f32["N", "M"]):
    y = x * 1
    v = y.T[:1]
    y[0, 0] = 5
    return v

@cv.optimize
def mask_values(x: cv.f32["N"]):
    y = x * 1
    y[x > 0] = x[:1]
    return y

@cv.optimize
def same_kind(x: cv.i32["N"]):
    y = x * 1
    y += 1.5
    return y
'''

SIZES = st.sampled_from([0, 1, 2, 3, 5, 8])
DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("inplace"), SOURCE)


def _array(rng: np.random.Generator, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    if kind.startswith("i"):
        return rng.integers(-50, 50, shape).astype(DTYPES[kind])
    return rng.standard_normal(shape).astype(DTYPES[kind])


def _kinds(sig: str) -> list[tuple[str, int]]:
    return [(kind, spec.count(",") + 1) for kind, spec in re.findall(r"(\w+)\[([^\]]*)\]", sig)]


@settings(max_examples=25, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("name", ["local_slices", "offsets", "sinusoidal", "last_column",
                                  "augmented", "into_int8", "views_around_a_write"])
def test_local_assignment_against_numpy(compiled, name, data):
    fn = getattr(compiled, name)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    for sig in fn.signatures:
        kinds = _kinds(sig)
        shape = tuple(data.draw(SIZES) for _ in range(kinds[0][1]))
        if name in ("last_column", "sinusoidal") and 0 in shape[-1:]:
            shape = shape[:-1] + (1,)  # no last element; 1::2 of an empty axis (symbolic
            # slices that NumPy would clamp are refused at the call: subscript.py)
        if name == "sinusoidal":  # an even width (NumPy broadcasts 1 into 0 where D == 1)
            shape = (shape[0], 2 * shape[1])
        if name == "views_around_a_write":  # y[-1, -1] needs both axes
            shape = tuple(max(1, n) for n in shape)
        if name == "augmented":  # y[1:] of an empty axis: refused (as offsets' below)
            shape = (max(1, shape[0]),) + shape[1:]
        if name == "offsets":  # constant offsets: axes long enough (symbolic slices need it)
            shape = tuple(max(3, n) for n in shape)
        check(fn, *[_array(rng, kind, shape) for kind, _ in kinds])


def _both(fn: Any, args: list[Any]) -> tuple[tuple[Any, ...], list[Any], tuple[Any, ...],
                                             list[Any], list[Any]]:
    """NumPy's run (real dtypes, then float64) and ours, each on copies of the arguments:
    (NumPy's results, its arguments after, ours, our arguments after, float64's after)."""
    mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    real = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    wide = to64([a.copy() if isinstance(a, np.ndarray) else a for a in args])
    with np.errstate(all="ignore"):
        expect = fn.py_func(*real)
        fn.py_func(*wide)
    got = fn(*mine)
    as_tuple = (lambda r: r if isinstance(r, tuple) else (r,))
    return as_tuple(expect), real, as_tuple(got), mine, wide


def _check_writes(fn: Any, args: list[Any]) -> tuple[tuple[Any, ...], list[Any]]:
    """Results and the arguments after the call as NumPy's: every element of every array
    argument, the assigned region and the rest (poisoned before: untouched means equal)."""
    expect, real, got, mine, wide = _both(fn, args)
    for g, e in zip(got, expect):
        assert np.asarray(g).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(e, np.float64),
                                   rtol=1e-5, atol=1e-5)
    for m, r, w in zip(mine, real, wide):
        if isinstance(m, np.ndarray):
            assert_close(m, w, m.dtype, 1.0, r)
    return got, mine


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_kv_write_writes_the_callers_arrays(compiled, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    b, s, d = (data.draw(SIZES) for _ in range(3))
    for kind in ("f32", "f64"):
        caches = [_array(rng, kind, (b, s, d)) for _ in range(2)]
        rows = [_array(rng, kind, (b, d)) for _ in range(2)]
        t = int(rng.integers(-s - 2, s + 2)) if s else int(rng.integers(-2, 2))
        if not -s <= t < s:
            message = f"index {t} is out of bounds for axis 1 with size {s}"
            with pytest.raises(IndexError, match=re.escape(message)):
                compiled.kv_write(*caches, *rows, t)
            continue
        got, mine = _check_writes(compiled.kv_write, [*caches, *rows, t])
        assert got[0] is mine[0] and got[1] is mine[1]  # the caller's arrays, not copies


@settings(max_examples=20, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("kind", ["f32", "i32"])
def test_reading_before_and_after_a_write(compiled, data, kind):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n, m = data.draw(SIZES), data.draw(SIZES.filter(bool))
    t = int(rng.integers(-m, m))
    _check_writes(compiled.hidden_write, [_array(rng, kind, (n, m)), t])


@settings(max_examples=20, deadline=None)
@given(n=SIZES, m=SIZES, seed=st.integers(0, 2**32 - 1))
def test_overlapping_and_augmented_argument_writes(compiled, n, m, seed):
    rng = np.random.default_rng(seed)
    got, mine = _check_writes(compiled.shift, [_array(rng, "f32", (max(1, n),))])
    assert got[0] is mine[0]
    _check_writes(compiled.bump, [_array(rng, "f32", (n, m))])


def test_strided_and_read_only_arguments(compiled):
    base = np.arange(48, dtype=np.float32).reshape(4, 12)
    ref = base.copy()
    view = base[:, ::3].reshape(2, 2, 4)  # not C-contiguous: written through a copy
    rows = np.full((2, 4), -1, np.float32)
    out = compiled.kv_write(view, view.copy(), rows, rows, -1)
    compiled.kv_write.py_func(ref[:, ::3].reshape(2, 2, 4), view.copy(), rows, rows, -1)
    np.testing.assert_array_equal(base, ref)
    assert out[0] is view
    frozen = np.zeros((2, 3, 4), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        compiled.kv_write(frozen, frozen.copy(), rows, rows, 0)
    with pytest.raises(IndexError, match=re.escape(
            "index 9 is out of bounds for axis 1 with size 8")):
        compiled.kv_write(np.zeros((2, 8, 4), np.float32), np.zeros((2, 8, 4), np.float32),
                          rows, rows, 9)


def test_each_region_is_one_kernel_and_nothing_is_copied(tmp_path: Path):
    """kv_write runs two kernels, each over its region (B, 1, D): no copy of a cache."""
    module = load_source(tmp_path, SOURCE)
    lowered = pipeline.compile_ir(module, pipeline.Options(cuda_archs=()))[2]
    (sig, ir), *_ = lowered["kv_write"]
    spaces = [tuple(str(d) for d in g.space.shape) for g in ir.groups]
    assert spaces == [("B", "1", "D"), ("B", "1", "D")]
    (sig, pe), *_ = lowered["sinusoidal"]
    assert len(pe.groups) == 4  # the zeros, two strided regions, x + pe: the ramps inline


def test_refusals_point_at_the_line(tmp_path: Path):
    mod = compile_source(tmp_path, REFUSED)
    with pytest.raises(cv.CompileError, match="a view of another array"):
        mod.view(np.zeros((2, 2), np.float32))
    with pytest.raises(cv.CompileError, match="'v' is a view of an array written after it "
                       "was taken: in NumPy it shows the write"):
        mod.stale_view(np.zeros((2, 2), np.float32))  # read after the write: refused
    with pytest.raises(cv.CompileError, match="through a boolean mask"):
        mod.mask_values(np.zeros(3, np.float32))
    with pytest.raises(cv.CompileError, match="Cannot cast ufunc 'add' output"):
        mod.same_kind(np.zeros(3, np.int32))


# GPU ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_compiled(tmp_path_factory):
    from gpu_harness import device_arch

    return compile_source(tmp_path_factory.mktemp("gpu_inplace"), SOURCE,
                          cuda_archs=(device_arch(),))


@pytest.mark.gpu
def test_gpu_kv_write_writes_the_callers_tensors(gpu_compiled):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    for b, s, d, t in [(2, 8, 4, 3), (1, 5, 1, -1), (3, 16, 64, 15), (0, 4, 2, 1)]:
        caches = [_array(rng, "f32", (b, s, d)) for _ in range(2)]
        rows = [_array(rng, "f32", (b, d)) for _ in range(2)]
        dev = [torch.from_numpy(a.copy()).cuda() for a in caches + rows]
        got = gpu_compiled.kv_write(*dev, t)
        gpu_compiled.kv_write.py_func(*caches, *rows, t)
        assert got[0] is dev[0] and got[1] is dev[1]
        for tensor, ref in zip(dev[:2], caches):
            np.testing.assert_array_equal(tensor.cpu().numpy(), ref)
    strided = torch.zeros((2, 8, 8), device="cuda")[:, :, ::2]
    rows_t = torch.ones((2, 4), device="cuda")
    gpu_compiled.kv_write(strided, strided.clone(), rows_t, rows_t, 2)
    assert float(strided[:, 2].sum()) == 8.0 and float(strided.sum()) == 8.0
    with pytest.raises(IndexError, match="index 8 is out of bounds for axis 1 with size 8"):
        gpu_compiled.kv_write(strided, strided.clone(), rows_t, rows_t, 8)


@pytest.mark.gpu
def test_gpu_local_assignment_against_numpy(gpu_compiled):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    # N >= 1 and D >= 2 as on the CPU: a constant slice bound past a symbolic size, and a
    # size-1 value into sinusoidal's empty pe[:, 1::2] at D = 1, raise at the call where
    # NumPy clamps and broadcasts (the README's "Not yet")
    for shape in [(1, 3), (2, 2), (5, 8), (64, 33)]:
        x = _array(rng, "f32", shape)
        for name in ("local_slices", "sinusoidal", "last_column", "augmented"):
            if name == "last_column" and shape[-1] == 0:
                continue
            fn = getattr(gpu_compiled, name)
            try:  # an odd D: NumPy cannot put D // 2 + 1 columns into pe[:, 1::2]
                ref = fn.py_func(x.astype(np.float64))
            except ValueError:
                with pytest.raises(ValueError):
                    fn(torch.from_numpy(x).cuda())
                continue
            got = fn(torch.from_numpy(x).cuda())
            assert_close(got.cpu().numpy(), ref, np.float32, 8.0)


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")
def test_cuda_kernels_compile(tmp_path: Path):
    """Every assignment compiles for the GPU (nvcc, no device needed)."""
    artifact = gpu_build(tmp_path, SOURCE)
    assert "assignment destination is read-only" in artifact.sources["module.c"]
