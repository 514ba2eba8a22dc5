"""Scatter assignment against NumPy: ``x[ids] = v``, ``x[:, ids] = v``, two index arrays
apart, 2-D index arrays, ints and slices beside index arrays, ``x[ids] += v`` (one write per
duplicate index, not an accumulation), chains with slice assignments; duplicate indices
(the last write in C order wins), negative indices, out-of-range indices raising NumPy's
IndexError; into arguments (the caller's array is written, only at the indexed positions,
and left as it was where an index is out of range); what is refused; and the GPU."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import (
    assert_close,
    check,
    compile_source,
    cuda_text,
    gpu_build,
    host_code,
    load_source,
    to64,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv
from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.toolchain import nvcc

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[N,D], i64[K], f32[K,D]", "f64[N,D], i32[K], f64[K,D]",
                         "i32[N,D], i64[K], i32[K,D]", "f32[N,D], i64[K], f64[K,D]",
                         "i64[N,D], i32[K], f32[K,D]", "f64[N,D], i64[K], f64[D]",
                         "f16[N,D], i64[K], f16[K,D]"])
def rows(x, ids, v):
    y = x * 1
    y[ids] = v
    return y

@cv.optimize(signatures=["f32[N,D], i64[K], f32[N,K]", "i32[N,D], i32[K], i32[N,K]",
                         "f64[N,D], i64[K], f64[K]"])
def columns(x, ids, v):
    y = x + 0
    y[:, ids] = v
    return y

@cv.optimize(signatures=["f32[N,D], i64[K], f32[K,D]", "f64[N,D], i32[K], f64[D]",
                         "i64[N,D], i64[K], i64[K,D]"])
def add_rows(x, ids, v):
    y = x * 1
    y[ids] += v
    return y

@cv.optimize(signatures=["f32[N,D], i64[K]", "i32[N,D], i32[K]", "u8[N,D], i64[K]"])
def number(x, ids):
    y = x * 1
    y[ids] = 7.75
    return y

@cv.optimize(signatures=["f32[N,M,E], i64[K], i32[K], f32[K,M]",
                         "f64[N,M,E], i64[K], i64[K], f64[M]"])
def apart(x, i, j, v):
    y = x * 1
    y[i, :, j] = v
    return y

@cv.optimize(signatures=["f32[N,M], i64[K,L], f32[K,L,M]", "f64[N,M], i32[K,L], f64[L,M]"])
def two_d(x, ids, v):
    y = x * 1
    y[ids] = v
    return y

@cv.optimize(signatures=["f32[N,M], i64[K], f32[K]", "i32[N,M], i64[K], i32[K]"])
def mixed(x, ids, v):
    y = x * 1
    y[-1, ids] = v
    y[ids, ::2] = 5
    y[..., ids] += 1
    return y

@cv.optimize(signatures=["f32[N,D], i64[K], i64[L], f32[K,D]"])
def chain(x, ids, jds, v):
    y = np.zeros_like(x)
    y[ids] = v
    y[:, 0::2] = 1
    y[jds] += 2
    y[jds[:, None], ids] = 3
    return y

@cv.optimize(signatures=["f32[B,V], i64[B,S], float", "f64[B,V], i32[B,S], float"])
def penalty(logits, prev_ids, p):
    rows = np.arange(logits.shape[0])[:, None]
    score = logits[rows, prev_ids]
    logits[rows, prev_ids] = np.where(score < 0, score * p, score / p)
    return logits

@cv.optimize(signatures=["f32[N,D], i64[K], f32[K,D]", "i32[N,D], i32[K], i32[D]"])
def hidden(x, ids, v):
    before = x.sum(axis=1)
    x[ids] = v
    return before, x.sum(axis=1)

@cv.optimize(signatures=["f32[N], i64[K]", "i64[N], i64[K]"])
def bump(x, ids):
    x[ids] += 1
    return x

@cv.optimize(signatures=["f32[N,D], i64[K], i64[K]", "i32[N,D], i32[K], i64[K]"])
def swap(x, ids, jds):
    x[ids] = x[jds]
    return x
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def newaxis(x: cv.f32["N"], ids: cv.i64["K"]):
    y = x * 1
    y[None, ids] = 0
    return y

@cv.optimize
def mask_beside(x: cv.f32["N", "M"], ids: cv.i64["K"]):
    y = x * 1
    y[ids, x[0] > 0] = 0
    return y

@cv.optimize
def too_many(x: cv.f32["N"], ids: cv.i64["K"]):
    y = x * 1
    y[ids, 0] = 0
    return y
'''

SIZES = st.sampled_from([0, 1, 2, 3, 5, 8])
DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i32": np.int32,
          "i64": np.int64, "u8": np.uint8}
INDEXES = {"i32", "i64"}

# per function: which parameter (by position) is an index array -> the symbols of the
# axes it indexes (its values are drawn in range of the smallest, or out of it)
CASES: dict[str, dict[int, tuple[str, ...]]] = {
    "rows": {1: ("N",)}, "columns": {1: ("D",)}, "add_rows": {1: ("N",)},
    "number": {1: ("N",)}, "apart": {1: ("N",), 2: ("E",)}, "two_d": {1: ("N",)},
    "mixed": {1: ("N", "M")}, "chain": {1: ("N", "D"), 2: ("N",)}, "penalty": {1: ("V",)},
    "hidden": {1: ("N",)}, "bump": {1: ("N",)}, "swap": {1: ("N",), 2: ("N",)},
}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("scatter"), SOURCE)


def _params(sig: str) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for part in re.findall(r"(\w+)\[([^\]]*)\]|\b(float)\b", sig):
        kind, spec, scalar = part
        out.append((scalar, ()) if scalar else (kind, tuple(d.strip() for d in spec.split(","))))
    return out


def _args(data: st.DataObject, name: str, sig: str, sizes: dict[str, int],
          bad: bool) -> list[Any]:
    """Arguments for ``sig``: index arrays in range of their axis (duplicates and negative
    values included), or, with ``bad``, possibly beyond it by up to 2."""
    args: list[Any] = []
    for k, (kind, dims) in enumerate(_params(sig)):
        if kind == "float":
            args.append(data.draw(st.sampled_from([0.5, 1.3, 2.0])))
            continue
        shape = tuple(sizes[d] for d in dims)
        n = int(np.prod(shape))
        if kind in INDEXES and k in CASES[name]:
            size = min(sizes[d] for d in CASES[name][k])
            lo, hi = (-size - 2, size + 1) if bad or not size else (-size, size - 1)
            values = data.draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))
            args.append(np.array(values, DTYPES[kind]).reshape(shape))
        elif kind.startswith(("i", "u")):
            values = data.draw(st.lists(st.integers(0, 100), min_size=n, max_size=n))
            args.append(np.array(values, DTYPES[kind]).reshape(shape))
        else:
            floats = st.floats(-8, 8, width=16)
            values = data.draw(st.lists(floats, min_size=n, max_size=n))
            args.append(np.array(values, DTYPES[kind]).reshape(shape))
    return args


def check_or_raise(fn: Any, *args: Any) -> None:
    """check() (poisoned outputs, float64 reference), or NumPy's own IndexError."""
    try:
        fn.py_func(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    except IndexError as exc:
        with pytest.raises(IndexError, match=re.escape(str(exc))):
            fn(*args)
        return
    except (ValueError, TypeError):
        pass  # check() expects the same error
    check(fn, *args)


LOCAL = ["rows", "columns", "add_rows", "number", "apart", "two_d", "mixed", "chain"]


@pytest.mark.parametrize("name", LOCAL)
@settings(max_examples=25, deadline=None)
@given(data=st.data(), bad=st.booleans())
def test_local_scatter_against_numpy(compiled, name, data, bad):
    fn = getattr(compiled, name)
    symbols = "NDKLMEBVS"
    for sig in fn.signatures:
        sizes = {s: data.draw(SIZES) for s in symbols}
        check_or_raise(fn, *_args(data, name, sig, sizes, bad))


def _run_both(fn: Any, args: list[Any]) -> tuple[Any, list[Any], Any, list[Any], list[Any]]:
    """NumPy's run (real dtypes, then float64) and ours, each on copies of the arguments:
    (NumPy's results or its IndexError, its arguments after, ours, ours after, float64's
    after)."""
    mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    real = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    wide = to64([a.copy() if isinstance(a, np.ndarray) else a for a in args])
    try:
        with np.errstate(all="ignore"):
            expect = fn.py_func(*real)
            fn.py_func(*wide)
    except IndexError as exc:
        with pytest.raises(IndexError, match=re.escape(str(exc))):
            fn(*mine)
        return exc, real, None, mine, wide
    return expect, real, fn(*mine), mine, wide


@pytest.mark.parametrize("name", ["penalty", "hidden", "bump", "swap"])
@settings(max_examples=30, deadline=None)
@given(data=st.data(), bad=st.booleans())
def test_writes_into_arguments(compiled, name, data, bad):
    """The caller's array equals NumPy's after the call: written at the indexed positions
    only (every other element is as it was), and untouched where NumPy raises."""
    fn = getattr(compiled, name)
    for sig in fn.signatures:
        sizes = {s: data.draw(SIZES) for s in "NDKBVS"}
        args = _args(data, name, sig, sizes, bad)
        expect, real, got, mine, wide = _run_both(fn, args)
        for m, r, w, a in zip(mine, real, wide, args):
            if isinstance(m, np.ndarray):
                if isinstance(expect, IndexError):
                    np.testing.assert_array_equal(m, a)  # nothing written, as NumPy
                else:
                    assert_close(m, w, m.dtype, 1.0, r)
        if isinstance(expect, IndexError):
            continue
        gots = got if isinstance(got, tuple) else (got,)
        expects = expect if isinstance(expect, tuple) else (expect,)
        for g, e in zip(gots, expects):
            assert np.asarray(g).dtype == np.asarray(e).dtype
            np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(e, np.float64),
                                       rtol=1e-5, atol=1e-5)
        if name in ("penalty", "bump", "swap"):
            assert got is mine[0]  # the caller's array, not a copy


def test_strided_and_read_only_arguments(compiled):
    base = np.zeros((4, 6), np.float32)
    ref = base.copy()
    view = base[:, ::2]  # not C-contiguous: written through a copy, copied back
    v = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    compiled.hidden(view, np.array([3, -4]), v)
    ref[:, ::2][[3, -4]] = v
    np.testing.assert_array_equal(base, ref)
    with pytest.raises(IndexError):
        compiled.hidden(view, np.array([1, 4]), v)
    np.testing.assert_array_equal(base, ref)
    frozen = np.zeros((2, 3), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        compiled.hidden(frozen, np.array([0]), np.ones((1, 3), np.float32))


def test_duplicates_the_last_write_wins(compiled):
    x = np.zeros((4, 2), np.float32)
    v = np.arange(8, dtype=np.float32).reshape(4, 2)
    got = compiled.rows(x, np.array([1, 1, -3, 2]), v)
    np.testing.assert_array_equal(got, [[0, 0], [4, 5], [6, 7], [0, 0]])
    ids = np.asfortranarray([[1, 0], [0, 2]])  # C order of the index, not memory order
    v = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    ref = np.zeros((3, 2), np.float32)
    ref[ids] = v
    np.testing.assert_array_equal(compiled.two_d(np.zeros((3, 2), np.float32), ids, v), ref)
    rng = np.random.default_rng(0)  # many writes: parallel loops would race
    for n, k in [(3, 200_000), (1000, 300_000)]:
        x = np.zeros((n, 3), np.float32)
        ids = rng.integers(-n, n, k)
        v = rng.standard_normal((k, 3)).astype(np.float32)
        ref = x.copy()
        ref[ids] = v
        np.testing.assert_array_equal(compiled.rows(x, ids, v), ref)
        x = np.zeros((3, n), np.float32)
        ids = rng.integers(0, n, k // 100)
        v = rng.standard_normal((3, k // 100)).astype(np.float32)
        ref = x.copy()
        ref[:, ids] = v
        np.testing.assert_array_equal(compiled.columns(x, ids, v), ref)


def test_augmented_assignment_writes_once_per_duplicate(compiled):
    """NumPy's x[ids] += 1 adds once per distinct index (np.add.at would accumulate)."""
    x = np.zeros(4, np.int64)
    ids = np.array([0, 0, 0, 3, -1])
    ref = x.copy()
    ref[ids] += 1
    got = compiled.bump(x, ids)
    assert got is x
    np.testing.assert_array_equal(x, ref)
    np.testing.assert_array_equal(x, [1, 0, 0, 1])


@pytest.mark.parametrize("bad", [8, -9, 100])
def test_out_of_range_raises_and_writes_nothing(compiled, bad):
    x = np.arange(16, dtype=np.float32).reshape(8, 2)
    before = x.copy()
    message = f"index {bad} is out of bounds for axis 0 with size 8"
    with pytest.raises(IndexError, match=re.escape(message)):
        compiled.bump(x.reshape(-1)[:8], np.array([0, 1, bad, 2]))
    with pytest.raises(IndexError, match=re.escape(message)):
        compiled.hidden(x, np.array([0, bad]), np.ones((2, 2), np.float32))
    np.testing.assert_array_equal(x, before)
    with pytest.raises(IndexError, match=re.escape(message)):
        compiled.rows(x, np.array([bad]), np.ones((1, 2), np.float32))
    with pytest.raises(IndexError, match=re.escape(
            f"index {bad} is out of bounds for axis 1 with size 8")):
        compiled.columns(x.T.copy(), np.array([bad]), np.ones((2, 1), np.float32))


def test_empty_axis_raises(compiled):
    """NumPy's message where the indexed axis is empty (checked before any kernel)."""
    x = np.zeros((0, 3), np.float32)
    with pytest.raises(IndexError, match="index 0 is out of bounds for axis 0 with size 0"):
        x[np.array([0])] = 1
    with pytest.raises(IndexError, match="index 0 is out of bounds for axis 0 with size 0"):
        compiled.rows(x, np.array([0]), np.ones((1, 3), np.float32))
    assert compiled.rows(x, np.zeros(0, np.int64), np.ones((0, 3), np.float32)).shape == (0, 3)


def test_scatter_runs_over_the_indexed_shape(tmp_path: Path):
    """The penalty's scatter is one kernel over (B, S), storing into the argument's array
    at the positions the index arrays name."""
    module = load_source(tmp_path, SOURCE)
    lowered = pipeline.compile_ir(module, pipeline.Options(cuda_archs=()))[2]
    (sig, ir), *_ = lowered["penalty"]
    scatters = [g for g in ir.groups if any(d.scatter is not None for d in g.dests)]
    assert len(scatters) == 1
    assert tuple(str(d) for d in scatters[0].space.shape) == ("B", "S")
    assert ir.inplace == ((0, 0),)
    # the scores it reads before writing are copied, not the logits: no kernel over (B, V)
    assert all(tuple(str(d) for d in g.space.shape) != ("B", "V") for g in ir.groups)


def test_refusals_point_at_the_line(tmp_path: Path):
    mod = compile_source(tmp_path, REFUSED)
    cases = [("newaxis", r"integer-array indices and None \(np.newaxis\)", "y[None, ids] = 0",
              (np.zeros(3, np.float32), np.zeros(1, np.int64))),
             ("mask_beside", "boolean mask beside other indices", "y[ids, x[0] > 0] = 0",
              (np.zeros((3, 2), np.float32), np.zeros(1, np.int64))),
             ("too_many", "too many indices", "y[ids, 0] = 0",
              (np.zeros(3, np.float32), np.zeros(1, np.int64)))]
    for name, message, line, args in cases:
        with pytest.raises(cv.CompileError, match=message) as info:
            getattr(mod, name)(*args)
        assert line in str(info.value)


# GPU ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_compiled(tmp_path_factory):
    from gpu_harness import device_arch

    return compile_source(tmp_path_factory.mktemp("gpu_scatter"), SOURCE,
                          cuda_archs=(device_arch(),))


def _distinct(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """k distinct indices of an axis of n, half of them negative (on the GPU a duplicate
    index with different values may keep any one of them)."""
    ids = rng.permutation(n)[:k]
    return np.where(rng.random(k) < 0.5, ids - n, ids)


@pytest.mark.gpu
def test_gpu_scatter_against_numpy(gpu_compiled):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    for n, d, k in [(1, 1, 1), (5, 3, 4), (64, 33, 20), (1000, 8, 700), (4, 0, 2), (3, 2, 0)]:
        x = rng.standard_normal((n, d)).astype(np.float32)
        ids = _distinct(rng, n, k)
        v = rng.standard_normal((k, d)).astype(np.float32)
        for name, w in [("rows", v), ("add_rows", v), ("columns", None)]:
            fn = getattr(gpu_compiled, name)
            if name == "columns":
                xs, ids_c = x.T.copy(), ids
                w = rng.standard_normal((d, k)).astype(np.float32)
            else:
                xs, ids_c = x, ids
            ref = fn.py_func(xs.astype(np.float64), ids_c, w.astype(np.float64))
            dev = [torch.from_numpy(a).cuda() for a in (xs, ids_c, w)]
            assert_close(fn(*dev).cpu().numpy(), ref, np.float32)
        dup = np.zeros(5, np.int64)  # duplicates with one value: any write is NumPy's
        got = gpu_compiled.number(torch.zeros((2, 3), device="cuda"),
                                  torch.from_numpy(dup % 2).cuda())
        assert float(got.sum()) == 7.75 * 3


@pytest.mark.gpu
def test_gpu_writes_the_callers_tensors(gpu_compiled):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(12)
    for b, v, s in [(2, 10, 3), (1, 1, 1), (8, 1000, 64), (0, 4, 2)]:
        logits = rng.standard_normal((b, v)).astype(np.float32)
        prev = np.stack([_distinct(rng, v, min(s, v)) for _ in range(b)]).reshape(b, -1) \
            if b else np.zeros((0, s), np.int64)
        dev = torch.from_numpy(logits.copy()).cuda()
        got = gpu_compiled.penalty(dev, torch.from_numpy(prev).cuda(), 1.3)
        assert got is dev
        ref = logits.astype(np.float64)
        gpu_compiled.penalty.py_func(ref, prev, 1.3)
        assert_close(dev.cpu().numpy(), ref, np.float32)
    x = torch.zeros(8, device="cuda")
    with pytest.raises(IndexError, match="index 8 is out of bounds for axis 0 with size 8"):
        gpu_compiled.bump(x, torch.tensor([0, 8], device="cuda"))
    x = torch.zeros(8, device="cuda")  # (the GPU may have written the good index: no pre-check)
    gpu_compiled.bump(x, torch.tensor([0, 0, -1], device="cuda"))  # the flag is the call's
    assert float(x[0]) == 1.0 and float(x[-1]) == 1.0 and float(x.sum()) == 2.0


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")
def test_cuda_kernels_compile(tmp_path: Path):
    """Every scatter compiles for the GPU (nvcc, no device needed), its kernel reports
    a bad index through the flag and never runs the _flat body."""
    artifact = gpu_build(tmp_path, SOURCE)
    assert "atomicCAS((unsigned long long *)&a->gerr[0]" in cuda_text(artifact.sources)
    assert re.search(r"const int flat = 0;", host_code(artifact.sources))
