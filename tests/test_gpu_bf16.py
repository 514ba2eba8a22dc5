"""bfloat16 on a real device (issue 24): ``precision="bf16"`` with float32 PyTorch tensors
(each float32 matmul's operands rounded to bfloat16 into scratch of the call, then the bf16
wgmma GEMM on sm_90a where both operands are K-major, the SIMT tiles reading bfloat16
elsewhere) and torch.bfloat16 tensors as arguments and results.

Judged as tests/test_precision.py judges the CPU: the result equals float64 arithmetic on
the operands rounded to bfloat16 (to nearest even), within float32 accumulation error
(4 k 2^-24 sum|a||b|: the tensor cores' float32 sums truncate), and within the README's
bound of the unrounded product; outputs poisoned with NaN before the call. bfloat16
elementwise results equal the CPU path's bit for bit where both compute in float32 and
round once. On a device of compute capability 9.0 a profile checks which GEMM ran.

Run on a machine with an NVIDIA GPU (tools/gpu_check.sh); skipped elsewhere."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from conftest import compile_source
from gpu_harness import device_arch, kernels_launched

pytestmark = pytest.mark.gpu
ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = ml_dtypes.bfloat16

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(precision="bf16")
def linear(x: cv.f32["M", "K"], w: cv.f32["N", "K"], b: cv.f32["N"]):
    h = x @ w.T
    return h + b, np.tanh(h)

@cv.optimize(precision="bf16")
def linear_kn(x: cv.f32["M", "K"], w: cv.f32["K", "N"], b: cv.f32["N"]):
    h = x @ w
    return h + b, np.tanh(h)

@cv.optimize(precision="bf16")
def scores(q: cv.f32["Z", "M", "K"], k: cv.f32["Z", "N", "K"]):
    return np.matmul(q, k.transpose(0, 2, 1)) * 0.125

@cv.optimize(precision="bf16")
def shared(x: cv.f32["Z", "M", "K"], w: cv.f32["N", "K"]):
    return x @ w.T - 1.0

@cv.optimize(precision="bf16")
def two_terms(x: cv.f32["M", "K"], h: cv.f32["M", "J"], wx: cv.f32["N", "K"],
              wh: cv.f32["N", "J"]):
    return x @ wx.T + h @ wh.T

@cv.optimize(precision="bf16")
def attend(q: cv.f32["B", "T", "D"], k: cv.f32["B", "T", "D"], v: cv.f32["B", "T", "D"]):
    b, t = q.shape[0], q.shape[1]
    qh = q.reshape(b, t, 4, -1).transpose(0, 2, 1, 3)
    kh = k.reshape(b, t, 4, -1).transpose(0, 2, 1, 3)
    vh = v.reshape(b, t, 4, -1).transpose(0, 2, 1, 3)
    return np.matmul(np.matmul(qh, kh.transpose(0, 1, 3, 2)) * 0.125, vh)

@cv.optimize
def arrays(x: cv.bf16["M", "K"], w: cv.bf16["N", "K"], b: cv.f32["N"]):
    return x @ w.T + b

@cv.optimize
def arrays_kn(x: cv.bf16["M", "K"], w: cv.bf16["K", "N"]):
    return x @ w

@cv.optimize
def exact(x: cv.bf16["M", "K"], y: cv.bf16["M", "K"], g: cv.bf16["K"]):
    return x + y, x * g, np.maximum(x, y) * 2.5, \\
        (x.astype(np.float32) * 3).astype(ml_dtypes.bfloat16), x.astype(np.float32) - y

@cv.optimize
def rows(x: cv.bf16["M", "K"]):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True), x.sum(axis=-1), x.mean(), np.sort(x, axis=-1), \\
        np.cumsum(x, axis=-1)

@cv.optimize
def misc(x: cv.bf16["N", "K"], y: cv.bf16["N", "K"], ids: cv.i64["M"]):
    z = x.copy()
    z[ids] = y[ids] * 2
    return x[ids], np.where(x > y, x, y), x.T + 1, z, np.concatenate([x, y])

@cv.optimize
def to_bf16(x: cv.f32["N"]):
    return x.astype(ml_dtypes.bfloat16)
'''.replace("import numpy as np\n", "import numpy as np\nimport ml_dtypes\n", 1)

# (M, K, N): odd sizes, k not a multiple of 8 (bfloat16 rows not 16-byte aligned: no
# tensor maps, the SIMT tiles), a few rows, split-K (few tiles, deep k), many tiles
SHAPES = [(1, 1, 1), (3, 7, 5), (33, 129, 17), (40, 768, 768), (130, 96, 260),
          (517, 1000, 300), (1024, 768, 768), (256, 4096, 64), (1000, 301, 517),
          (2048, 1024, 1536)]
BATCHED = [(1, 5, 8, 3), (24, 200, 64, 200), (5, 131, 36, 77), (3, 300, 256, 520)]


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("bf16"), SOURCE, cuda_archs=(device_arch(),))


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _bf16(a: np.ndarray) -> np.ndarray:
    """``a`` rounded to bfloat16 (to nearest even, ml_dtypes), as float64."""
    return a.astype(BF16).astype(np.float64)


def _dev(a: np.ndarray):
    """A CUDA tensor of ``a``: torch.bfloat16 for an ml_dtypes array (the same bits)."""
    torch = pytest.importorskip("torch")
    if a.dtype == BF16:
        return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16).cuda()
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def _host(t) -> np.ndarray:
    import torch

    if t.dtype == torch.bfloat16:
        return t.cpu().view(torch.int16).numpy().view(BF16)
    return t.cpu().numpy()


def _poisoned(like: np.ndarray):
    import torch

    dtype = {np.dtype(np.float32): torch.float32, np.dtype(BF16): torch.bfloat16}[like.dtype]
    return torch.full(like.shape, float("nan"), dtype=dtype, device="cuda")


def _call(fn, *args: np.ndarray) -> tuple[list[np.ndarray], list[str]]:
    """fn on the device into NaN-poisoned outputs: the results and the kernels it ran."""
    expect = fn.py_func(*args)
    expect = list(expect) if isinstance(expect, tuple) else [expect]
    outs = tuple(_poisoned(np.asarray(e)) for e in expect)
    dev = [_dev(a) for a in args]
    kernels = kernels_launched(lambda: fn(*dev, out=outs))
    got = [_host(o) for o in outs]
    assert [g.dtype for g in got] == [np.asarray(e).dtype for e in expect]  # NumPy's dtypes
    again = tuple(_poisoned(np.asarray(e)) for e in expect)  # graphs, scratch: the same
    fn(*dev, out=again)
    for g, a in zip(got, again):
        np.testing.assert_array_equal(_host(a).view(np.uint16 if g.dtype == BF16 else g.dtype),
                                      g.view(np.uint16 if g.dtype == BF16 else g.dtype))
    return got, kernels




def _judge(got: np.ndarray, a: np.ndarray, b: np.ndarray, k: int, extra: np.ndarray | float = 0.0):
    """got == (bf16(a) @ bf16(b) in float64) + extra within float32 accumulation, and within
    the documented bound of the unrounded product (u = 2^-8)."""
    rounded = _bf16(a) @ _bf16(b) + extra
    spread = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    acc = 4 * k * 2.0 ** -24 * spread + 2.0 ** -23 * np.abs(rounded) + 1e-30
    assert np.isfinite(got).all()
    worst = np.max(np.abs(got - rounded) - acc, initial=-1.0)
    assert worst <= 0, f"over float32 accumulation of the bfloat16 products by {worst:.3g}"
    exact = a.astype(np.float64) @ b.astype(np.float64) + extra
    u = 2.0 ** -8
    bound = (2 * u + u * u + 4 * k * 2.0 ** -24) * spread + 2.0 ** -23 * np.abs(exact) + 1e-30
    np.testing.assert_array_less(np.abs(got - exact), bound)


def _hopper() -> bool:
    return device_arch() == "sm_90"


def _ran(kernels: list[str], suffix: str) -> bool:
    return any(k.endswith(suffix) for k in kernels)


def _ran_wgmma(kernels: list[str]) -> bool:
    """The bf16 wgmma entry ran, in either tile width (``_wg``: 256, ``_wg192``: 192)."""
    return _ran(kernels, "_gemm_b16_wg") or _ran(kernels, "_gemm_b16_wg192")


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_the_policy_rounds_x_and_w_then_the_bf16_gemm(mod, m, k, n):
    rng = _rng("linear", m, k, n)
    x = (rng.standard_normal((m, k)) * rng.choice([1e-3, 1.0, 30.0])).astype(np.float32)
    w, b = rng.standard_normal((n, k)).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    (out, act), kernels = _call(mod.linear, x, w, b)
    _judge(out, x, w.T, k, b.astype(np.float64))
    np.testing.assert_allclose(act, np.tanh(out - b), rtol=1e-5, atol=1e-5)  # epilogue in f32
    if _hopper() and kernels and k % 8 == 0 and m > 0:  # K-major, 16-byte rows: wgmma
        assert _ran_wgmma(kernels), kernels


@pytest.mark.parametrize("m,k,n", SHAPES[:7])
def test_an_n_major_weight_runs_the_tiles_on_bfloat16(mod, m, k, n):
    rng = _rng("kn", m, k, n)
    x, w = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(
        np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    (out, act), kernels = _call(mod.linear_kn, x, w, b)
    _judge(out, x, w, k, b.astype(np.float64))
    if kernels:  # no wgmma entry of either type, in either tile width
        assert not (_ran(kernels, "_wg") or _ran(kernels, "_wg192")), kernels


@pytest.mark.parametrize("z,m,k,n", BATCHED)
def test_batched_and_batch_shared_operands(mod, z, m, k, n):
    rng = _rng("batched", z, m, k, n)
    q, kk = rng.standard_normal((z, m, k)).astype(np.float32), rng.standard_normal(
        (z, n, k)).astype(np.float32)
    (got,), _ = _call(mod.scores, q, kk)
    for i in range(z):
        _judge(got[i] / 0.125, q[i], kk[i].T, k)
    w = rng.standard_normal((n, k)).astype(np.float32)
    (got,), _ = _call(mod.shared, q, w)
    for i in range(z):
        _judge(got[i], q[i], w.T, k, -1.0)


@pytest.mark.parametrize("b,t,d", [(1, 5, 8), (2, 33, 24), (8, 128, 256), (3, 200, 512)])
def test_attention_heads_both_gemms(mod, b, t, d):
    """q @ k^T and P @ V of split heads: V's heads copied k-contiguous, so on sm_90a both
    run wgmma where rows are 16-byte aligned (t and d / 4 multiples of 8)."""
    rng = _rng("attend", b, t, d)
    q, k, v = (rng.standard_normal((b, t, d)).astype(np.float32) for _ in range(3))
    (got,), kernels = _call(mod.attend, q, k, v)
    want = mod.attend.py_func(*(a.astype(np.float64) for a in (q, k, v)))
    split = [a.astype(np.float64).reshape(b, t, 4, -1).transpose(0, 2, 1, 3) for a in (q, k, v)]
    spread = np.abs(split[0]) @ np.abs(split[1]).transpose(0, 1, 3, 2) * 0.125 @ np.abs(split[2])
    np.testing.assert_array_less(np.abs(got - want), 5 * 2.0 ** -8 * spread + 1e-6)
    if _hopper() and kernels and t % 8 == 0 and (d // 4) % 8 == 0:
        assert _ran_wgmma(kernels), kernels


def test_two_terms_in_one_gemm(mod):
    rng = _rng("two")
    x, h = rng.standard_normal((300, 264)).astype(np.float32), rng.standard_normal(
        (300, 100)).astype(np.float32)
    wx, wh = rng.standard_normal((200, 264)).astype(np.float32), rng.standard_normal(
        (200, 100)).astype(np.float32)
    (got,), _ = _call(mod.two_terms, x, h, wx, wh)
    _judge(got, np.concatenate([x, h], 1), np.concatenate([wx, wh], 1).T, 364)


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_bfloat16_arrays_run_the_bf16_gemm_as_they_are(mod, m, k, n):
    rng = _rng("arrays", m, k, n)
    x = rng.standard_normal((m, k)).astype(BF16)
    w, b = rng.standard_normal((n, k)).astype(BF16), rng.standard_normal(n).astype(np.float32)
    (got,), kernels = _call(mod.arrays, x, w, b)
    _judge(got, x.astype(np.float32), w.astype(np.float32).T, k, b.astype(np.float64))
    # no rounding pass: the GEMM (unit f6) reads the arrays as they are
    assert all("_gemm_b16_" in name for name in kernels if name.startswith("f6_")), kernels
    if _hopper() and kernels and k % 8 == 0:
        assert _ran_wgmma(kernels), kernels
    (got,), _ = _call(mod.arrays_kn, x, np.ascontiguousarray(w.T))
    _judge(got, x.astype(np.float32), w.astype(np.float32).T, k)


@pytest.mark.parametrize("shape", [(1, 1), (7, 33), (64, 768), (300, 1025)])
def test_bfloat16_elementwise_matches_the_cpu_bit_for_bit(mod, shape):
    rng = _rng("exact", shape)
    x = (rng.standard_normal(shape) * 100).astype(BF16)
    y = rng.standard_normal(shape).astype(BF16)
    if x.size >= 3:  # (no NaN: a NaN an operation makes has the device's own bits)
        x.ravel()[:3] = [np.inf, -np.inf, 1e-40]
    g = rng.standard_normal(shape[1]).astype(BF16)
    got, _ = _call(mod.exact, x, y, g)
    cpu = mod.exact(x, y, g)
    for a, c in zip(got, cpu):
        assert a.dtype == c.dtype
        np.testing.assert_array_equal(a.view(np.uint16) if a.dtype == BF16 else a,
                                      c.view(np.uint16) if c.dtype == BF16 else c)


@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (64, 768), (33, 4096), (8, 5000)])
def test_bfloat16_rows_and_reductions(mod, shape):
    rng = _rng("rows", shape)
    x = (rng.standard_normal(shape) * 4).astype(BF16)
    (p, s, mean, srt, cum), _ = _call(mod.rows, x)
    np.testing.assert_array_equal(srt.view(np.uint16), np.sort(x, axis=-1).view(np.uint16))
    cpu_cum = mod.rows(x)[4].astype(np.float64)  # each step rounded, as NumPy
    np.testing.assert_allclose(cum.astype(np.float64), cpu_cum, rtol=2.0 ** -6,
                               atol=2.0 ** -6 * np.abs(x.astype(np.float64)).sum(axis=-1).max())
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    want = e / e.sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(p.astype(np.float64), want, rtol=2.0 ** -7, atol=1e-6)
    # float32 sums rounded once to bfloat16
    np.testing.assert_allclose(s.astype(np.float64), x64.sum(axis=-1), rtol=2.0 ** -8,
                               atol=1e-5 * np.abs(x64).sum(axis=-1).max())
    np.testing.assert_allclose(float(mean), x64.mean(), rtol=2.0 ** -8, atol=1e-3)


@pytest.mark.parametrize("n,k,m", [(1, 1, 1), (9, 70, 4), (300, 768, 64)])
def test_bfloat16_gathers_scatters_selects_and_copies_match_the_cpu(mod, n, k, m):
    rng = _rng("misc", n, k, m)
    x, y = (rng.standard_normal((n, k)).astype(BF16) for _ in range(2))
    ids = rng.permutation(n)[:m].astype(np.int64) if m <= n else rng.integers(0, n, m)
    got, _ = _call(mod.misc, x, y, ids)
    for a, c in zip(got, mod.misc(x, y, ids)):
        np.testing.assert_array_equal(a.view(np.uint16), c.view(np.uint16))


def test_rounding_to_bfloat16_is_to_nearest_even_as_ml_dtypes(mod):
    import torch

    ties = np.array([1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, -(1 + 2.0 ** -8), 3.0e38, 1e-40,
                     np.inf, -np.inf, np.nan, 0.0, -0.0], np.float32)
    x = np.concatenate([ties, np.random.default_rng(0).standard_normal(4096).astype(np.float32)
                        * np.float32(1e3)])
    got = _host(mod.to_bf16(torch.from_numpy(x).cuda()))
    np.testing.assert_array_equal(got.view(np.uint16), mod.to_bf16(x).view(np.uint16))
    np.testing.assert_array_equal(got.view(np.uint16), x.astype(BF16).view(np.uint16))


def test_cupy_has_no_bfloat16_and_says_so(mod):
    cupy = pytest.importorskip("cupy")
    with pytest.raises(TypeError, match="CuPy has no bfloat16 arrays"):
        mod.to_bf16(cupy.ones(4, cupy.float32))
