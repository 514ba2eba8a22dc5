"""``scipy.special.erf`` and ``math.erf`` (BERT's exact GELU, ``0.5 * x * (1 + erf(x /
math.sqrt(2)))``) against SciPy in float64 on random shapes and values (hypothesis),
outputs poisoned: SciPy's dtypes (float32 stays, ints and float64 give float64), fused
into the GELU's loop on the CPU (vmath.h's cv_erff) and libdevice's erff on the GPU; and
``scipy.special.softmax``, ``log_softmax`` and ``expit`` (compiled from their NumPy
forms) the same way, infinite slices and SciPy's dtypes included."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from conftest import check, compile_source, cuda_text, generated_units, gpu_build
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("scipy")

SOURCE = '''
import math
import numpy as np
import scipy.special
from scipy.special import erf
import cuvil_aot as cv

@cv.optimize(signatures=["f32[N,D]", "f64[N,D]"])
def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))

@cv.optimize(signatures=["f32[N], i32[N], f64[N], float"])
def erfs(x, i, d, s):
    return scipy.special.erf(x), erf(i), erf(d) * 2, math.erf(s), erf(s)

@cv.optimize(signatures=["f32[A,B,C]", "f64[A,B,C]", "i32[A,B,C]"])
def softmaxes(x):
    return (scipy.special.softmax(x, axis=-1), scipy.special.softmax(x, axis=(0, 2)),
            scipy.special.softmax(x), scipy.special.log_softmax(x, axis=1),
            scipy.special.log_softmax(x))

@cv.optimize(signatures=["f32[N], f64[N], i16[N], f16[N], float"])
def expits(x, d, i, h, s):
    return (scipy.special.expit(x), scipy.special.expit(d), scipy.special.expit(i),
            scipy.special.expit(h), scipy.special.expit(s))
'''


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return compile_source(tmp_path_factory.mktemp("scipy_erf"), SOURCE)


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 9), d=st.integers(1, 70), scale=st.sampled_from([0.3, 2.0, 6.0]),
       seed=st.integers(0, 2**32 - 1))
def test_gelu_of_erf(m, n: int, d: int, scale: float, seed: int) -> None:
    x = np.random.default_rng(seed).standard_normal((n, d)) * scale
    check(m.gelu, x.astype(np.float32))
    check(m.gelu, x)


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 40), seed=st.integers(0, 2**32 - 1))
def test_dtypes_and_numbers(m, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    x[rng.integers(0, n)] = rng.choice([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30])
    check(m.erfs, x, rng.integers(-4, 5, n).astype(np.int32), rng.standard_normal(n) * 4,
          float(rng.standard_normal() * 2))


@settings(max_examples=15, deadline=None)
@given(a=st.integers(1, 4), b=st.integers(1, 5), c=st.integers(1, 6),
       dtype=st.sampled_from([np.float32, np.float64, np.int32]), special=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_softmax_and_log_softmax(m, a: int, b: int, c: int, dtype: type, special: bool,
                                 seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((a, b, c)) * 4).astype(dtype)
    if special and dtype != np.int32:  # a slice all -inf, one +inf
        x[0, :, 0] = -np.inf
        x[-1, -1, -1] = np.inf
    check(m.softmaxes, x)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 40), seed=st.integers(0, 2**32 - 1))
def test_expit(m, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 30
    x[rng.integers(0, n)] = rng.choice([np.inf, -np.inf, np.nan, -100.0, 100.0])
    check(m.expits, x.astype(np.float32), x, rng.integers(-50, 50, n).astype(np.int16),
          x.astype(np.float16), float(x[0]))


def test_the_results_keep_scipys_dtypes(m) -> None:
    got = m.erfs(np.ones(2, np.float32), np.ones(2, np.int32), np.ones(2), 0.5)
    assert [np.asarray(g).dtype for g in got] == [np.float32, np.float64, np.float64,
                                                  np.float64, np.float64]
    assert got[3] == math.erf(0.5)  # libm's erf, as Python's math module computes it
    ones = (np.ones(2, np.float32), np.ones(2), np.ones(2, np.int16), np.ones(2, np.float16))
    assert [np.asarray(g).dtype for g in m.expits(*ones, 0.5)] == [
        np.float32, np.float64, np.float64, np.float64, np.float64]


def test_the_gpu_code_calls_libdevice(tmp_path: Path) -> None:
    text = cuda_text(generated_units(tmp_path, SOURCE, ("sm_90",)))
    assert "erff(" in text and "erf(" in text
    (tmp_path / "nvcc").mkdir()
    gpu_build(tmp_path / "nvcc", SOURCE)


@pytest.mark.gpu
def test_gpu_gelu(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from gpu_harness import device_arch

    mod = compile_source(tmp_path, SOURCE, cuda_archs=(device_arch(),))
    x = np.random.default_rng(5).standard_normal((33, 65)).astype(np.float32) * 3
    got = mod.gelu(torch.from_numpy(x).cuda()).cpu().numpy()
    want = mod.gelu.py_func(x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-7)
