"""Gathers against NumPy: table[ids], x[:, ids], two index arrays, np.take,
np.take_along_axis, one-hot rows of np.eye; negative indices, out-of-range indices
raising NumPy's IndexError, fusion into the consumer, and the same on the GPU."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import check, compile_source, cuda_text, gpu_build, host_code
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv
from cuvil_aot.compiler.toolchain import nvcc

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[V,D], i64[B]", "f64[V,D], i32[B,T]", "f32[V,D], i32[B,T,S]",
                         "f32[V], i64[B]", "f32[V,D], i16[B]", "f32[V,D], u8[B]"])
def embed(table, ids):
    return table[ids]

@cv.optimize(signatures=["f32[R,C], i64[B]", "f64[R,C], i32[B,T]"])
def columns(x, ids):
    return x[:, ids]

@cv.optimize(signatures=["f32[R,C], i64[B]"])
def rows_then_math(x, ids):
    return x[ids, :] * 2 + 1

@cv.optimize(signatures=["f32[R,C], i64[R]", "f64[R,C], i32[R]"])
def pick(logp, labels):
    return logp[np.arange(logp.shape[0]), labels]

@cv.optimize(signatures=["f32[R,C,E], i64[B], i32[B]"])
def apart(x, i, j):
    return x[i, :, j]

@cv.optimize(signatures=["f32[R,C,E], i64[B], i64[T]"])
def outer(x, i, j):
    return x[i[:, None], j]

@cv.optimize(signatures=["f32[R,C], i64[B]"])
def mixed(x, ids):
    return x[::2, ids], x[None, ids], x[..., ids], x[-1, ids]

@cv.optimize(signatures=["f32[R,C], i64[B]", "f64[R,C], i32[B,T]"])
def takes(x, ids):
    return np.take(x, ids), np.take(x, ids, axis=1), x.take(ids, axis=0)

@cv.optimize(signatures=["f32[R,C], i64[R,K]"])
def along(x, idx):
    return np.take_along_axis(x, idx, axis=1), np.take_along_axis(x.T, idx.T, axis=0)

@cv.optimize(signatures=["i64[B]", "i32[B,T]"])
def onehot(labels):
    return np.eye(10, dtype=np.float32)[labels]

@cv.optimize(signatures=["f32[V,D], f32[B,V]"])
def lookup_argmax(table, scores):
    return table[np.argmax(scores, axis=1)]

@cv.optimize(signatures=["f32[V,D], i32[B,T], f32[D], f32[D], f32[D,E]"])
def embed_ln_matmul(table, ids, g, b, w):
    x = table[ids]
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return ((x - mu) / np.sqrt(var + 1e-5) * g + b) @ w

@cv.optimize(signatures=["f32[B,K], f32[K,D], f32[V,D], i64[B]"])
def in_epilogue(x, w, table, ids):
    return np.maximum(x @ w + table[ids], 0)

@cv.optimize(signatures=["f32[R,C], int", "f64[R,C], int"])
def run_time_int(x, i):
    return x[i] + x[:, i - 1].sum(), x[i, ::2]

@cv.optimize(signatures=["f32[V,D], i64[B]"])
def first_only(table, ids):
    return table[ids]

@cv.optimize(signatures=["f32[R,C], i64[B], int", "f64[R,C], i32[B], int"])
def in_branches(x, ids, t):
    """Gathers Python runs only where the branch is taken: never an IndexError from the
    other one (branches.py)."""
    n = x.shape[0]
    a = x[t] if 0 <= t < n else x.sum(axis=0) * 2 if n else x.sum(axis=0) - 1
    b = (t < n) and (x[t].sum() > 1) if x.shape[1] else t > 0
    c = (t >= n) or (x[t].sum() > 0)
    d = x[ids].sum(axis=0) if t > 0 else x[:1].sum(axis=0)
    e = x[t] if t < 0 else x[min(t, 2)] if n > 2 else x[:1].sum(axis=0)
    return a, b, c, d, e
'''

SIZES = ("V", "D", "B", "T", "S", "R", "C", "E", "K")
dims = st.integers(0, 5)
INDEX = {"i64": "int64", "i32": "int32", "i16": "int16", "u8": "uint8"}
VALUE = {"f32": "float32", "f64": "float64"}


def _args(data: st.DataObject, sig: str, sizes: dict[str, int],
          index_range: dict[str, int]) -> list[np.ndarray]:
    """Arrays for ``sig``; an index array's values lie in range of the axis its function
    gathers along (``index_range``: the size of that axis for each index parameter)."""
    out = []
    for k, part in enumerate(re.findall(r"(\w+)\[([^\]]*)\]", sig)):
        kind, spec = part
        shape = tuple(sizes[d.strip()] for d in spec.split(","))
        n = int(np.prod(shape))
        if kind in INDEX:
            size = index_range.get(str(k), 0)
            lo = 0 if kind == "u8" else -size
            values = data.draw(st.lists(st.integers(lo, size - 1), min_size=n, max_size=n)) \
                if size else [0] * n
            out.append(_view(data, np.array(values, INDEX[kind]).reshape(shape)))
        else:
            floats = st.floats(-8, 8, width=16)
            values = data.draw(st.lists(floats, min_size=n, max_size=n))
            out.append(_view(data, np.array(values, VALUE[kind]).reshape(shape)))
    return out


def _view(data: st.DataObject, a: np.ndarray) -> np.ndarray:
    """``a``, or a reversed, strided or transposed view holding the same values."""
    kind = data.draw(st.sampled_from(["contiguous", "reversed", "strided", "transposed"]))
    if kind == "reversed" and a.ndim:
        return np.flip(np.flip(a, -1).copy(), -1)
    if kind == "strided" and a.ndim:
        return np.repeat(a, 2, axis=-1)[..., ::2]
    if kind == "transposed" and a.ndim == 2:
        return a.T.copy().T
    return a


def check_or_raise(fn, *args) -> None:
    """check(), or NumPy's IndexError where NumPy raises one."""
    try:
        fn.py_func(*args)
    except IndexError as exc:
        with pytest.raises(IndexError, match=re.escape(str(exc))):
            fn(*args)
        return
    except (ValueError, TypeError, ZeroDivisionError):
        pass  # check() expects the same error
    check(fn, *args)


# (function, which parameter is an index array -> the axis of the table it indexes)
CASES = {
    "embed": lambda s, sig: {"1": s["V"]},
    "columns": lambda s, sig: {"1": s["C"]},
    "rows_then_math": lambda s, sig: {"1": s["R"]},
    "pick": lambda s, sig: {"1": s["C"]},
    "apart": lambda s, sig: {"1": s["R"], "2": s["E"]},
    "outer": lambda s, sig: {"1": s["R"], "2": s["C"]},
    "mixed": lambda s, sig: {"1": min(s["R"], s["C"])},
    "takes": lambda s, sig: {"1": min(s["R"] * s["C"], s["C"], s["R"])},
    "along": lambda s, sig: {"1": s["C"]},
    "onehot": lambda s, sig: {"0": 10},
    "lookup_argmax": lambda s, sig: {},
    "in_epilogue": lambda s, sig: {"3": s["V"]},
}


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=20, deadline=None)
@given(data=st.data(), sizes=st.fixed_dictionaries({d: dims for d in SIZES}))
def test_against_numpy(compiled, name, data, sizes):
    fn = getattr(compiled, name)
    for sig in fn.signatures:
        args = _args(data, sig, sizes, CASES[name](sizes, sig))
        check_or_raise(fn, *args)


@settings(max_examples=30, deadline=None)
@given(r=dims, i=st.integers(-7, 6))
def test_run_time_int_index(compiled, r, i):
    """x[i] with i an int parameter: a gather of one row (NumPy's basic indexing)."""
    for dtype in (np.float32, np.float64):
        check_or_raise(compiled.run_time_int, np.arange(r * r, dtype=dtype).reshape(r, r), i)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), r=st.integers(1, 5), c=dims, b=dims, t=st.integers(-7, 7))
def test_gathers_in_branches_python_does_not_run(compiled, data, r, c, b, t):
    """``x[t] if 0 <= t < n else ...``, ``t < n and x[t]``, ``t >= n or x[t]``: NumPy's
    result, and its IndexError only where Python runs the gather. Not where the gathered
    axis is empty: every index is out of range then, that of a branch not taken too
    (branches.py says so)."""
    for sig in compiled.in_branches.signatures:
        sizes = {"R": r, "C": c, "B": b}
        args = [*_args(data, sig.rsplit(",", 1)[0], sizes, {"1": r + 3}), t]
        try:
            compiled.in_branches.py_func(*args)
        except IndexError:  # which bad index NumPy names depends on its casts' layouts
            with pytest.raises(IndexError, match="is out of bounds for axis 0 with size"):
                compiled.in_branches(*args)
            continue
        check(compiled.in_branches, *args)


def test_branches_of_different_shapes_are_refused(tmp_path: Path):
    """Python returns one of the two by array data: its shape would be known only as the
    kernels run (by an int argument, a version each way: test_versions.py)."""
    module = compile_source(tmp_path, '''
import cuvil_aot as cv

@cv.optimize
def either(x: cv.f32["N"], t: int):
    return x if x.sum() > t else 0.0
''')
    with pytest.raises(cv.CompileError, match=r"different shapes, \(N,\) and \(\): which one"):
        module.either(np.ones(3, np.float32), 1)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), sizes=st.fixed_dictionaries({d: st.integers(1, 6) for d in SIZES}))
def test_embedding_layernorm_matmul(compiled, data, sizes):
    sig = compiled.embed_ln_matmul.signatures[0]
    args = _args(data, sig, sizes, {"1": sizes["V"]})
    check(compiled.embed_ln_matmul, *args, scale=8)


def test_embedding_and_layernorm_are_one_kernel(compiled):
    """table[ids] runs inside the layernorm's row kernel: no buffer for the gather."""
    source = compiled.__artifact__.sources["kernels.c"]
    kernels = re.findall(r"static void (f\d+_s0_k\d+)\(", source)
    names = list(compiled.__artifact__.manifest["functions"])
    prefix = f"f{names.index('embed_ln_matmul')}_s0_"
    assert [k for k in kernels if k.startswith(prefix)] == [f"{prefix}k0", f"{prefix}k1"]


@pytest.mark.parametrize("bad", [5, 6, -6, -7])
def test_out_of_range_raises_numpy_index_error(compiled, bad):
    table = np.arange(15, dtype=np.float32).reshape(5, 3)
    ids = np.array([0, bad, 1])
    with pytest.raises(IndexError, match=re.escape(
            f"index {bad} is out of bounds for axis 0 with size 5")):
        table[ids]
    with pytest.raises(IndexError, match=re.escape(
            f"index {bad} is out of bounds for axis 0 with size 5")):
        compiled.first_only(table, ids)
    out = np.full((3, 3), np.nan, np.float32)
    with pytest.raises(IndexError):
        compiled.first_only(table, ids, out=out)
    np.testing.assert_array_equal(compiled.first_only(table, ids[:1]), table[:1])


@pytest.mark.parametrize("bad", [3, -4])
def test_out_of_range_names_the_axis(compiled, bad):
    x = np.zeros((4, 3), np.float32)
    message = f"index {bad} is out of bounds for axis 1 with size 3"
    with pytest.raises(IndexError, match=re.escape(message)):
        compiled.columns(x, np.array([bad]))
    with pytest.raises(IndexError, match=re.escape(message)):
        compiled.pick(x, np.array([0, 1, bad, 2]))


def test_empty_table_raises(compiled):
    with pytest.raises(IndexError, match="index 0 is out of bounds for axis 0 with size 0"):
        compiled.first_only(np.zeros((0, 3), np.float32), np.array([0]))
    assert compiled.first_only(np.zeros((0, 3), np.float32), np.zeros(0, np.int64)).shape \
        == (0, 3)


REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def mask(x: cv.f32["N"]):
    return x[x > 0]

@cv.optimize
def float_index(x: cv.f32["N"], i: cv.f32["M"]):
    return x[i]
'''


def test_masks_and_float_indices_are_refused(tmp_path: Path):
    mod = compile_source(tmp_path, REFUSED)
    with pytest.raises(cv.CompileError, match="boolean mask indexing is not supported"):
        mod.mask(np.zeros(3, np.float32))
    with pytest.raises(cv.CompileError, match="arrays used as indices must be of integer"):
        mod.float_index(np.zeros(3, np.float32), np.zeros(2, np.float32))


# GPU ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_compiled(tmp_path_factory):
    from gpu_harness import device_arch

    return compile_source(tmp_path_factory.mktemp("gpu_gather"), SOURCE,
                          cuda_archs=(device_arch(),))


def _gpu_sizes(rng: np.random.Generator) -> dict[str, int]:
    return {d: int(rng.choice([0, 1, 3, 7, 64])) for d in SIZES}


def _gpu_check(fn, fw, args, view) -> None:
    """run_check, or an IndexError where NumPy raises one (which bad index it names is the
    first a thread reports, where several are bad), also where the result is empty along
    another axis (the wrapper then checks the index arrays on the host)."""
    from gpu_harness import run_check

    try:
        fn.py_func(*args)
    except IndexError:
        with pytest.raises(IndexError, match="is out of bounds for axis|from an empty axes"):
            fn(*[fw.put(a, view) for a in args])
        return
    except (ValueError, TypeError, ZeroDivisionError):
        pass  # run_check expects the same error
    run_check(fn, fw, args, view, 8.0)


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["cupy", "torch"])
def test_gpu_against_numpy(gpu_compiled, framework):
    from gpu_harness import Framework

    fw = Framework(framework)
    rng = np.random.default_rng(7)
    failures = []
    for name in sorted(CASES) + ["embed_ln_matmul"]:
        fn = getattr(gpu_compiled, name)
        for sig in fn.signatures:
            for view in ("contiguous", "strided", "transposed"):
                sizes = _gpu_sizes(rng)
                if name == "embed_ln_matmul":
                    sizes = {k: max(1, v) for k, v in sizes.items()}
                ranges = CASES.get(name, lambda s, g: {"1": s["V"]})(sizes, sig)
                args = []
                for k, (kind, spec) in enumerate(re.findall(r"(\w+)\[([^\]]*)\]", sig)):
                    shape = tuple(sizes[d.strip()] for d in spec.split(","))
                    if kind in INDEX:
                        size = ranges.get(str(k), 0)
                        lo = 0 if kind == "u8" else -size
                        a = rng.integers(lo, max(size, lo + 1), shape) if size else \
                            np.zeros(shape, int)
                        args.append(a.astype(INDEX[kind]))
                    else:
                        args.append(rng.standard_normal(shape).astype(VALUE[kind]))
                try:
                    _gpu_check(fn, fw, args, view)
                except Exception as exc:  # noqa: BLE001 - every failure is reported at the end
                    failures.append(f"{name}({sig}) {view} {sizes}: {type(exc).__name__}: "
                                    f"{str(exc)[:300]}")
    assert not failures, "\n".join(failures)


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["cupy", "torch"])
@pytest.mark.parametrize("bad", [5, -6])
def test_gpu_out_of_range_raises_numpy_index_error(gpu_compiled, framework, bad):
    from gpu_harness import Framework

    fw = Framework(framework)
    table = fw.put(np.arange(15, dtype=np.float32).reshape(5, 3))
    message = f"index {bad} is out of bounds for axis 0 with size 5"
    with pytest.raises(IndexError, match=re.escape(message)):
        gpu_compiled.first_only(table, fw.put(np.array([0, bad, 1])))
    # the flag is the call's own: the next call with good indices succeeds
    got = gpu_compiled.first_only(table, fw.put(np.array([4, -5])))
    np.testing.assert_array_equal(fw.get(got), np.arange(15, dtype=np.float32).reshape(5, 3)[
        [4, 0]])
    x = fw.put(np.zeros((1000, 3), np.float32))
    with pytest.raises(IndexError, match=re.escape(
            "index 3 is out of bounds for axis 1 with size 3")):
        gpu_compiled.pick(x, fw.put(np.full(1000, 3, np.int64)))


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")
def test_cuda_kernels_compile(tmp_path: Path):
    """Every gather compiles for the GPU (nvcc, no device needed): a table read at the
    gathered position, never through a _flat kernel's flat index."""
    artifact = gpu_build(tmp_path, SOURCE)
    cu = cuda_text(artifact.sources)
    assert "atomicCAS((unsigned long long *)&a->gerr[0]" in cu
    assert re.search(r"const int flat = 0;", host_code(artifact.sources))


def test_index_arrays_that_do_not_broadcast_raise_numpys_index_error(tmp_path: Path) -> None:
    source = ("import numpy as np\nimport cuvil_aot as cv\n\n@cv.optimize\n"
              "def f(x: cv.f32['N', 'M'], i: cv.i64['A'], j: cv.i64['B']):\n"
              "    return x[i, j]\n")
    mod = compile_source(tmp_path, source)
    x, i, j = np.ones((4, 4), np.float32), np.array([0, 1]), np.array([0, 1, 2])
    message = r"shape mismatch: indexing arrays could not be broadcast together with shapes " \
              r"\(2,\) \(3,\)"
    with pytest.raises(IndexError, match=message):
        mod.f.py_func(x, i, j)
    with pytest.raises(IndexError, match=message):
        mod.f(x, i, j)
    np.testing.assert_array_equal(mod.f(x, i, i), x[i, i])
