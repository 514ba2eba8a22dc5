"""Scans and sorts against NumPy: np.cumsum / np.cumprod (any axis, axis=None, dtype=),
np.sort / np.argsort (stable, NaNs last, ties), np.argpartition / np.partition (judged by
their contract), consumers reading a scan's result, diagnostics for what is refused, and
the same on the GPU (plus an nvcc compile-only check), np.maximum/minimum.accumulate's
warp scans included."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import check, compile_source, cuda_text, gpu_build, load_source
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv
from cuvil_aot.compiler.frontend import lower_module
from cuvil_aot.compiler.toolchain import nvcc

ALL = ("f32", "f64", "i32", "i64", "bool_", "i8", "u8", "f16")
SOURCE = f'''
import numpy as np
import cuvil_aot as cv

def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

@cv.optimize(signatures={[f"{d}[A,B,C]" for d in ALL]!r})
def cumsums(x):
    return np.cumsum(x, axis=-1), np.cumsum(x, axis=0), x.cumsum(axis=1), np.cumsum(x), \\
        x.cumsum(-2)

@cv.optimize(signatures={[f"{d}[A,B,C]" for d in ALL]!r})
def cumprods(x):
    return np.cumprod(x, axis=-1), x.cumprod(axis=0), np.cumprod(x)

@cv.optimize(signatures=["f32[A,B]", "i64[A,B]", "bool_[A,B]", "i8[A,B]"])
def with_dtype(x):
    return np.cumsum(x, axis=-1, dtype=np.float64), np.cumsum(x, dtype=np.int32), \\
        x.cumprod(axis=0, dtype=np.float32), np.cumsum(x, axis=0, dtype=bool), \\
        np.cumprod(x, axis=1, dtype=np.int8)

@cv.optimize(signatures={[f"{d}[A,B,C]" for d in ALL]!r})
def sorts(x):
    return np.sort(x), np.sort(x, axis=0), np.sort(x, axis=None), \\
        np.argsort(x, axis=1, kind="stable"), x.argsort(axis=-1, kind="stable"), \\
        np.argsort(x, axis=None, kind="stable"), np.sort(x, axis=-2, kind="mergesort"), \\
        np.argsort(x, stable=True)

@cv.optimize(signatures=["f32[A,B]", "f64[A,B]"])
def consumers(x):
    c = np.cumsum(x * 2 + 1, axis=-1) / 3
    centered = np.cumsum(x - x.max(axis=-1, keepdims=True), axis=-1)
    twice = np.cumsum(np.cumsum(x, axis=-1), axis=-1)
    top = softmax(np.sort(x, axis=-1)[:, ::-1])
    order = np.argsort(x, axis=-1, kind="stable")
    return c, centered, twice, top, np.take_along_axis(x, order, axis=-1), order // 2, \\
        x.T.cumsum(axis=0)

@cv.optimize(signatures=["f32[A,B]"])
def flat_rank(x):
    flat = np.exp(x).reshape(1, -1)
    best = np.argsort(flat, axis=-1, kind="stable")[:, ::-1]
    return best // x.shape[1], best % x.shape[1], np.take_along_axis(flat, best, axis=-1)

@cv.optimize(signatures=["f32[A,B], int", "f64[A,B], int", "i32[A,B], int"])
def partitions(x, k):
    return np.argpartition(x, k, axis=-1), np.partition(x, k), x.argpartition(-1, axis=0), \\
        np.argpartition(x, (0, -1), axis=None)

@cv.optimize(signatures=["f32[A,B], i64[C]"])
def kth_from_data(x, ks):
    return np.argpartition(x, ks.sum(), axis=-1)

@cv.optimize(signatures=["f32[A,B], int"])
def kth_in_a_loop(x, n):
    acc = x[:, 0] * 0
    for t in range(n):
        acc = acc + np.partition(x, t, axis=-1)[:, t]
    return acc

@cv.optimize(signatures=["f32[A,B]"])
def top3(x):
    return np.argpartition(x, 2, axis=-1), np.partition(x, -3, axis=-1)

@cv.optimize(signatures=["f32[N]", "f64[N]", "i64[N]"])
def long_rows(x):
    return np.sort(x), np.argsort(x, kind="stable"), np.cumsum(x), np.cumprod(np.sign(x) + 1)

@cv.optimize
def scalar_scan(x: cv.f64[()]):
    return np.cumsum(x), np.cumprod(x, axis=0), np.sort(x, axis=None)
'''

SIZES = ("A", "B", "C")
dims = st.integers(0, 5)
NUMPY = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i32": "int32",
         "i64": "int64", "u8": "uint8", "bool_": "bool"}
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0]


def _array(data: st.DataObject, kind: str, shape: tuple[int, ...], special: bool,
           ints: tuple[int, int] = (-3, 3)) -> np.ndarray:
    """Values of ``kind`` with ties; floats with NaN, infinities and signed zeros where
    ``special``; in a reversed, strided or transposed view where drawn."""
    n = int(np.prod(shape))
    dtype = NUMPY[kind]
    if kind == "bool_":
        values = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    elif kind.startswith(("i", "u")):
        lo = 0 if kind == "u8" else ints[0]
        values = data.draw(st.lists(st.integers(lo, ints[1]), min_size=n, max_size=n))
    else:
        floats = st.floats(-4, 4, width=16)
        pick = st.one_of(floats, st.sampled_from(SPECIAL)) if special else floats
        values = data.draw(st.lists(pick, min_size=n, max_size=n))
    a = np.array(values, dtype).reshape(shape)
    view = data.draw(st.sampled_from(["contiguous", "reversed", "strided", "transposed"]))
    if view == "reversed" and a.ndim:
        return np.flip(np.flip(a, -1).copy(), -1)
    if view == "strided" and a.ndim:
        return np.repeat(a, 2, axis=-1)[..., ::2]
    if view == "transposed" and a.ndim >= 2:
        return np.swapaxes(np.swapaxes(a, 0, 1).copy(), 0, 1)
    return a


def _kind(sig: str) -> tuple[str, list[str]]:
    kind, spec = re.match(r"(\w+)\[([^\]]*)\]", sig).groups()  # type: ignore[union-attr]
    return kind, [d.strip() for d in spec.split(",") if d.strip()]


# (function, whether its float inputs may hold NaN and infinities, scale of the tolerance)
CASES = {"cumsums": (True, 4.0), "cumprods": (False, 8.0), "with_dtype": (False, 4.0),
         "sorts": (True, 1.0), "consumers": (True, 8.0)}


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=15, deadline=None)
@given(data=st.data(), sizes=st.fixed_dictionaries({d: dims for d in SIZES}))
def test_against_numpy(compiled, name, data, sizes):
    fn = getattr(compiled, name)
    special, scale = CASES[name]
    for sig in fn.signatures:
        kind, names = _kind(sig)
        check(fn, _array(data, kind, tuple(sizes[d] for d in names), special), scale=scale)


@settings(max_examples=15, deadline=None)
@given(signs=st.lists(st.sampled_from([-0.0, 0.0, -1.0, np.nan]), min_size=24, max_size=24))
def test_cumsum_keeps_the_sign_of_zero(compiled, signs):
    """NumPy's running sum starts from the first element: -0.0 stays -0.0 (an initial
    +0.0 would make it +0.0), on every axis; float32 and float64."""
    for dtype in (np.float32, np.float64):
        x = np.array(signs, dtype).reshape(2, 3, 4)
        for got, want in zip(compiled.cumsums(x), compiled.cumsums.py_func(x)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
            np.testing.assert_array_equal(got, want)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), a=st.integers(1, 4), b=st.integers(1, 5))
def test_flattened_argsort_feeds_floor_division_and_gather(compiled, data, a, b):
    """beam search's candidates: argsort of x.reshape(1, -1), then //, % and a gather."""
    x = np.unique(np.array(data.draw(st.lists(st.floats(-4, 4, width=32), min_size=a * b,
                                              max_size=a * b, unique=True)), np.float32))
    if x.size == a * b:
        check(compiled.flat_rank, np.random.default_rng(0).permutation(x).reshape(a, b))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n=st.integers(0, 300))
def test_long_rows_merge_and_keep_ties_in_order(compiled, data, n):
    """Rows past the insertion-sorted runs (16): the merges keep equal keys in order."""
    for sig in compiled.long_rows.signatures:
        kind, _ = _kind(sig)
        check(compiled.long_rows, _array(data, kind, (n,), kind != "i64", (-9, 9)), scale=16)


def _partition_holds(x: np.ndarray, idx: np.ndarray, kth: int, axis: int | None) -> None:
    """NumPy's contract: a permutation of each row; the element at kth is the kth smallest
    (NaNs last), none before it is larger, none after it smaller."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis %= x.ndim
    assert idx.dtype == np.int64 and idx.shape == x.shape
    n = x.shape[axis]
    if n == 0:
        return
    np.testing.assert_array_equal(np.sort(idx, axis=axis), np.broadcast_to(
        np.arange(n).reshape([-1 if a == axis else 1 for a in range(x.ndim)]), x.shape))
    values = np.take_along_axis(x, idx, axis=axis)
    part = np.moveaxis(values, axis, -1).reshape(-1, n)
    want = np.moveaxis(np.sort(x, axis=axis), axis, -1).reshape(-1, n)
    k = kth % n
    pivot = part[:, k]
    np.testing.assert_array_equal(pivot, want[:, k])
    with np.errstate(invalid="ignore"):
        nan = np.isnan(pivot) if part.dtype.kind == "f" else np.zeros(len(pivot), bool)
        assert np.all((part[:, :k] <= pivot[:, None]) | nan[:, None]), "left of kth"
        right = part[:, k + 1:]
        right_nan = np.isnan(right) if part.dtype.kind == "f" else False
        assert np.all((right >= pivot[:, None]) | right_nan), "right of kth"


@settings(max_examples=25, deadline=None)
@given(data=st.data(), a=st.integers(1, 5), b=st.integers(1, 6), pick=st.integers(-20, 20))
def test_partitions_keep_numpys_contract(compiled, data, a, b, pick):
    """np.argpartition with kth an int parameter (and -1, and a tuple): any valid partition
    is NumPy's answer, so the contract is judged, not equality."""
    k = pick % b - (b if pick < 0 else 0)  # in range, negative or not
    for sig in compiled.partitions.signatures:
        kind, _ = _kind(sig.split(",")[0] + "]")
        x = _array(data, kind, (a, b), True)
        along, part, first_axis, flat = compiled.partitions(x, k)
        _partition_holds(x, along, k, -1)
        _partition_holds(x, first_axis, -1, 0)
        _partition_holds(x, flat, 0, None)
        _partition_holds(x, flat, -1, None)
        np.testing.assert_array_equal(part, np.take_along_axis(x, along, axis=-1))


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=st.integers(0, 3), b=st.integers(0, 5), k=st.integers(-9, 9))
def test_a_kth_parameter_out_of_range_raises_numpys_value_error(compiled, data, a, b, k):
    """kth known only at the call, in range or not, on empty arrays too: NumPy's answer
    (judged by the contract) or NumPy's ValueError with NumPy's message."""
    x = _array(data, "f32", (a, b), True)
    try:
        np.argpartition(x, k, axis=-1), np.partition(x, k)
    except ValueError as numpy:
        with pytest.raises(ValueError) as ours:
            compiled.partitions(x, k)
        assert str(ours.value) == str(numpy), (str(ours.value), str(numpy))
        return
    if a * b == 0 or b == 0:
        return  # NumPy's other calls of the function (a tuple kth) decide there
    along, part, _, _ = compiled.partitions(x, k)
    _partition_holds(x, along, k, -1)


def test_a_kth_from_data_or_a_loop_variable_compiles_unchecked(compiled):
    """No check the wrapper could make before the kernels: a full sort, valid for every
    kth in range (a kth out of range there is not NumPy's ValueError: README)."""
    x = np.random.default_rng(3).standard_normal((3, 5)).astype(np.float32)
    along = compiled.kth_from_data(x, np.array([1, 2]))
    _partition_holds(x, along, 3, -1)
    check(compiled.kth_in_a_loop, x, 4)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), a=st.integers(1, 4), b=st.integers(0, 6))
def test_a_constant_kth_on_a_symbolic_axis_is_checked_at_the_call(compiled, data, a, b):
    """kth=2 and kth=-3 need 3 elements: with fewer (but some) NumPy raises ValueError,
    and so does the call, with NumPy's message (the axis is symbolic: a requirement the
    wrapper checks)."""
    x = _array(data, "f32", (a, b), True)
    if 0 < b < 3:
        with pytest.raises(ValueError) as numpy:
            compiled.top3.py_func(x)
        with pytest.raises(ValueError) as ours:
            compiled.top3(x)
        assert str(ours.value) == str(numpy.value)  # NumPy's message, not a failed match
        return
    along, part = compiled.top3(x)
    _partition_holds(x, along, 2, -1)
    np.testing.assert_array_equal(np.sort(part[:, -3:], axis=-1),
                                  np.sort(np.partition(x, -3, axis=-1)[:, -3:], axis=-1))


def test_a_zero_dimensional_array_scans_as_one_element(compiled):
    check(compiled.scalar_scan, np.array(2.5))


def test_the_scan_computes_its_source_inline(compiled):
    """np.cumsum(x * 2 + 1) / 3: the scan kernel computes x * 2 + 1 as it goes (no buffer
    for it), and the division reads the scan's result: two kernels."""
    source = compiled.__artifact__.sources["kernels.c"]
    names = list(compiled.__artifact__.manifest["functions"])
    prefix = f"f{names.index('consumers')}_s0_"
    body = source[source.index(f"static void {prefix}k0("):]
    body = body[:body.index("\n}\n")]
    assert "acc = (acc + " in body and "* ((float)2" in body.replace("2.0", "2"), body


# Refused, with a diagnostic at the user's line -------------------------------------------

REFUSALS = [
    ("x.sort()", "x.sort() sorts the array in place", "np.sort(x, axis=-1)"),
    ("np.cumsum(x, out=x)", "cumsum(out=...) is not supported", "(a new array)"),
    ("np.sort(x, order='a')", "order= (the fields of a structured array)", ""),
    ("np.sort(x, kind='bogo')", "sort kind must be one of", "leave kind out"),
    ("np.argpartition(x, 2.5)", "Partition index must be integer", "an int parameter"),
    ("np.argpartition(x, True)", "Booleans unacceptable as partition index", ""),
    ("np.argpartition(x, 3)", "kth(=3) out of bounds (3)", ""),
    ("np.argpartition(x, -4)", "kth(=-1) out of bounds (3)", ""),
    ("np.argpartition(x, 1, kind='quicksort')", "select kind must be 'introselect'", ""),
    ("np.cumsum(x, axis=x.shape[0] > 2)", "axis must be an int known at compile time", ""),
    ("np.cumsum(x, axis=k)", "axis must be an int known at compile time", "axis=-1"),
    ("np.cumprod(x, axis=2)", "axis 2 is out of bounds for an array of dimension 1", ""),
    ("np.sort(x[0])", "axis -1 is out of bounds for an array of dimension 0", ""),
]


@pytest.mark.parametrize(("expr", "message", "hint"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refused_with_a_diagnostic_at_the_call(tmp_path: Path, expr, message, hint):
    source = ("import numpy as np\nimport cuvil_aot as cv\n\n@cv.optimize\n"
              f"def f(x: cv.f32[3], k: int):\n    return {expr}\n")
    module = load_source(tmp_path, source, name=f"refused_{abs(hash(expr))}")
    with pytest.raises(cv.CompileError) as info:
        lower_module(module).check()
    text = str(info.value)
    assert re.search(rf":6:12: error: {re.escape(message)}", text), text
    assert hint in text


# GPU -----------------------------------------------------------------------------------

GPU_SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[A,B]", "f64[A,B]", "i32[A,B]", "i64[A,B]", "bool_[A,B]",
                         "u8[A,B]"])
def gpu_scans(x):
    return np.cumsum(x, axis=-1), np.cumsum(x, axis=0), np.cumsum(x), x.cumprod(axis=-1)

@cv.optimize(signatures=["f32[A,B]", "f64[A,B]", "f16[A,B]", "i32[A,B]", "i64[A,B]",
                         "bool_[A,B]", "u8[A,B]", "i8[A,B]"])
def gpu_running_extrema(x):
    return np.maximum.accumulate(x, axis=-1), np.minimum.accumulate(x), \\
        np.maximum.accumulate(x * 2, axis=0) - 1, np.minimum.accumulate(x, axis=1)

@cv.optimize(signatures=["f32[A,B]", "f64[A,B]", "i32[A,B]", "i64[A,B]", "f16[A,B]",
                         "bool_[A,B]"])
def gpu_sorts(x):
    return np.sort(x), np.sort(x, axis=0), np.argsort(x, kind="stable"), \\
        np.argsort(x, axis=None, kind="stable")

@cv.optimize(signatures=["f32[A,B]"])
def gpu_consumers(x):
    top = np.sort(x, axis=-1)[:, ::-1]
    return np.cumsum(x * 2 + 1, axis=-1) / 3, top - top.max(axis=-1, keepdims=True)
'''


@pytest.fixture(scope="module")
def gpu_compiled(tmp_path_factory: pytest.TempPathFactory):
    from gpu_harness import device_arch

    return compile_source(tmp_path_factory.mktemp("gpu_scan_sort"), GPU_SOURCE,
                          cuda_archs=(device_arch(),))


def _gpu_sizes(rng: np.random.Generator) -> dict[str, int]:
    """Rows of every length class: empty, one, within a warp, several warps, a shared-
    memory sort (up to 2048) and past it (each key ranked by counting)."""
    return {"A": int(rng.choice([0, 1, 3, 40])), "B": int(rng.choice([0, 1, 5, 33, 700, 2500]))}


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["cupy", "torch"])
def test_gpu_against_numpy(gpu_compiled, framework):
    """Float sums add in a tree within a warp's step on the GPU: a looser tolerance."""
    from gpu_harness import Framework, check_module

    failures = check_module(gpu_compiled, Framework(framework), 11,
                            lambda name, sizes: 256.0, True, _gpu_sizes)
    assert not failures, "\n".join(failures)


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")
def test_cuda_kernels_compile(tmp_path: Path):
    """Every scan and sort compiles for the GPU (nvcc, no device needed), launched kernel
    by kernel (no one-kernel for a call with a scan)."""
    artifact = gpu_build(tmp_path, GPU_SOURCE)
    cu = cuda_text(artifact.sources)
    assert "cv_block_sort(keys, pos, (int)len);" in cu and "__shfl_up_sync" in cu
    assert "cv_maximumf(" in cu and "cv_minimumd(" in cu  # the running extrema's steps
    assert "_one(" not in cu
