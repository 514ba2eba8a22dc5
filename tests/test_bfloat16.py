"""bfloat16 arrays (ml_dtypes.bfloat16) on the CPU: NumPy's (ml_dtypes') result dtypes,
values computed in float32 and rounded once to bfloat16, judged against float64.

Error bounds (README, "Precision"): a bfloat16 result is the float32 value rounded to
nearest even, within 2^-8 of it relatively (half an ulp is 2^-9; a float32 op's own error
adds far less); a sum of n terms adds float32's n * 2^-24 * sum|x|; a matmul of bfloat16
operands is exact per product and accumulates in float32.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import host_code, load_source
from hypothesis import given, settings
from hypothesis import strategies as st

from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.gpu_targets import GpuTargets
from cuvil_aot.errors import SignatureError

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)
EPS = 2.0 ** -8  # one bfloat16 ulp, relative: twice the rounding error

SOURCE = '''
import numpy as np
import ml_dtypes
import cuvil_aot as cv

@cv.optimize
def unary(x: cv.bf16["A", "B"]):
    return np.exp(x), np.tanh(x), np.sqrt(np.abs(x)), -x, np.abs(x), x * x

@cv.optimize
def mixed(x: cv.bf16["A", "B"], y: cv.f32["B"], h: cv.f16["B"]):
    return x * 2.5 + 1, x + y, x * h, x * np.float32(2), x + x, np.maximum(x, 0.5)

@cv.optimize
def reductions(x: cv.bf16["A", "B"]):
    return x.sum(axis=1), x.max(axis=0), x.mean(axis=1), x.sum()

@cv.optimize
def matmul(a: cv.bf16["M", "K"], b: cv.bf16["K", "N"], w: cv.f32["K", "N"]):
    return a @ b, a @ w

@cv.optimize
def gemms(a: cv.bf16["B", "M", "K"], b: cv.bf16["K", "N"], c: cv.bf16["N", "K"],
          d: cv.bf16["M", "J"], e: cv.bf16["J", "N"], bias: cv.f32["N"]):
    """The bfloat16 GEMM's operand layouts: batched A with a shared B, B transposed (read
    along k), two terms in one GEMM, and an epilogue."""
    return a @ b, a[0] @ c.T, np.tanh(a[0] @ b + d @ e + bias), a[:, ::2, 1:] @ b[1:, :]

@cv.optimize
def casts(x: cv.f32["N"], y: cv.bf16["N"]):
    return x.astype(ml_dtypes.bfloat16), y.astype(np.float32), x.astype("bfloat16") + y, \\
        np.where(y > 0, y, x), y.astype(np.int32)

@cv.optimize
def scans(x: cv.bf16["A", "B"]):
    return np.sort(x, axis=1), np.cumsum(x, axis=1)
'''


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    from conftest import compile_source

    return compile_source(tmp_path_factory.mktemp("bf16"), SOURCE)


def bf16_array(draw: st.DrawFn, shape: tuple[int, ...], low: float = -8, high: float = 8,
               special: bool = False) -> np.ndarray:
    """Values exactly representable in bfloat16 (the inputs), some of them NaN or inf."""
    n = int(np.prod(shape))
    floats = st.floats(low, high, width=32)
    if special:
        floats = st.one_of(floats, st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0]))
    values = draw(st.lists(floats, min_size=n, max_size=n))
    return np.array(values, np.float32).astype(BF16).reshape(shape)


def call_poisoned(fn, *args):
    """The call with out= arrays full of NaN (of the dtypes and shapes NumPy gives)."""
    expect = fn.py_func(*args)
    expect = expect if isinstance(expect, tuple) else (expect,)
    outs = tuple(np.full(np.shape(e), np.nan, np.asarray(e).dtype) for e in expect)
    got = fn(*args, out=outs)
    return [np.asarray(g) for g in got], [np.asarray(e) for e in expect]


def assert_close(got: np.ndarray, want: np.ndarray, dtype: np.dtype, rtol: float,
                 atol: float = 0.0) -> None:
    """``got`` has ``dtype`` and is within rtol * |want| + atol of the float64 reference;
    NaN and inf where the reference has them."""
    assert got.dtype == dtype, (got.dtype, dtype)
    g, w = got.astype(np.float64), np.asarray(want, np.float64)
    assert g.shape == w.shape
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    finite = np.isfinite(w)
    np.testing.assert_array_equal(g[~finite & ~np.isnan(w)], w[~finite & ~np.isnan(w)])
    err = np.abs(g[finite] - w[finite])
    bound = rtol * np.abs(w[finite]) + np.broadcast_to(atol, w.shape)[finite]
    assert (err <= bound).all(), (err - bound).max()


def f64(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64)


dims = st.integers(0, 7)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=dims, b=dims)
def test_unary_rounds_once_from_float32(compiled, data, a, b):
    x = bf16_array(data.draw, (a, b), special=True)
    got, expect = call_poisoned(compiled.unary, x)
    v = f64(x)
    with np.errstate(all="ignore"):
        refs = [np.exp(v), np.tanh(v), np.sqrt(np.abs(v)), -v, np.abs(v), v * v]
    for g, e, r in zip(got, expect, refs):
        assert_close(g, r, e.dtype, EPS + 2 ** -20, 1e-30)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=dims, b=dims)
def test_promotion_follows_numpy_with_ml_dtypes(compiled, data, a, b):
    """bf16 op Python float -> bf16; bf16 op f32 or f16 -> f32; a NumPy f32 scalar is
    strong (NEP 50) -> f32: the dtypes NumPy with ml_dtypes gives, each checked."""
    x = bf16_array(data.draw, (a, b))
    y = np.array(data.draw(st.lists(st.floats(-8, 8, width=32), min_size=b, max_size=b)),
                 np.float32)
    h = y.astype(np.float16)
    got, expect = call_poisoned(compiled.mixed, x, y, h)
    assert [g.dtype for g in got] == [e.dtype for e in expect] == \
        [BF16, np.float32, np.float32, np.float32, BF16, BF16]
    v = f64(x)
    refs = [v * 2.5 + 1, v + f64(y), v * f64(h), v * 2, v + v, np.maximum(v, 0.5)]
    for g, e, r in zip(got, expect, refs):
        # float32 results round once in float32; bfloat16 ones once in bfloat16
        rtol = EPS if e.dtype == BF16 else 2 ** -22
        assert_close(g, r, e.dtype, rtol, 1e-6 if e.dtype == BF16 else 1e-30)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=dims, b=dims)
def test_reductions_accumulate_in_float32(compiled, data, a, b):
    x = bf16_array(data.draw, (max(a, 1), max(b, 1)))
    got, expect = call_poisoned(compiled.reductions, x)
    v = f64(x)
    n_row, n_all = v.shape[1], v.size
    refs = [(v.sum(axis=1), np.abs(v).sum(axis=1) * n_row),
            (v.max(axis=0), 0 * v.max(axis=0)),
            (v.mean(axis=1), np.abs(v).mean(axis=1) * n_row),
            (v.sum(), np.abs(v).sum() * n_all)]
    for g, e, (r, spread) in zip(got, expect, refs):
        assert e.dtype == BF16
        assert_close(g, r, BF16, EPS, 2 ** -22 * spread + 1e-30)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), m=dims, k=dims, n=dims)
def test_matmul_of_bfloat16_is_float32(compiled, data, m, k, n):
    """NumPy with ml_dtypes has no bfloat16 matmul: a @ b of bfloat16 arrays is float32
    (JAX would give bfloat16); each product is exact in float32, the sum accumulates there."""
    a, b = bf16_array(data.draw, (m, k)), bf16_array(data.draw, (k, n))
    w = b.astype(np.float32) * np.float32(1.25)
    got, expect = call_poisoned(compiled.matmul, a, b, w)
    for g, e, other in zip(got, expect, (b, w)):
        assert e.dtype == np.float32
        spread = np.abs(f64(a)) @ np.abs(f64(other))
        assert_close(g, f64(a) @ f64(other), np.float32, 0, 2 ** -22 * (k + 1) * spread + 1e-30)


def _gemm_references(a, b, c, d, e, bias):
    a64, b64, c64, d64, e64 = (f64(v) for v in (a, b, c, d, e))
    spread = [np.abs(a64) @ np.abs(b64), np.abs(a64[0]) @ np.abs(c64.T),
              np.abs(a64[0]) @ np.abs(b64) + np.abs(d64) @ np.abs(e64),
              np.abs(a64[:, ::2, 1:]) @ np.abs(b64[1:, :])]
    want = [a64 @ b64, a64[0] @ c64.T, np.tanh(a64[0] @ b64 + d64 @ e64 + bias),
            a64[:, ::2, 1:] @ b64[1:, :]]
    return want, spread


@contextlib.contextmanager
def bf16_kernel(name: str):
    """The bfloat16 GEMM runs kernel ``name`` inside (the plain loop: at level 3, as a
    smaller machine would); skipped where this machine cannot run it."""
    import cuvil_aot.runtime.native as native

    try:
        if name == "plain":
            native.configure(cpu_level=3)
        if native._bf16_kernel(name) != name:
            pytest.skip(f"this CPU (or OS) cannot run the {name} bfloat16 GEMM kernel")
        assert native.info()["gemm_bf16_kernel"] == name
        yield
    finally:
        native._bf16_kernel("amx")
        native.configure(cpu_level=0)


KERNELS = ["amx", "avx512", "plain"]


@pytest.mark.parametrize("kernel", KERNELS)
@settings(max_examples=20, deadline=None)
@given(data=st.data(), nb=st.integers(1, 3), m=st.integers(1, 80), k=st.integers(1, 100),
       n=st.integers(1, 80), j=st.integers(0, 9))
def test_bfloat16_gemm_layouts(compiled, kernel, data, nb, m, k, n, j):
    """Each kernel on fresh shapes: odd k, k below a 32-deep AMX tile and across a few,
    rows and columns past whole 12-, 16- and 32-wide panels, a second term whose pairs
    start inside a k group: float32 accumulation of exact products, into outputs full of
    NaN before the call."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))  # values: too many
    a, b, c, d, e = (rng.standard_normal(s).astype(BF16) for s in  # for hypothesis to draw
                     ((nb, m, k), (k, n), (n, k), (m, j), (j, n)))
    bias = rng.standard_normal(n).astype(np.float32)
    with bf16_kernel(kernel):
        got, _ = call_poisoned(compiled.gemms, a, b, c, d, e, bias)
    want, spread = _gemm_references(a, b, c, d, e, bias)
    for g, w, s in zip(got, want, spread):
        assert_close(g, w, np.dtype(np.float32), 2 ** -23, 2 ** -22 * (k + j + 1) * s + 1e-30)


@pytest.mark.parametrize("kernel", KERNELS[:2])
def test_bfloat16_gemm_of_large_shapes(compiled, kernel):
    """Past one tile and one k block (the driver's 192 x 256 tiles, 512-deep blocks)."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((2, 400, 1100)).astype(BF16)
    b, c = rng.standard_normal((1100, 300)).astype(BF16), rng.standard_normal((300, 1100))
    d, e = rng.standard_normal((400, 3)).astype(BF16), rng.standard_normal((3, 300))
    bias = rng.standard_normal(300).astype(np.float32)
    with bf16_kernel(kernel):
        got, _ = call_poisoned(compiled.gemms, a, b, c.astype(BF16), d, e.astype(BF16), bias)
    want, spread = _gemm_references(a, b, c.astype(BF16), d, e.astype(BF16), bias)
    for g, w, s in zip(got, want, spread):
        assert_close(g, w, np.dtype(np.float32), 2 ** -23, 2 ** -22 * 1104 * s)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n=dims)
def test_casts_round_to_nearest_even(compiled, data, n):
    ties = [1 + 2 ** -8, 1 + 3 * 2 ** -8, -0.0, 3.3895e38]  # halfway; the overflow to inf
    x = np.array(data.draw(st.lists(st.floats(width=32) | st.sampled_from(ties), min_size=n,
                                    max_size=n)), np.float32)
    y = bf16_array(data.draw, (n,), special=True)
    with np.errstate(invalid="ignore"):
        got, expect = call_poisoned(compiled.casts, x, y)
    for g, e in zip(got, expect):  # ml_dtypes rounds to nearest even, as we do: bit for bit
        assert g.dtype == e.dtype
        if e.dtype == np.int32:  # NaN and inf to int are undefined in C and NumPy alike
            nan = ~np.isfinite(y.astype(np.float64))
        else:
            nan = np.isnan(e.astype(np.float64))
            np.testing.assert_array_equal(np.isnan(g.astype(np.float64)), nan)
        bits = (lambda a: a.view(np.uint16)) if e.dtype == BF16 else (lambda a: a)
        np.testing.assert_array_equal(bits(g)[~nan], bits(e)[~nan])


@settings(max_examples=20, deadline=None)
@given(data=st.data(), a=dims, b=dims)
def test_sort_and_cumsum(compiled, data, a, b):
    x = bf16_array(data.draw, (a, b))
    got, expect = call_poisoned(compiled.scans, x)
    np.testing.assert_array_equal(f64(got[0]), np.sort(f64(x), axis=1))
    # cumsum rounds each step to bfloat16, as NumPy does: the same values
    assert got[1].dtype == BF16
    np.testing.assert_array_equal(f64(got[1]), f64(expect[1]))


def test_wrong_dtype_names_the_argument_and_the_dtype(compiled):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(SignatureError, match=r"argument 'x': expected a bfloat16 array "
                       r"bf16\[A, B\], got numpy.float32 array"):
        compiled.unary(x)
    with pytest.raises(TypeError, match=r"out\[0\] must be a ml_dtypes.bfloat16 array"):
        compiled.unary(x.astype(BF16), out=(np.empty((2, 3), np.float32),) * 6)


def test_bfloat16_functions_get_gpu_kernels(tmp_path):
    """Compile-only: with CUDA targets, a bfloat16 function gets its CUDA unit, which stores
    through cv_bf16 (tests/test_gpu_bf16.py runs them)."""
    module = load_source(tmp_path, '''
        import cuvil_aot as cv

        @cv.optimize
        def plain(x: cv.f32["N"]):
            return x * 2

        @cv.optimize
        def half(x: cv.bf16["N"]):
            return x * 2
    ''')
    targets = GpuTargets(sass=(90,), ptx=90)
    files = pipeline.generate_sources(module, pipeline.Options(cpu_levels=(1,)), targets)[3]
    assert sorted(n for n in files if n.endswith(".cu")) == ["kernels_f0.cu", "kernels_f1.cu"]
    assert "cv_bf16" in files["kernels_f1.cu"] and "CV_DT_BFLOAT16" in host_code(files)
    assert "cv_gpu_refused(" not in host_code(files)


def test_without_ml_dtypes_the_signature_says_to_install_it(tmp_path):
    script = textwrap.dedent(f'''
        import sys
        sys.modules["ml_dtypes"] = None  # as if not installed
        sys.path.insert(0, {str(tmp_path)!r})
        (__import__("pathlib").Path({str(tmp_path)!r}) / "m.py").write_text(
            "import cuvil_aot as cv\\n@cv.optimize\\ndef f(x: cv.bf16['N']):\\n    return x\\n")
        import m
        from cuvil_aot.compiler.frontend import lower_module
        print(lower_module(m).rendered_refusals())
    ''')
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert "install ml_dtypes" in out.stdout + out.stderr, out.stdout + out.stderr
