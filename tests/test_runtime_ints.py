"""Slices and indices from int parameters against NumPy: ``k[:, : t + 1]``, ``x[:, a:b]``,
``x[:, ::s]``, ``x[a:b:s]``, ``x[t]``: Python's slice semantics (negative bounds wrap
once, out-of-range bounds clamp, empty results, a zero step raising ValueError) and
NumPy's IndexError for an integer index out of range; a slice with run-time bounds
feeding a matmul, a reduction and another slice; what is refused (float or array-valued
bounds) and where; the same on the GPU, and the CUDA source compiling with nvcc (loops
whose trip count is known only at run time: test_runtime_loops.py)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import check, compile_source, gpu_build
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv
from cuvil_aot.compiler.toolchain import nvcc

SOURCE = '''
import math

import numpy as np
import cuvil_aot as cv

def softmax(x, axis=-1):
    x = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)

@cv.optimize(signatures=["f32[B,D], f32[B,S,D], f32[B,S,D], int",
                         "f64[B,D], f64[B,S,D], f64[B,S,D], int"])
def attend_prefix(q, k_cache, v_cache, t):
    k = k_cache[:, : t + 1]
    v = v_cache[:, : t + 1]
    scores = (k @ q[:, :, None])[..., 0] / math.sqrt(q.shape[-1])
    return (softmax(scores)[:, :, None] * v).sum(axis=1)

@cv.optimize(signatures=["f32[N,M], int, int", "f64[N,M], int, int"])
def bounds(x, a, b):
    return x[:, a:b], x[a:b] * 2, x[a:, :b] + 1, x[-b:a, ::2]

@cv.optimize(signatures=["f32[N,M], int", "i32[N,M], int"])
def strided(x, s):
    return x[:, ::s], x[::s] * 3, x[1::s, ::-1]

@cv.optimize(signatures=["f32[N,M], int, int, int"])
def general(x, a, b, s):
    return x[a:b:s], x[:, b:a:s].sum(axis=1), x[a:b:s, ::s]

@cv.optimize(signatures=["f32[N,M], int"])
def composed(x, t):
    return (x[:, :t][:, ::2], x[::2][t:], x[:, t - x.shape[1]:], x[:, : t // 2 + 1] * 2,
            x[:, t * 2 - 3 : t % 3])

@cv.optimize(signatures=["f32[N,K], f32[K,M], int"])
def sliced_matmul(x, w, t):
    return x[:, :t] @ w[:t]

@cv.optimize(signatures=["f32[N,M], int", "f64[N,M,E], int"])
def index(x, t):
    return x[t], x[:, t] * 2, x[t, ::-1]

@cv.optimize(signatures=["f32[N,M], int"])
def column(x, t):
    return x[:, t] * 2

@cv.optimize(signatures=["f32[N,M], bool"])
def bool_bound(x, flag):
    return x[flag:], x[:, :flag]
'''

dims = st.integers(0, 6)
small = st.integers(-10, 10)
extreme = st.sampled_from([-2**63, -2**62, -2**40, 2**40, 2**62, 2**63 - 1])
ints = st.one_of(small, small, small, extreme)
negatable = ints.filter(lambda v: v != -2**63)
steps = st.one_of(st.integers(-4, 4), extreme)


def _array(rng: np.random.Generator, shape: tuple[int, ...], dtype: str,
           view: str) -> np.ndarray:
    a = (rng.standard_normal(shape) * 4).astype(dtype)
    if view == "strided" and a.ndim:
        return np.repeat(a, 2, axis=-1)[..., ::2]
    if view == "transposed" and a.ndim == 2:
        return a.T.copy().T
    return a


def check_or_raise(fn, *args) -> None:
    """check(), or NumPy's IndexError where NumPy raises one."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # NumPy's own warnings are not under test
            fn.py_func(*args)
    except IndexError as exc:
        with pytest.raises(IndexError, match=re.escape(str(exc))):
            fn(*args)
        return
    except (ValueError, TypeError, ZeroDivisionError):
        pass  # check() expects the same error
    check(fn, *args)


def _arrays(fn, seed: int, sizes: dict[str, int], view: str):
    """Each signature's array arguments (their dims from ``sizes``), and its int count."""
    rng = np.random.default_rng(seed)
    for sig in fn.signatures:
        arrays = []
        for kind, spec in re.findall(r"(\w+)\[([^\]]*)\]", sig):
            shape = tuple(sizes[d.strip()] for d in spec.split(","))
            dtype = {"f32": "float32", "f64": "float64", "i32": "int32"}[kind]
            arrays.append(_array(rng, shape, dtype, view))
        yield arrays


views = st.sampled_from(["contiguous", "strided", "transposed"])
SIZES = st.fixed_dictionaries({d: dims for d in ("B", "S", "D", "N", "M", "K", "E")})


@settings(max_examples=40, deadline=None)
@given(sizes=SIZES, seed=st.integers(0, 2**16), view=views,
       t=st.one_of(st.integers(-12, 12), st.sampled_from([-2**62, 2**62])))
def test_attend_prefix(compiled, sizes, seed, view, t):
    """k_cache[:, : t + 1] (the cookbook's decode step) for every t, in range or not."""
    for arrays in _arrays(compiled.attend_prefix, seed, sizes, view):
        check_or_raise(compiled.attend_prefix, *arrays, t)


@settings(max_examples=60, deadline=None)
@given(sizes=SIZES, seed=st.integers(0, 2**16), view=views, a=ints, b=negatable)
def test_bounds(compiled, sizes, seed, view, a, b):
    """Bounds in range, out of range and negative; -b of an int64 wraps (no -(-2**63))."""
    for arrays in _arrays(compiled.bounds, seed, sizes, view):
        check_or_raise(compiled.bounds, *arrays, a, b)


@settings(max_examples=60, deadline=None)
@given(sizes=SIZES, seed=st.integers(0, 2**16), view=views, s=steps)
def test_strided(compiled, sizes, seed, view, s):
    """A run-time step, negative ones and zero (NumPy's ValueError) included."""
    for arrays in _arrays(compiled.strided, seed, sizes, view):
        check_or_raise(compiled.strided, *arrays, s)


@settings(max_examples=80, deadline=None)
@given(sizes=SIZES, seed=st.integers(0, 2**16), view=views, a=ints, b=ints, s=steps)
def test_general(compiled, sizes, seed, view, a, b, s):
    for arrays in _arrays(compiled.general, seed, sizes, view):
        check_or_raise(compiled.general, *arrays, a, b, s)


@settings(max_examples=60, deadline=None)
@given(sizes=SIZES, seed=st.integers(0, 2**16), view=views,
       t=st.one_of(st.integers(-14, 14), st.sampled_from([-2**61, 2**61])))
def test_composed(compiled, sizes, seed, view, t):
    """A run-time slice of a run-time slice, of a strided slice, and bounds computed from
    the int and a dimension (t - M, t // 2 + 1, t % 3)."""
    for arrays in _arrays(compiled.composed, seed, sizes, view):
        check_or_raise(compiled.composed, *arrays, t)


@settings(max_examples=40, deadline=None)
@given(sizes=SIZES, seed=st.integers(0, 2**16), view=views, t=ints)
def test_sliced_matmul(compiled, sizes, seed, view, t):
    """x[:, :t] @ w[:t]: the same slice of the same size has one length, so the inner
    dimensions match."""
    for arrays in _arrays(compiled.sliced_matmul, seed, sizes, view):
        check_or_raise(compiled.sliced_matmul, *arrays, t)


@settings(max_examples=60, deadline=None)
@given(sizes=SIZES, seed=st.integers(0, 2**16), view=views, t=ints)
def test_index(compiled, sizes, seed, view, t):
    """x[t]: NumPy's IndexError, with its message, where t is out of range."""
    for arrays in _arrays(compiled.index, seed, sizes, view):
        check_or_raise(compiled.index, *arrays, t)


@pytest.mark.parametrize("flag", [False, True])
def test_bool_bound(compiled, flag):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    check(compiled.bool_bound, x, flag)


def test_index_error_message(compiled):
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(IndexError, match=re.escape("index 3 is out of bounds for axis 0 with "
                                                   "size 3")):
        compiled.index(x, 3)
    with pytest.raises(IndexError, match=re.escape("index -5 is out of bounds for axis 1 with "
                                                   "size 4")):
        compiled.index(np.zeros((5, 4), np.float32), -5)
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 1 with size 4"):
        compiled.column(np.zeros((0, 4), np.float32), 9)  # checked where nothing is gathered


def test_zero_step_raises_value_error(compiled):
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        compiled.strided(np.zeros((3, 4), np.float32), 0)


def test_ir_names_the_run_time_slice(compiled):
    """The wrapper computes the slice per call with CPython's own clamping."""
    assert "PySlice_AdjustIndices" in compiled.__artifact__.sources["module.c"]


REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def float_bound(x: cv.f32["N"], f: float):
    return x[:f]

@cv.optimize
def array_bound(x: cv.f32["N"], n: cv.i64["K"]):
    return x[: int(n.sum())]

'''


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("refused"), REFUSED)


@pytest.mark.parametrize(("name", "line", "message"), [
    ("float_bound", 7, "TypeError: slice indices must be integers or None"),
    ("array_bound", 11, "a slice bound computed from the values of an array is not supported"),
])
def test_refusals_point_at_the_line(refused, name, line, message):
    with pytest.raises(cv.CompileError) as err:
        getattr(refused, name)()
    text = str(err.value)
    assert message in text
    assert re.search(rf"\.py:{line}:\d+: error", text), text
    assert "supported instead" in text and "cuvil_aot bug" not in text


# GPU ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_compiled(tmp_path_factory):
    from gpu_harness import device_arch

    return compile_source(tmp_path_factory.mktemp("gpu_runtime_ints"), SOURCE,
                          cuda_archs=(device_arch(),))


INTS = {"attend_prefix": 1, "bounds": 2, "strided": 1, "general": 3, "composed": 1,
        "sliced_matmul": 1, "index": 1, "column": 1, "bool_bound": 1}


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["cupy", "torch"])
def test_gpu_against_numpy(gpu_compiled, framework):
    from gpu_harness import Framework, run_check

    fw = Framework(framework)
    rng = np.random.default_rng(11)
    failures = []
    for name, count in sorted(INTS.items()):
        fn = getattr(gpu_compiled, name)
        for view in ("contiguous", "strided", "transposed"):
            sizes = {d: int(rng.choice([0, 1, 3, 7, 64])) for d in "BSDNMKE"}
            for arrays in _arrays(fn, int(rng.integers(1 << 16)), sizes, view):
                for _ in range(4):
                    values = [int(v) for v in rng.integers(-70, 70, count)]
                    if name == "bool_bound":
                        values = [bool(values[0] % 2)]
                    try:
                        with np.errstate(all="ignore"):
                            fn.py_func(*arrays, *values)
                    except IndexError:
                        continue  # IndexError on the GPU: test_gpu_index_error
                    except (ValueError, TypeError, ZeroDivisionError):
                        pass  # run_check expects the same error
                    try:
                        run_check(fn, fw, [*arrays, *values], view, 8.0)
                    except Exception as exc:  # noqa: BLE001 - every failure is reported
                        failures.append(f"{name} {view} {sizes} {values}: "
                                        f"{type(exc).__name__}: {str(exc)[:300]}")
    assert not failures, "\n".join(failures)


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["cupy", "torch"])
def test_gpu_index_error(gpu_compiled, framework):
    from gpu_harness import Framework

    fw = Framework(framework)
    x = fw.put(np.zeros((3, 4), np.float32))
    with pytest.raises(IndexError, match="is out of bounds for axis 0 with size 3"):
        gpu_compiled.index(x, 3)
    # x[:, t] of an array empty along axis 0 gathers nothing: t is checked on the host,
    # before the launches, as NumPy checks it
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 1 with size 4"):
        gpu_compiled.column(fw.put(np.zeros((0, 4), np.float32)), 9)


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")
def test_cuda_kernels_compile(tmp_path: Path):
    """The GPU kernels of every run-time slice compile (nvcc, no device needed)."""
    artifact = gpu_build(tmp_path, SOURCE)
    assert "PySlice_AdjustIndices" in artifact.sources["module.c"]
