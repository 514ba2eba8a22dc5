"""np.median, np.quantile and np.percentile (frontend/quantiles.py) against NumPy exactly:
dtype, shape and every bit, on random shapes (empty and length-1 axes, symbolic and
constant lengths, 0-d arrays) and views with NaN, ±inf and ±0.0 among the data, of
float16, float32, float64, int8, int32 and bool arrays; q a Python number (NumPy's weak q),
a NumPy scalar, a list, a nested list, integer 0 and 1; axis None, an int, a 1-tuple;
keepdims (the sign of a zero where a row holds both zeros is NumPy's partition's accident,
not under test). NumPy's lerp rounds each product (no fused multiply-add), which thousands of
random rows check. An empty row is NaN for the median and NumPy's IndexError for a
quantile; what NumPy refuses, or what cannot be known at compile time, is refused at the
user's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import check_exact, compile_source, gpu_build
from hypothesis import given, settings
from hypothesis import strategies as st
from test_composed_arrays import check_bits
from test_elementwise import view_of

import cuvil_aot as cv
from cuvil_aot.compiler.toolchain import nvcc

SOURCE = '''
import numpy as np
import cuvil_aot as cv

ALL = ["f32[A,B]", "f64[A,B]", "f16[A,B]", "i8[A,B]", "i32[A,B]", "bool_[A,B]"]
NUMBERS = ["f32[A,B]", "f64[A,B]", "f16[A,B]", "i8[A,B]", "i32[A,B]"]

@cv.optimize(signatures=ALL)
def medians(x):
    return (np.median(x), np.median(x, axis=0), np.median(x, axis=-1, keepdims=True),
            np.median(x, keepdims=True), np.median(x, axis=(1,)), np.median(x * 2, 0) + 1)

@cv.optimize(signatures=NUMBERS)
def quantiles(x):
    return (np.quantile(x, 0.5, axis=1), np.quantile(x, [0.1, 0.25, 1.0], axis=0),
            np.quantile(x, np.float32(0.3), axis=-1, keepdims=True), np.quantile(x, 0.75),
            np.quantile(x, 1, axis=1), np.quantile(x, [0, 1], axis=0),
            np.quantile(x, np.float64(0.9), axis=0), np.quantile(x, [[0.5, 0.0]], axis=1,
                                                                  keepdims=True))

@cv.optimize(signatures=NUMBERS)
def percentiles(x):
    return (np.percentile(x, 50, axis=1), np.percentile(x, [10, 90.5], axis=0),
            np.percentile(x, 37.5), np.percentile(x, np.float16(33), axis=-1),
            np.percentile(x, 100.0, axis=0, keepdims=True), np.percentile(x, 0, axis=1))

@cv.optimize(signatures=["f32[5,4]", "f64[1,3]", "i32[2,6]", "f16[3,1]"])
def constant_lengths(x):
    return (np.median(x, axis=0), np.median(x, axis=1), np.quantile(x, [0.2, 0.8], axis=0),
            np.percentile(x, 99, axis=1), np.median(x))

@cv.optimize(signatures=["f32[N]", "f64[N]"])
def long_rows(x):
    return (np.quantile(x, [0.1, 0.3, 0.5, 0.7, 0.9, 0.123, 0.999]), np.median(x),
            np.percentile(x, [12.5, 66.6]), np.quantile(x, 0.42))

@cv.optimize
def of_0d(x: cv.f64[()], i: cv.i32[()]):
    return np.median(x), np.median(i), np.quantile(x, 0.3), np.percentile(i, [20, 70])
'''

REFUSED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def run_time_q(x: cv.f32["N"], q: float):
    return np.quantile(x, q)

@cv.optimize
def array_q(x: cv.f32["N"], q: cv.f32["M"]):
    return np.quantile(x, q)

@cv.optimize
def out_of_range(x: cv.f32["N"]):
    return np.percentile(x, 101)

@cv.optimize
def other_method(x: cv.f32["N"]):
    return np.quantile(x, 0.5, method="nearest")

@cv.optimize
def bogus_method(x: cv.f32["N"]):
    return np.quantile(x, 0.5, method="bogus")

@cv.optimize
def two_axes(x: cv.f32["N", "M"]):
    return np.median(x, axis=(0, 1))

@cv.optimize
def bool_quantile(x: cv.bool_["N"]):
    return np.quantile(x, 0.5)

@cv.optimize
def three_d_q(x: cv.f32["N"]):
    return np.quantile(x, [[[0.5]]])

@cv.optimize
def median_out(x: cv.f32["N"], y: cv.f32[()]):
    return np.median(x, out=y)
'''

DTYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i32": "int32",
          "bool_": "bool"}


@pytest.fixture(scope="module")
def m(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return compile_source(tmp_path_factory.mktemp("quantiles"), SOURCE)


def check_numpy(fn: object, *args: np.ndarray) -> None:
    """check_bits, the sign of a zero included, unless an array holds both +0.0 and -0.0:
    NumPy's partition (introselect) places equal values in an order of its own, so which
    zero a quantile picks is NumPy's accident; there the values and dtypes must match."""
    mixed = any(a.dtype.kind == "f" and (np.signbit(a) & (a == 0)).any()
                and (~np.signbit(a) & (a == 0)).any() for a in args)
    (check_exact if mixed else check_bits)(fn, *args)


def _array(data: st.DataObject, sig: str, sizes: dict[str, int]) -> np.ndarray:
    short, spec = sig.rstrip("]").split("[")
    shape = tuple(int(d) if d.isdigit() else sizes[d] for d in spec.split(",") if d)
    return data.draw(view_of(shape, DTYPES[short]))


sizes = st.integers(0, 5)


@pytest.mark.parametrize("name", ["medians", "quantiles", "percentiles"])
@settings(max_examples=30, deadline=None)
@given(data=st.data(), a=sizes, b=sizes)
def test_against_numpy(m, name: str, data: st.DataObject, a: int, b: int) -> None:
    fn = getattr(m, name)
    for sig in fn.signatures:
        check_numpy(fn, _array(data, sig, {"A": a, "B": b}))


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_constant_lengths(m, data: st.DataObject) -> None:
    for sig in m.constant_lengths.signatures:
        check_numpy(m.constant_lengths, _array(data, sig, {}))


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n=st.integers(0, 40))
def test_long_rows_with_special_values(m, data: st.DataObject, n: int) -> None:
    for sig in m.long_rows.signatures:
        check_numpy(m.long_rows, _array(data, sig.replace("N", "A"), {"A": n}))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lerp_rounds_as_numpy_on_random_rows(m, dtype: type) -> None:
    """Random rows of random lengths: NumPy's a + d * t (b - d * (1 - t) past one half),
    each product rounded; a fused multiply-add would be an ulp off in many of them."""
    r = np.random.default_rng(11)
    for n in list(range(1, 30)) + [97, 256, 1001]:
        for _ in range(20):
            x = (r.standard_normal(n) * 10.0 ** r.integers(-3, 4)).astype(dtype)
            check_bits(m.long_rows, x)
    x = (r.standard_normal((64, 33)) * 100).astype(np.float32)
    for sig_x in (x, x.astype(np.float64), x.astype(np.float16), (x * 1e6).astype(np.int32)):
        check_bits(m.quantiles, sig_x)
        check_bits(m.percentiles, sig_x)
        check_bits(m.medians, sig_x)


@pytest.mark.parametrize("value", [2.5, -0.0, np.nan, np.inf])
def test_0d(m, value: float) -> None:
    check_bits(m.of_0d, np.array(value), np.array(-7, np.int32))


def test_empty_rows(m) -> None:
    """The median of an empty row is NaN (NumPy warns); a quantile raises IndexError."""
    x = np.zeros((0, 3), np.float32)
    with pytest.warns(RuntimeWarning):
        want = np.median(x, axis=0)
    np.testing.assert_array_equal(m.medians(x)[1], want)
    with pytest.raises(IndexError):
        m.quantiles(x)
    with pytest.raises(IndexError):
        m.long_rows(np.zeros(0, np.float64))


def test_refused_at_the_users_line(tmp_path: Path) -> None:
    mod = compile_source(tmp_path, REFUSED)
    x = np.ones(4, np.float32)
    cases = [
        (lambda: mod.run_time_q(x, 0.5), "known at compile time"),
        (lambda: mod.array_q(x, x), "known at compile time"),
        (lambda: mod.out_of_range(x), r"Percentiles must be in the range \[0, 100\]"),
        (lambda: mod.other_method(x), "method='nearest' is not supported"),
        (lambda: mod.bogus_method(x), "'bogus' is not a valid method"),
        (lambda: mod.two_axes(x[None]), "axis must be an int known at compile time or None"),
        (lambda: mod.bool_quantile(x > 0), "numpy boolean subtract"),
        (lambda: mod.three_d_q(x), "q must be a scalar or 1d"),
        (lambda: mod.median_out(x, np.array(0.0, np.float32)), r"out=\.\.\.\) is not"),
    ]
    for call, message in cases:
        with pytest.raises(cv.CompileError, match=message) as e:
            call()
        assert "^" in str(e.value)


GPU_SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[A,B]", "f64[A,B]", "i32[A,B]", "f16[A,B]"])
def gpu_quantiles(x):
    return (np.median(x, axis=-1), np.quantile(x, [0.1, 0.9], axis=0),
            np.percentile(x, 37.5, axis=1, keepdims=True))

@cv.optimize(signatures=["f32[N], f32[A,B]", "f64[N], f64[A,B]"])
def gpu_searches(xp, x):
    xp = np.sort(xp)
    return (np.searchsorted(xp, x), np.searchsorted(xp, x, side="right"), np.digitize(x, xp),
            np.interp(x, xp, xp * 2 + 1))
'''


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")
def test_cuda_kernels_compile(tmp_path: Path) -> None:
    """median/quantile/percentile, searchsorted/digitize and interp compile for the GPU
    (nvcc, no device needed)."""
    gpu_build(tmp_path, GPU_SOURCE)


@pytest.fixture(scope="module")
def gpu_compiled(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from gpu_harness import device_arch

    return compile_source(tmp_path_factory.mktemp("gpu_quantiles"), GPU_SOURCE,
                          cuda_archs=(device_arch(),))


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["cupy", "torch"])
def test_gpu_against_numpy(gpu_compiled, framework: str) -> None:
    from gpu_harness import Framework, check_module

    def sizes(rng: np.random.Generator) -> dict[str, int]:
        return {d: int(rng.choice([1, 3, 33, 300])) for d in ("A", "B", "N")}

    failures = check_module(gpu_compiled, Framework(framework), 11,
                            lambda name, sizes: 1.0, False, sizes)
    assert not failures, "\n".join(failures)
