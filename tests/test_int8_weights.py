"""Int8 weights (issue 24): ``cuvil_aot.quantize_weights`` and the dequantize-then-matmul
pattern, ``x @ (q.astype(np.float32) * s[:, None]).T`` and its per-group form, run as
``api->gemm_q8`` on the CPU (the int8 values read and converted in registers, no float32
weight stored), and on the GPU as the fused int8 GEMV (cuda_q8.h's cv_gemv_q8) for up to 16
rows of x, else as dequantize + float32 GEMM.

Judged against NumPy in float64 of the dequantized expression as written, on random
shapes (m = 1 included, odd k, k not a multiple of the group), outputs poisoned before
the call. The bound: float32 accumulation, (k + 4) * 2^-24 * (|x| @ |w|) per element
(the fused kernel scales each group's float32 sum where NumPy rounds q * s first: both
are within it)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import compile_source, host_code, load_source
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_aot as cv
from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.ir.group import Kind

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def linear(x: cv.f32["M", "K"], q: cv.i8["N", "K"], s: cv.f32["N"], b: cv.f32["N"]):
    return x @ (q.astype(np.float32) * s[:, None]).T + b

@cv.optimize
def left(q: cv.i8["N", "K"], s: cv.f32["N"], x: cv.f32["K", "M"]):
    return (q * s[:, None]) @ x

@cv.optimize
def grouped32(x: cv.f32["M", "K"], q: cv.i8["N", "K"], s: cv.f32["N", "G"]):
    n, k = q.shape
    return x @ (q.reshape(n, k // 32, 32) * s[:, :, None]).reshape(n, k).T

@cv.optimize
def grouped128(x: cv.f32["M", "K"], q: cv.i8["N", "K"], s: cv.f32["N", "G"]):
    n, k = q.shape
    return np.tanh(x @ (q.reshape(n, k // 128, 128) * s[:, :, None]).reshape(n, k).T)

@cv.optimize
def repeated(x: cv.f32["M", "K"], q: cv.i8["N", "K"], s: cv.f32["N", "G"]):
    return x @ (q.astype(np.float32) * np.repeat(s, 64, axis=1)).T

@cv.optimize
def repeated_left(q: cv.i8["N", "K"], s: cv.f32["N", "G"], x: cv.f32["K", "M"]):
    return (q * s.repeat(32, axis=1)) @ x

@cv.optimize
def gathered(x: cv.f32["M", "K"], q: cv.i8["N", "K"], s: cv.f32["N", "G"]):
    return x @ (q * s[:, np.arange(q.shape[1]) // 32]).T

@cv.optimize
def batched(x: cv.f32["B", "T", "K"], q: cv.i8["N", "K"], s: cv.f32["N"]):
    return x @ (q * s[:, None]).T

@cv.optimize
def vector(x: cv.f32["K"], q: cv.i8["N", "K"], s: cv.f32["N"]):
    w = q.astype(np.float32) * s[:, None]
    return x @ w.T, w @ x

@cv.optimize
def in_a_loop(x: cv.f32["M", "K"], q: cv.i8["K", "K"], s: cv.f32["K"], n: int):
    for _ in range(n):
        x = np.tanh(x @ (q * s[:, None]).T)
    return x

@cv.optimize
def two_terms(x: cv.f32["M", "K"], h: cv.f32["M", "J"], q: cv.i8["N", "K"], s: cv.f32["N"],
              w: cv.f32["N", "J"]):
    return np.tanh(x @ (q * s[:, None]).T + h @ w.T)

@cv.optimize
def also_stored(x: cv.f32["M", "K"], q: cv.i8["N", "K"], s: cv.f32["N"]):
    w = q * s[:, None]
    return x @ w.T, w
'''

FUSED = ("linear", "left", "grouped32", "grouped128", "repeated", "repeated_left", "batched",
         "vector", "two_terms")


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("int8"), SOURCE)


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _int8(rng, shape):
    return rng.integers(-127, 128, shape).astype(np.int8)


def _scales(rng, shape):
    return (rng.random(shape) * 0.02).astype(np.float32)


def _check(fn, args, expect_fn):
    """fn(*args) with poisoned out= arrays against expect_fn(float64 args)."""
    expect = expect_fn(*[np.asarray(a, np.float64) for a in args])
    expect = expect if isinstance(expect, tuple) else (expect,)
    outs = tuple(np.full(e.shape, np.nan, np.float32) for e in expect)
    got = fn(*args, out=outs if len(outs) > 1 else outs[0])
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, expect):
        assert g.dtype == np.float32 and np.isfinite(g).all()
        yield g, e


def _bound(x, w, k):
    spread = np.abs(np.asarray(x, np.float64)) @ np.abs(np.asarray(w, np.float64)).T
    return (k + 4) * 2.0 ** -24 * spread + 1e-30


def _dequant(q, s, group=None):
    q, s = np.asarray(q, np.float64), np.asarray(s, np.float64)
    if group is None:
        return q * s[:, None]
    return q * s[:, np.arange(q.shape[1]) // group]


ms = st.sampled_from([1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 40])  # every dot kernel: 1-8 rows
ks = st.integers(1, 300)
ns = st.integers(1, 300)
seeds = st.integers(0, 2 ** 32 - 1)


@settings(max_examples=40, deadline=None)
@given(m=ms, k=ks, n=ns, seed=seeds)
def test_per_channel_against_float64(mod, m, k, n, seed):
    rng = _rng(seed)
    x = rng.standard_normal((m, k)).astype(np.float32)
    q, s, b = _int8(rng, (n, k)), _scales(rng, n), rng.standard_normal(n).astype(np.float32)
    w = _dequant(q, s)
    for got, exp in _check(mod.linear, [x, q, s, b], lambda x, q, s, b: x @ (q * s[:, None]).T + b):
        np.testing.assert_array_less(np.abs(got - exp), _bound(x, w, k) + 2.0 ** -23 * np.abs(exp))
    xt = np.ascontiguousarray(x.T)
    for got, exp in _check(mod.left, [q, s, xt], lambda q, s, x: (q * s[:, None]) @ x):
        np.testing.assert_array_less(np.abs(got - exp), _bound(x, w, k).T)


@settings(max_examples=30, deadline=None)
@given(m=ms, g=st.integers(1, 9), n=ns, seed=seeds)
def test_per_group_against_float64(mod, m, g, n, seed):
    rng = _rng(seed)
    for group, fn in ((32, mod.grouped32), (128, mod.grouped128), (64, mod.repeated)):
        k = g * group
        x = rng.standard_normal((m, k)).astype(np.float32)
        q, s = _int8(rng, (n, k)), _scales(rng, (n, g))
        w = _dequant(q, s, group)
        for got, exp in _check(fn, [x, q, s], fn.py_func):
            exact = x.astype(np.float64) @ w.T
            if group == 128:  # tanh(z) moves less than z
                exact = np.tanh(exact)
            np.testing.assert_allclose(exp, exact, rtol=1e-12, atol=1e-12)
            np.testing.assert_array_less(np.abs(got - exp), _bound(x, w, k) + 2e-7)
    k = g * 32  # the scales spread by s.repeat, the weight on the left
    x = rng.standard_normal((k, m)).astype(np.float32)
    q, s = _int8(rng, (n, k)), _scales(rng, (n, g))
    w = _dequant(q, s, 32)
    for got, exp in _check(mod.repeated_left, [q, s, x], mod.repeated_left.py_func):
        np.testing.assert_allclose(exp, w @ x.astype(np.float64), rtol=1e-12, atol=1e-12)
        np.testing.assert_array_less(np.abs(got - exp), _bound(x.T, w, k).T + 2e-7)


@settings(max_examples=25, deadline=None)
@given(m=ms, k=ks, n=ns, seed=seeds)
def test_k_not_a_multiple_of_the_group(mod, m, k, n, seed):
    """``s[:, np.arange(k) // 32]`` takes any k (the last group shorter): computed as
    written (not fused yet: its gather is read as NumPy would, IndexError included)."""
    rng = _rng(seed)
    x = rng.standard_normal((m, k)).astype(np.float32)
    q, s = _int8(rng, (n, k)), _scales(rng, (n, -(-k // 32)))
    w = _dequant(q, s, 32)
    for got, exp in _check(mod.gathered, [x, q, s], lambda x, q, s: x @ (q * s[:, np.arange(
            q.shape[1]) // 32]).T):
        np.testing.assert_array_less(np.abs(got - exp), _bound(x, w, k))
    with pytest.raises(IndexError):
        mod.gathered(x, q, s[:, :-1])


@settings(max_examples=15, deadline=None)
@given(b=st.integers(1, 3), t=st.integers(1, 5), k=ks, n=ns, seed=seeds)
def test_batched_and_vector_operands(mod, b, t, k, n, seed):
    rng = _rng(seed)
    x = rng.standard_normal((b, t, k)).astype(np.float32)
    q, s = _int8(rng, (n, k)), _scales(rng, n)
    w = _dequant(q, s)
    for got, exp in _check(mod.batched, [x, q, s], lambda x, q, s: x @ (q * s[:, None]).T):
        np.testing.assert_array_less(np.abs(got - exp).reshape(b * t, n),
                                     _bound(x.reshape(b * t, k), w, k))
    v = x[0, 0]
    pairs = list(_check(mod.vector, [v, q, s], lambda x, q, s: (x @ (q * s[:, None]).T,
                                                                (q * s[:, None]) @ x)))
    for got, exp in pairs:
        np.testing.assert_array_less(np.abs(got - exp), _bound(v[None], w, k)[0])


@pytest.mark.parametrize("level", [1, 3, "detected"])
def test_plain_and_vector_kernels_agree(mod, level):
    """The plain C dot kernel (levels below 4) and the AVX-512 one (picked per call)."""
    from cuvil_aot.runtime import native

    rng = _rng(11)
    x = rng.standard_normal((3, 333)).astype(np.float32)
    q, s, b = _int8(rng, (77, 333)), _scales(rng, 77), np.zeros(77, np.float32)
    native.configure(cpu_level=0 if level == "detected" else level)
    try:
        got = mod.linear(x, q, s, b)
    finally:
        native.configure(cpu_level=0)
    exp = x.astype(np.float64) @ _dequant(q, s).T
    np.testing.assert_array_less(np.abs(got - exp), _bound(x, _dequant(q, s), 333))


def test_strided_weights_and_zero_sizes(mod):
    """A weight read with a stride along k takes the dequantized-block path; k == 0 sums
    nothing; m == 0 or n == 0 returns empty results."""
    rng = _rng(7)
    full = _int8(rng, (50, 2 * 97))
    q, s = full[:, ::2], _scales(rng, 50)
    x = rng.standard_normal((3, 97)).astype(np.float32)
    b = np.zeros(50, np.float32)
    np.testing.assert_allclose(mod.linear(x, q, s, b), x @ (q * s[:, None]).T, rtol=1e-5,
                               atol=1e-5)
    for m, k, n in ((2, 0, 5), (0, 4, 5), (2, 4, 0)):
        x, q, s = np.ones((m, k), np.float32), np.ones((n, k), np.int8), np.ones(n, np.float32)
        got = mod.linear(x, q, s, np.zeros(n, np.float32))
        np.testing.assert_array_equal(got, np.zeros((m, n), np.float32))


def test_in_a_run_time_loop_and_beside_a_float32_term(mod):
    """A loop body's matmul reads the int8 weight each trip; ``x @ Wq.T + h @ w.T`` is
    two GEMMs (the int8 one takes one term), added as NumPy adds them."""
    rng = _rng(5)
    x, q, s = rng.standard_normal((2, 64)).astype(np.float32), _int8(rng, (64, 64)), \
        _scales(rng, 64)
    exp = x.astype(np.float64)
    for _ in range(3):
        exp = np.tanh(exp @ _dequant(q, s).T)
    np.testing.assert_allclose(mod.in_a_loop(x, q, s, 3), exp, rtol=1e-5, atol=1e-5)
    h, w = rng.standard_normal((2, 9)).astype(np.float32), rng.standard_normal((64, 9))
    w = w.astype(np.float32)
    exp = np.tanh(x.astype(np.float64) @ _dequant(q, s).T + h.astype(np.float64) @ w.T)
    np.testing.assert_allclose(mod.two_terms(x, h, q, s, w), exp, rtol=1e-5, atol=1e-5)


def test_a_weight_stored_anyway_is_read_as_float32(mod):
    rng = _rng(3)
    x, q, s = rng.standard_normal((2, 40)).astype(np.float32), _int8(rng, (30, 40)), \
        _scales(rng, 30)
    y, w = mod.also_stored(x, q, s)
    np.testing.assert_array_equal(w, q * s[:, None])
    np.testing.assert_allclose(y, x @ w.T, rtol=1e-5, atol=1e-6)


def test_no_float32_weight_is_stored(mod, tmp_path):
    """The proof of fusion: no float32 buffer of the weight's shape exists (the IR after
    fusion) and the C code calls api->gemm_q8; a weight also returned is a float32 buffer,
    which the float32 GEMM reads."""
    module = load_source(tmp_path, SOURCE)
    _, _, fused = pipeline.compile_ir(module, pipeline.Options())
    for name in FUSED:
        for _, fn in fused[name]:
            q = next(p for p in fn.param_nodes if p.dtype == "int8")
            stored = [d.buffer for g in fn.groups for d in g.dests]
            assert any(g.kind is Kind.GEMM for g in fn.groups), name
            assert not any(b.dtype == "float32" and b.shape in (q.shape, q.shape[::-1])
                           for b in stored), name
    for name in ("repeated", "repeated_left"):  # np.repeat's spread of the scales: not stored
        (_, fn), = fused[name]
        assert [g.kind for g in fn.groups] == [Kind.GEMM], name
    (_, gathered), = fused["gathered"]
    assert any(g.kind is Kind.ELEMENTWISE for g in gathered.groups)  # not fused (yet)
    sources = mod.__artifact__.sources
    module_c = "".join(sources.values())
    assert module_c.count("api->gemm_q8(") >= len(FUSED)
    (_, stored), = fused["also_stored"]
    assert len(stored.groups) == 2  # the weight's kernel, then the float32 GEMM


def test_gemm_q8_reads_one_byte_per_weight():
    """The kernel the runtime picks for a decode GEMV streams int8: gemm_q8.c's dot path
    (its condition is on the sizes and strides alone)."""
    from pathlib import Path

    text = (Path(__file__).parent.parent / "native" / "src" / "gemm_q8.c").read_text()
    assert "return nvec <= CV_Q8_DOT_MAX && (g->k <= 1 || (g->q_ps == 1 && x_step == 1));" \
        in text


# ---- quantize_weights -------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(out=st.integers(1, 40), k=st.integers(1, 300),
       group=st.sampled_from([None, 32, 64, 128, 5]), scale=st.sampled_from([1e-3, 1.0, 50.0]),
       seed=seeds)
def test_quantize_weights_error_is_within_half_a_step(out, k, group, scale, seed):
    """|w - q * scale| <= scale / 2 = max|w| / 254 over the channel or group, plus float32's
    rounding of the product (2^-24 relative); q in [-127, 127]; the scale the formula's."""
    w = (_rng(seed).standard_normal((out, k)) * scale).astype(np.float32)
    w[0, : min(k, 7)] = 0.0  # a group or row of zeros has scale 0
    q, s = cv.quantize_weights(w, group=group)
    size = group or k
    ngroups = -(-k // size)
    assert q.dtype == np.int8 and q.shape == w.shape and s.dtype == np.float32
    assert s.shape == ((out,) if group is None else (out, ngroups))
    assert np.abs(q.astype(np.int64)).max() <= 127
    per = np.repeat(s.reshape(out, -1).astype(np.float64), size, axis=1)[:, :k]
    amax = np.zeros((out, ngroups * size))
    amax[:, :k] = np.abs(w)
    amax = amax.reshape(out, ngroups, size).max(axis=2)
    np.testing.assert_array_equal(s.reshape(out, -1), (amax / 127).astype(np.float32))
    deq = q.astype(np.float32) * per.astype(np.float32)
    err = np.abs(w.astype(np.float64) - deq)
    np.testing.assert_array_less(err, per / 2 * (1 + 2.0 ** -20) + 2.0 ** -24 * np.abs(deq)
                                 + 1e-38)
    worst = float((err / np.maximum(np.abs(w).max(), 1e-30)).max())
    assert worst <= 1 / 254 * (1 + 1e-5)  # the documented bound, relative to max|w|


def test_quantize_weights_layouts_and_errors():
    w = _rng(1).standard_normal((6, 70)).astype(np.float32)
    q, s = cv.quantize_weights(w, group=32)
    q1, s1 = cv.quantize_weights(w.T, group=32, axis=1)
    np.testing.assert_array_equal(q1, q.T)
    np.testing.assert_array_equal(s1, s.T)
    deq = (q[:, :64].reshape(6, 2, 32) * s[:, :2, None]).reshape(6, 64)
    np.testing.assert_allclose(deq, w[:, :64], atol=float(s.max()) / 2 * 1.001)
    for bad in (dict(group=0), dict(axis=2), dict(group=3.5)):
        with pytest.raises(ValueError):
            cv.quantize_weights(w, **bad)
    with pytest.raises(ValueError):
        cv.quantize_weights(np.array([[np.inf]], np.float32))
    with pytest.raises(ValueError):
        cv.quantize_weights(np.ones(4, np.float32))


# ---- the GPU ------------------------------------------------------------------------------

GPU_SOURCE = SOURCE + '''
@cv.optimize
def act(x: cv.f32["M", "K"], q: cv.i8["N", "K"], s: cv.f32["N"], b: cv.f32["N"]):
    return np.tanh(x @ (q * s[:, None]).T + b)

@cv.optimize
def grouped64(x: cv.f32["M", "K"], q: cv.i8["N", "K"], s: cv.f32["N", "G"], b: cv.f32["N"]):
    n, k = q.shape
    return np.tanh(x @ (q.reshape(n, k // 64, 64) * s[:, :, None]).reshape(n, k).T + b)

@cv.optimize
def grouped24(x: cv.f32["M", "K"], q: cv.i8["N", "K"], s: cv.f32["N", "G"]):
    n, k = q.shape
    return x @ (q.reshape(n, k // 24, 24) * s[:, :, None]).reshape(n, k).T
'''


def test_the_gpu_build_fuses_the_int8_gemv(tmp_path):
    """Compile-only (nvcc, sm_80 and sm_90): a unit whose GEMM is x @ (q * s).T holds the
    fused int8 GEMV (cuda_q8.h's cv_gemv_q8) and its wrapper launches it for at most 16
    rows of x, else dequantizes (cv_dequant_q8) for the float32 GEMM; (q * s) @ x has no
    fused GEMV, and a unit without int8 weights includes neither."""
    from cuvil_aot.compiler.toolchain import nvcc

    if nvcc.find_nvcc() is None:
        pytest.skip("nvcc not found")
    module = load_source(tmp_path, GPU_SOURCE)
    (tmp_path / "build").mkdir()
    artifact = pipeline.build(module, pipeline.Options(cuda_archs=("sm_80", "sm_90")),
                              out_dir=tmp_path / "build")
    assert artifact.manifest["refused"] == {}
    units = {n: t for n, t in artifact.sources.items() if n.endswith(".cu")}
    fused = [n for n, t in units.items() if "_gemm_f32_q8x1(const __grid_constant__" in t]
    assert len(fused) == 10  # each unit with an int8 GEMM of one term x @ (q * s).T
    assert all("cv_gemv_q8<1>(j.t[0], *q" in units[n] and "cv_gemv_q8<4>(j.t[0], *q"
               in units[n] for n in fused)
    # and the two with the weight on the left, which dequantize
    assert sum('#include "cuvil_aot/cuda_q8.h"' in t for t in units.values()) == len(fused) + 2
    wrapper = host_code(artifact.sources)
    assert wrapper.count("const int q8 = a.n[0] <= 16 && ") >= 7
    assert "const int q8 = a.n[0] * a.n[1] <= 16 && " in wrapper  # batched: all its rows
    assert wrapper.count("if (!q8) {") == wrapper.count("const int q8 =")
    assert "cv_dequant_q8_args dq" in wrapper
    assert "small = small && (gemv || dot) && !q8;" in wrapper


def test_the_fused_gemv_emulated_on_the_host(tmp_path):
    """cv_gemv_q8's index math and sums, run on the host (tests/data/q8_emulate.cpp: a warp
    as 32 threads) where no GPU is: m 1..16, batches, odd k, groups, misaligned rows."""
    import shutil
    import subprocess
    from pathlib import Path

    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    root = Path(__file__).resolve().parents[1]
    exe = tmp_path / "q8_emulate"
    subprocess.run([cxx, "-std=c++20", "-O1", "-pthread", f"-I{root / 'native' / 'include'}",
                    str(root / "tests" / "data" / "q8_emulate.cpp"), "-o", str(exe)], check=True)
    run = subprocess.run([str(exe), "40", "7"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "0/52 failed" in run.stdout, run.stdout


def _gpu_mod(tmp_path_factory):
    from gpu_harness import device_arch

    global _GPU_MOD
    if _GPU_MOD is None:
        _GPU_MOD = compile_source(tmp_path_factory.mktemp("int8gpu"), GPU_SOURCE,
                                  cuda_archs=(device_arch(),))
    return _GPU_MOD


def _on_gpu(torch, fn, args, exp, bound, misalign=False):
    """fn on CUDA copies of args (q's rows misaligned: a view one byte into wider rows)
    into a poisoned out=, against exp within bound."""
    dev = [torch.from_numpy(np.ascontiguousarray(a)).cuda() for a in args]
    if misalign:
        q = args[1]
        wide = torch.zeros((q.shape[0], q.shape[1] + 3), dtype=torch.int8, device="cuda")
        wide[:, 1:1 + q.shape[1]] = dev[1]
        dev[1] = wide[:, 1:1 + q.shape[1]]
    out = torch.full(exp.shape, float("nan"), device="cuda")
    assert fn(*dev, out=out) is out
    np.testing.assert_array_less(np.abs(out.cpu().numpy() - exp), bound)


gpu_ms = st.sampled_from([1, 1, 2, 3, 4, 5, 7, 8, 9, 13, 15, 16, 16, 17, 40])


@pytest.mark.gpu
@settings(max_examples=25, deadline=None)
@given(m=gpu_ms, k=ks, n=ns, misalign=st.booleans(), seed=seeds)
def test_on_the_gpu_against_float64(tmp_path_factory, m, k, n, misalign, seed):
    """Per channel: plain + bias, tanh(+ bias), (q * s) @ x; q's rows aligned or not."""
    torch = pytest.importorskip("torch")
    mod = _gpu_mod(tmp_path_factory)
    rng = _rng(seed)
    x = rng.standard_normal((m, k)).astype(np.float32)
    q, s, b = _int8(rng, (n, k)), _scales(rng, n), rng.standard_normal(n).astype(np.float32)
    w = _dequant(q, s)
    z = x.astype(np.float64) @ w.T + b
    bound = _bound(x, w, k) * 4 + 2.0 ** -22 * np.abs(z)
    _on_gpu(torch, mod.linear, [x, q, s, b], z, bound, misalign)
    _on_gpu(torch, mod.act, [x, q, s, b], np.tanh(z), bound + 2.0 ** -20, misalign)
    left = mod.left(*[torch.from_numpy(a).cuda() for a in (q, s, np.ascontiguousarray(x.T))])
    np.testing.assert_array_less(np.abs(left.cpu().numpy() - (z - b).T),
                                 _bound(x, w, k).T * 4 + 2.0 ** -22 * np.abs(z - b).T)


@pytest.mark.gpu
@settings(max_examples=25, deadline=None)
@given(m=gpu_ms, g=st.integers(1, 9), n=ns, misalign=st.booleans(), seed=seeds)
def test_per_group_on_the_gpu(tmp_path_factory, m, g, n, misalign, seed):
    """Groups of 32, 64 (+ bias, tanh), 128 (tanh) and 24 (byte loads), against float64."""
    torch = pytest.importorskip("torch")
    mod = _gpu_mod(tmp_path_factory)
    rng = _rng(seed)
    for group, fn in ((32, mod.grouped32), (64, mod.grouped64), (128, mod.grouped128),
                      (24, mod.grouped24)):
        k = g * group
        x = rng.standard_normal((m, k)).astype(np.float32)
        q, s, b = _int8(rng, (n, k)), _scales(rng, (n, g)), rng.standard_normal(n).astype(
            np.float32)
        w = _dequant(q, s, group)
        z = x.astype(np.float64) @ w.T
        args = [x, q, s]
        if group == 64:
            z, args = z + b, args + [b]
        exp = np.tanh(z) if group in (64, 128) else z
        bound = _bound(x, w, k) * 4 + 2.0 ** -22 * np.abs(z) + 2.0 ** -20
        _on_gpu(torch, fn, args, exp, bound, misalign)


@pytest.mark.gpu
@settings(max_examples=10, deadline=None)
@given(bt=st.sampled_from([(1, 1), (2, 3), (4, 4), (3, 6)]), k=ks, n=ns, seed=seeds)
def test_batched_on_the_gpu(tmp_path_factory, bt, k, n, seed):
    """x (B, T, K): fused at up to 16 rows over all batches, dequantized above."""
    torch = pytest.importorskip("torch")
    mod = _gpu_mod(tmp_path_factory)
    rng = _rng(seed)
    x = rng.standard_normal((*bt, k)).astype(np.float32)
    q, s = _int8(rng, (n, k)), _scales(rng, n)
    w = _dequant(q, s)
    z = x.astype(np.float64) @ w.T
    flat = x.reshape(-1, k)
    bound = (_bound(flat, w, k) * 4).reshape(z.shape) + 2.0 ** -22 * np.abs(z)
    _on_gpu(torch, mod.batched, [x, q, s], z, bound)
    v = x[0, 0]
    got = mod.vector(*[torch.from_numpy(a).cuda() for a in (v, q, s)])
    np.testing.assert_array_less(np.abs(got[0].cpu().numpy() - z[0, 0]),
                                 _bound(v[None], w, k)[0] * 4 + 2.0 ** -22 * np.abs(z[0, 0]))


_GPU_MOD = None
