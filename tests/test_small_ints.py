"""int8, int16 and uint8 (and uint64, NumPy's sum of uint8) against NumPy on the real
dtypes, exactly: every binary op on pairs of dtypes with NEP 50 promotion, wraparound
after every op, values over each dtype's whole range (its minimum and maximum included),
casts both ways, quantize/dequantize, reductions with NumPy's result dtypes, outputs
poisoned before the call; then the same functions on a GPU (marked gpu)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import check, compile_source, cuda_text, load_source
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv
from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.toolchain import nvcc
from cuvil_aot.errors import SignatureError

DTYPES = {"i8": "int8", "i16": "int16", "u8": "uint8", "u64": "uint64", "i32": "int32",
          "i64": "int64", "f16": "float16", "f32": "float32", "f64": "float64", "bool_": "bool"}
SMALL = ["i8", "u8", "i16", "u64"]
INT_PAIRS = [("i8", "i8"), ("u8", "u8"), ("i16", "i16"), ("u64", "u64"), ("i8", "u8"),
             ("u8", "i16"), ("i8", "i16"), ("i8", "i32"), ("u8", "i64"), ("i16", "u64"),
             ("u64", "i64"), ("u8", "bool_")]
FLOAT_PAIRS = [("i8", "f16"), ("u8", "f32"), ("i16", "f64"), ("u64", "f32")]
# Each function computes several ops (one signature per pair of dtypes is one wrapper
# and one fused loop: the module stays quick to build); pairs of integers take them all.
BINARY = {"arith": "x + y, x - y, x * y, x / y, x // y, x % y, np.maximum(x, y), "
                   "np.minimum(x, y)",
          "compare": "x < y, x <= y, x > y, x >= y, x == y, x != y"}
INT_BINARY = {"bits": "x & y, x | y, x ^ y", "pow": "x ** (y & 7), np.power(y, 3)"}
UNARY = ("-x, np.abs(x), abs(x), np.sign(x), ~x, np.square(x), x ** 3, np.floor(x), "
         "np.sqrt(x), np.exp(x)")
REDUCTIONS = {"r_identity": ("sum", "prod", "mean"), "r_extremes": ("max", "min")}


def _defined(expr: str, x: str, y: str) -> bool:
    """Whether NumPy defines ``expr`` for these dtypes (uint64 & int64 it does not)."""
    try:
        eval(expr, {"np": np, "x": np.ones(1, DTYPES[x]), "y": np.ones(1, DTYPES[y])})
    except TypeError:
        return False
    return True


def _binary_sigs(expr: str, pairs: list[tuple[str, str]]) -> list[str]:
    """Each pair, every other one with a fresh symbol per dimension, the rest broadcast
    through a literal 1."""
    shapes = ("{x}[A,B], {y}[P,Q]", "{x}[A,1], {y}[B]")
    return [shapes[i % 2].format(x=x, y=y) for i, (x, y) in enumerate(pairs)
            if _defined(expr, x, y)]


def _function(name: str, params: str, sigs: list[str], body: str) -> list[str]:
    return [f"@cv.optimize(signatures={sigs!r})", f"def {name}({params}):", f"    {body}"]


def _source() -> str:
    lines = ["import numpy as np", "import cuvil_aot as cv", ""]
    for name, expr in {**BINARY, **INT_BINARY}.items():
        pairs = INT_PAIRS + (FLOAT_PAIRS if name in BINARY else [])
        lines += _function(f"b_{name}", "x, y", _binary_sigs(expr, pairs), f"return {expr}")
    small = [f"{d}[A,B]" for d in SMALL]
    lines += _function("unary", "x", small, f"return {UNARY}")
    for name, ops in REDUCTIONS.items():  # the extremes of no element raise, as NumPy's
        calls = [f"x.{r}(), np.{r}(x, axis=0), np.{r}(x, axis=1, keepdims=True)" for r in ops]
        if name == "r_extremes":
            calls += ["np.argmax(x), x.argmax(axis=0), np.argmin(x), x.argmin(axis=1)"]
        lines += _function(name, "x", small, f"return {', '.join(calls)}")
    same = [f"{d}[A], {d}[A], {d}[A]" for d in SMALL]
    lines += _function("chain", "a, b, c", same, "return (a * b) // c, (a + b) * c - a, "
                       "-(a * b), abs(a - b), np.sign(a - b), (a * a) % c, a @ b")
    lines += _function("nep50", "x, n", [f"{d}[A,B], int" for d in SMALL],
                       "return x + 1, x * 1.5, x - np.int16(3), x // 2, x + n, "
                       "x * np.float32(0.5), x + np.uint8(n), x > n, x < -1, x == 2 ** 70")
    lines += _function("casts", "x", small + ["i32[A,B]", "i64[A,B]"],
                       "return (x.astype(np.int8), x.astype(np.uint8), x.astype(np.int16), "
                       "x.astype(np.int32), x.astype(np.int64), x.astype(np.uint64), "
                       "x.astype(np.float16), x.astype(np.float32), x.astype(np.float64), "
                       "x.astype(bool))")
    floats = ["f16[A,B]", "f32[A,B]", "f64[A,B]"]
    lines += _function("to_signed", "x", floats, "return x.astype(np.int8), x.astype(np.int16)")
    lines += _function("to_unsigned", "x", floats,
                       "return x.astype(np.uint8), x.astype(np.uint64)")
    lines += _function("where", "c, x, y", [f"bool_[A,B], {d}[A,B], {d}[B]" for d in SMALL],
                       "return np.where(c, x, y), np.where(c, x, 7), np.clip(x, 1, 100)")
    lines += [
        "def to_int8(x, s):",
        "    return np.clip(np.floor(x / s + 0.5), -128, 127).astype(np.int8)",
        "def from_int8(q, s):",
        "    return q.astype(np.float32) * s",
        "@cv.optimize",
        'def quantize(x: cv.f32["N", "D"], s: cv.f32["D"]):',
        "    return to_int8(x, s)",
        "@cv.optimize",
        'def dequantize(q: cv.i8["N", "D"], s: cv.f32["D"]):',
        "    return from_int8(q, s)",
        "@cv.optimize",
        'def quantize_u8(x: cv.f32["N", "D"], s: cv.f32["D"], z: int):',
        "    return np.clip(np.floor(x / s + 0.5) + z, 0, 255).astype(np.uint8)",
        "@cv.optimize",
        'def dequantize_u8(q: cv.u8["N", "D"], s: cv.f32["D"], z: int):',
        "    return (q.astype(np.float32) - z) * s",
        "@cv.optimize",
        'def round_trip(x: cv.f32["N", "D"], s: cv.f32["D"]):',
        "    return from_int8(to_int8(x, s), s)",
        "@cv.optimize",
        'def qlinear(x: cv.f32["B", "K"], q: cv.i8["K", "N"], s: cv.f32["N"]):',
        "    return np.maximum(x @ q.astype(np.float32) * s, 0)",
        "@cv.optimize",
        'def annotated(a: cv.i8["N"], b: cv.u8["N"], c: cv.i16["N"], d: cv.u64["N"]):',
        "    return a + b, b * c, (a + c).sum(), b.sum(), d + b",
    ]
    return "\n".join(lines) + "\n"


SOURCE = _source()
_PARAM = re.compile(r"(\w+)\[([^\]]*)\]|\bint\b")
QUANTIZE = ("quantize", "quantize_u8", "round_trip")


def parse(sig: str, sizes: dict[str, int]) -> list[tuple[str, tuple[int, ...]] | str]:
    """'i8[A,1], u8[B], int' -> [('int8', (a, 1)), ('uint8', (b,)), 'int']; the symbols of
    the second array are the first's (P = A, Q = B): equal sizes, named twice."""
    out: list[tuple[str, tuple[int, ...]] | str] = []
    alias = {"P": "A", "Q": "B"}
    for m in _PARAM.finditer(sig):
        if not m.group(1):
            out.append("int")
            continue
        dims = [d.strip() for d in m.group(2).split(",")]
        out.append((DTYPES[m.group(1)], tuple(int(d) if d.isdigit() else
                                               sizes[alias.get(d, d)] for d in dims)))
    return out


def float_range(name: str, param: int) -> tuple[float, float]:
    """The values a float parameter of ``name`` takes: float -> int casts only in range
    (NumPy leaves the others undefined), scales positive."""
    if name == "to_signed":
        return -128.0, 127.875
    if name == "to_unsigned":
        return 0.0, 255.875
    if name in QUANTIZE + ("dequantize", "dequantize_u8", "qlinear") and param > 0:
        return 1 / 64, 2.0
    if name in QUANTIZE:
        return -300.0, 300.0
    return -100.0, 100.0


def edge_values(dtype: str) -> list[int]:
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    return sorted({lo, lo + 1, -1 if lo else 0, 0, 1, 2, hi - 1, hi})


@st.composite
def ints(draw: st.DrawFn, dtype: str) -> int:
    """Anywhere in the dtype's range, its extremes (and 0, +-1) often."""
    info = np.iinfo(dtype)
    return draw(st.one_of(st.sampled_from(edge_values(dtype)),
                          st.integers(int(info.min), int(info.max))))


@st.composite
def arrays(draw: st.DrawFn, dtype: str, shape: tuple[int, ...],
           bounds: tuple[float, float]) -> np.ndarray:
    """An array of ``shape``: fresh, or a reversed or strided view of a bigger one."""
    kind = draw(st.sampled_from(["contiguous", "strided", "reversed"]) if shape else
                st.just("contiguous"))
    full = (*shape[:-1], shape[-1] * 2) if kind == "strided" else shape
    n = int(np.prod(full))
    if dtype == "bool":
        elements: st.SearchStrategy = st.booleans()
    elif np.dtype(dtype).kind in "iu":
        elements = ints(dtype)
    else:
        elements = st.floats(*bounds, width=16 if dtype == "float16" else 32)
    a = np.array(draw(st.lists(elements, min_size=n, max_size=n)), dtype).reshape(full)
    return a[..., ::2] if kind == "strided" else a[..., ::-1] if kind == "reversed" else a


def draw_args(data: st.DataObject, name: str, sig: str, sizes: dict[str, int]) -> list:
    args: list = []
    for i, p in enumerate(parse(sig, sizes)):
        if p == "int":
            args.append(data.draw(st.integers(0, 127)))  # in range of every small dtype
        else:
            dtype, shape = p  # type: ignore[misc]
            args.append(data.draw(arrays(dtype, shape, float_range(name, i))))
    return args


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory):
    return compile_source(tmp_path_factory.mktemp("small_ints"), SOURCE)


def _check_all(compiled, data: st.DataObject, name: str, sizes: dict[str, int]) -> None:
    fn = getattr(compiled, name)
    for sig in fn.signatures or compiled.__artifact__.manifest["functions"][name]:
        with np.errstate(all="ignore"):
            check(fn, *draw_args(data, name, sig, sizes), scale=4)


dims = st.integers(0, 5)


@pytest.mark.parametrize("name", sorted(f"b_{n}" for n in {**BINARY, **INT_BINARY}))
@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=dims, b=dims)
def test_binary_ops_on_every_pair_of_dtypes(compiled, name, data, a, b):
    _check_all(compiled, data, name, {"A": a, "B": b})


@pytest.mark.parametrize("name", ["unary", "chain", "nep50", "casts", "to_signed",
                                  "to_unsigned", "where"])
@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=dims, b=dims)
def test_unary_ops_wraparound_promotion_and_casts(compiled, name, data, a, b):
    _check_all(compiled, data, name, {"A": a, "B": b})


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=dims, b=dims)
def test_reductions_give_numpys_dtypes(compiled, name, data, a, b):
    _check_all(compiled, data, name, {"A": a, "B": b})


# round_trip is a float of a floor: at a rounding boundary float64 and float32 disagree by
# a whole step (x = 0.5, s = 0.33333334: x / s + 0.5 is 2.0 in float32, 1.99999996 in
# float64), so it is checked by its property below, not against float64.
@pytest.mark.parametrize("name", ["quantize", "quantize_u8", "dequantize", "dequantize_u8",
                                  "qlinear", "annotated"])
@settings(max_examples=20, deadline=None)
@given(data=st.data(), n=dims, d=dims)
def test_quantize_and_dequantize(compiled, name, data, n, d):
    _check_all(compiled, data, name, {"N": n, "D": d, "B": n, "K": d})


@settings(max_examples=20, deadline=None)
@given(data=st.data(), n=dims, d=dims)
def test_round_trip_is_within_half_a_step(compiled, data, n, d):
    s = data.draw(arrays("float32", (d,), (1 / 64, 2.0)))
    x = data.draw(arrays("float32", (n, d), (-1.0, 1.0))) * s * 127
    back = compiled.round_trip(x, s)
    assert back.dtype == np.float32
    assert np.all(np.abs(back - x) <= s * np.float32(0.5 + 1e-3))


def test_numpys_wraparound_happens_after_every_op(compiled):
    """(a * b) // c wraps the product first: computing it in int32 would give 10000 // 100."""
    a, b, c = (np.array([v], np.int8) for v in (100, 100, 100))
    got = compiled.chain(a, b, c)
    assert got[0].dtype == np.int8 and got[0][0] == np.int8(16) // np.int8(100) == 0
    assert got[6] == np.int8(16) and type(got[6]) is np.int8  # a 1-D dot keeps int8
    lo = np.full((1, 1), -128, np.int8)
    neg, absolute = compiled.unary(lo)[:2]
    assert neg[0, 0] == absolute[0, 0] == -128
    floordiv, mod = compiled.b_arith(lo, np.zeros((1, 1), np.int8))[4:6]
    assert floordiv[0, 0] == mod[0, 0] == 0
    assert compiled.b_arith(lo, -np.ones((1, 1), np.int8))[4][0, 0] == -128


def test_every_pair_of_8_bit_values(compiled):
    """All 65536 pairs of int8 (and of uint8) values through every binary op."""
    i8 = np.arange(-128, 128, dtype=np.int8)
    x, y = np.meshgrid(i8, i8)
    u8 = np.arange(256, dtype=np.uint8)[:, None]  # (u8, u8) broadcasts through a literal 1
    for name in ("b_arith", "b_compare", "b_bits", "b_pow"):
        fn = getattr(compiled, name)
        for args in ((x, y), (u8, u8[:, 0])):
            with np.errstate(all="ignore"):
                expect = fn.py_func(*args)
            for got, want in zip(fn(*args), expect):
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(got, want, err_msg=f"{name} {want.dtype}")


def test_sums_and_scalars_come_back_as_numpys_scalars(compiled):
    x = np.array([[-128, 127], [1, 2]], np.int8)
    total, columns = compiled.r_identity(x)[:2]
    assert type(total) is np.int64 and total == 2 and columns.dtype == np.int64
    u = np.full((2, 2), 255, np.uint8)
    assert type(compiled.r_identity(u)[0]) is np.uint64 and compiled.r_extremes(u)[0] == 255
    assert type(compiled.r_extremes(x)[0]) is np.int8 and compiled.r_extremes(x)[8] == 0


def test_an_argument_of_another_dtype_is_refused_naming_both(compiled):
    with pytest.raises(SignatureError, match="expected a int8 array.*got.*int16"):
        compiled.dequantize(np.zeros((2, 2), np.int16), np.ones(2, np.float32))


def test_annotations_are_exported():
    assert (cv.i8.np_dtype, cv.u8.np_dtype, cv.i16.np_dtype, cv.u64.np_dtype) == (
        "int8", "uint8", "int16", "uint64")


ERRORS = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def too_big(x: cv.i8["N"]):
    return x + 300

@cv.optimize
def fine(x: cv.u8["N"]):
    return x - 1
'''


def test_what_numpy_refuses_or_we_do_not_support_is_a_compile_error(tmp_path):
    module = load_source(tmp_path, ERRORS)
    refused = pipeline.build(module, pipeline.Options(cuda_archs=()),
                             out_dir=tmp_path).manifest["refused"]
    assert "Python integer 300 out of bounds for int8" in refused["too_big"]
    assert set(refused) == {"too_big"}  # integer matmul: test_int_matmul.py


# What the CUDA header adds for these dtypes: its integer helpers, reductions and warp
# shuffles of small types, float16 conversions (the GPU tests below run everything).
CUDA_SOURCE = f'''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures={[f"{d}[A,B], {d}[A,B]" for d in SMALL]!r})
def helpers(x, y):
    return (x // y, x % y, x ** (y & 7), np.abs(x), np.sign(x), x.astype(np.float16),
            x.max(axis=1), x.argmin(axis=0), x.sum(axis=1), np.maximum(x, y).min())
'''


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")
def test_the_cuda_kernels_compile(tmp_path):
    """nvcc takes the kernels of these dtypes (this machine may have no GPU to run them)."""
    module = compile_source(tmp_path, CUDA_SOURCE, cuda_archs=("sm_90",))
    assert "cv_floordivu64" in cuda_text(module.__artifact__.sources)


# The GPU ---------------------------------------------------------------------------------

def gpu_args(rng: np.random.Generator, name: str, sig: str, sizes: dict[str, int]) -> list:
    """draw_args's values from a seeded generator: every dtype's extremes, then anything."""
    args: list = []
    for i, p in enumerate(parse(sig, sizes)):
        if p == "int":
            args.append(int(rng.integers(0, 128)))
            continue
        dtype, shape = p  # type: ignore[misc]
        if dtype == "bool":
            args.append(rng.random(shape) < 0.5)
        elif np.dtype(dtype).kind in "iu":
            info = np.iinfo(dtype)
            a = rng.integers(int(info.min), int(info.max), shape, dtype=dtype, endpoint=True)
            edges = np.array(edge_values(dtype), dtype)
            a.reshape(-1)[: edges.size] = edges[: a.size]
            args.append(a)
        else:
            lo, hi = float_range(name, i)
            args.append(rng.uniform(lo, hi, shape).astype(dtype))
    return args


@pytest.fixture(scope="module")
def on_gpu(tmp_path_factory: pytest.TempPathFactory):
    from gpu_harness import device_arch

    return compile_source(tmp_path_factory.mktemp("gpu_small_ints"), SOURCE,
                          cuda_archs=(device_arch(),))


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["cupy", "torch"])
def test_every_function_on_the_gpu(on_gpu, framework):
    from gpu_harness import Framework, run_check

    fw = Framework(framework)
    rng = np.random.default_rng(8)
    failures = []
    for name, sigs in sorted(on_gpu.__artifact__.manifest["functions"].items()):
        for sig in sigs:
            for view in ("contiguous", "strided", "transposed"):
                sizes = {k: int(rng.choice([0, 1, 3, 40, 700])) for k in "ABNDK"}
                scale = 10.0 * (sizes["K"] + 1) if name == "qlinear" else 4.0  # a GEMM's sums
                try:
                    run_check(getattr(on_gpu, name), fw, gpu_args(rng, name, sig, sizes),
                              view, scale)
                except Exception as exc:  # noqa: BLE001 - every failure reported at the end
                    failures.append(f"{name}({sig}) {view} {sizes}: {type(exc).__name__}: "
                                    f"{str(exc)[:300]}")
    assert not failures, "\n".join(failures)


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["cupy", "torch"])
def test_gpu_sums_of_small_ints_are_exact(on_gpu, framework):
    """Row and whole-array reductions of 10^5 elements, where a float accumulator would
    round: int64 (uint64 for uint8) as NumPy, on the GPU's team reductions."""
    from gpu_harness import Framework

    fw = Framework(framework)
    rng = np.random.default_rng(3)
    for dtype in ("int8", "int16", "uint8", "uint64"):
        info = np.iinfo(dtype)
        x = rng.integers(int(info.min), int(info.max), (3, 100_000), dtype=dtype, endpoint=True)
        got, want = on_gpu.r_identity(fw.put(x)), on_gpu.r_identity.py_func(x)
        for g, w in zip(got[:3], want[:3]):
            host = fw.get(g)
            assert host.dtype == np.asarray(w).dtype
            np.testing.assert_array_equal(host, w)
