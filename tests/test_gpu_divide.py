"""float32 division on a real device: cuda_divide.h's ``cv_divf`` (rcp.approx, a Newton
step and Markstein's correction, scaled into range; no branch) against NumPy's IEEE
division of the same float32 operands: within one ulp everywhere, equal for all but a few
in 10^5 normal quotients (at least 99.9% here), and equal bit for bit where IEEE's result
is a zero, an infinity or NaN (the sign of a zero included). Operands span the whole
float32 range: subnormals, the extremes, zeros of both signs, infinities, NaN, and
quotients that overflow and underflow. Results are poisoned before the call, once with NaN
and once with a number, so an element the kernel leaves shows either way.

Run on a machine with an NVIDIA GPU (tools/gpu_check.sh); skipped elsewhere."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from conftest import compile_source
from gpu_harness import device_arch

pytestmark = pytest.mark.gpu

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def divide(x: cv.f32["N"], y: cv.f32["N"]):
    return x / y

@cv.optimize
def by_constants(x: cv.f32["N"]):
    return x / 1.4142135, 1 / x, x / 2.0, x / np.float32(3.0)

@cv.optimize
def in_epilogue(x: cv.f32["M", "K"], w: cv.f32["N", "K"], b: cv.f32["N"]):
    h = x @ w.T + b
    return h / (1 + np.abs(h))
'''
SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, 1.1754942e-38,
                     1.1754944e-38, 3.4028235e38, -3.4028235e38, 1.0, -1.0, 2.0, 0.5],
                    dtype=np.float32)


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("divide"), SOURCE,
                          cuda_archs=(device_arch(),))


def _operands(key: str, n: int) -> np.ndarray:
    """n float32 numbers of every magnitude (exponents -149 .. 127, both signs) with the
    specials mixed in."""
    rng = np.random.default_rng(zlib.crc32(key.encode()))
    mant = rng.uniform(1.0, 2.0, n) * rng.choice([-1.0, 1.0], n)
    x = np.ldexp(mant, rng.integers(-150, 128, n)).astype(np.float32)
    x[rng.integers(0, n, n // 20)] = rng.choice(SPECIALS, n // 20)
    return x


def _ordered(a: np.ndarray) -> np.ndarray:
    """float32 bits as integers in the numbers' order: ulp distance is a difference."""
    i = a.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def _on_device(fn, *args: np.ndarray) -> list[np.ndarray]:
    """fn's results on the device, each checked equal under two poisons (NaN, 7.0)."""
    torch = pytest.importorskip("torch")
    dev = [torch.from_numpy(a).cuda() for a in args]
    expect = fn.py_func(*args)
    expect = list(expect) if isinstance(expect, tuple) else [expect]
    runs = []
    for poison in (float("nan"), 7.0):
        outs = tuple(torch.full(e.shape, poison, dtype=torch.float32, device="cuda")
                     for e in expect)
        fn(*dev, out=outs)
        runs.append([o.cpu().numpy() for o in outs])
    for first, second in zip(*runs):
        np.testing.assert_array_equal(first.view(np.int32), second.view(np.int32))
    return runs[0]


def _judge(got: np.ndarray, want: np.ndarray) -> float:
    """got within one ulp of IEEE's want, equal where want is not a finite nonzero number;
    returns the fraction equal among the normal quotients (a subnormal one may round twice)."""
    special = ~np.isfinite(want) | (want == 0)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    plain = special & ~np.isnan(want)
    np.testing.assert_array_equal(got[plain].view(np.int32), want[plain].view(np.int32))
    ulps = np.abs(_ordered(got[~special]) - _ordered(want[~special]))
    assert ulps.max(initial=0) <= 1, (got[~special][ulps > 1][:5], want[~special][ulps > 1][:5])
    normal = np.abs(want) >= np.finfo(np.float32).tiny  # (False for NaN)
    return float(np.mean(got[normal].view(np.int32) == want[normal].view(np.int32)))


@pytest.mark.parametrize("n", [1, 7, 4099, 1 << 20])
def test_any_two_float32_numbers(mod, n):
    x, y = _operands(f"x{n}", n), _operands(f"y{n}", n)
    (got,) = _on_device(mod.divide, x, y)
    with np.errstate(all="ignore"):
        exact = _judge(got, x / y)
    if n >= 4099:
        assert exact >= 0.999, exact


def test_every_special_pair(mod):
    x, y = np.repeat(SPECIALS, SPECIALS.size), np.tile(SPECIALS, SPECIALS.size)
    (got,) = _on_device(mod.divide, x, y)
    with np.errstate(all="ignore"):
        _judge(got, x / y)


@pytest.mark.parametrize("n", [5, 1 << 20])
def test_by_constants_and_reciprocals(mod, n):
    x = _operands(f"c{n}", n)
    got = _on_device(mod.by_constants, x)
    with np.errstate(all="ignore"):
        for g, want in zip(got, mod.by_constants.py_func(x)):
            exact = _judge(g, want)
            if n > 5:
                assert exact >= 0.999, exact
    np.testing.assert_array_equal(got[2], x * np.float32(0.5))  # by a power of two: exact


@pytest.mark.parametrize("m,k,n", [(3, 5, 7), (300, 96, 260), (1024, 768, 768)])
def test_a_division_in_a_gemm_epilogue(mod, m, k, n):
    rng = np.random.default_rng(zlib.crc32(f"epi{m}".encode()))
    x, w = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal(
        (n, k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    (got,) = _on_device(mod.in_epilogue, x, w, b)
    h = x.astype(np.float64) @ w.T.astype(np.float64) + b
    want = h / (1 + np.abs(h))
    # the GEMM's float32 sums (k 2^-24 sum|x||w|) moved through h / (1 + |h|), whose slope is
    # at most 1, plus the division's ulp
    spread = np.abs(x.astype(np.float64)) @ np.abs(w.T.astype(np.float64)) + np.abs(b)
    np.testing.assert_array_less(np.abs(got - want), 4 * k * 2.0 ** -24 * spread + 2.0 ** -22)
