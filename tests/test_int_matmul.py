"""Integer and boolean matmul against NumPy: the result dtype NumPy picks (int32 @ int32
is int32, uint8 @ int8 is int16, bool @ bool is bool), wrapping where NumPy wraps
(values over the whole range of each dtype), batches broadcast, 1-D operands, empty
inner dimensions; int8 quantized matmul with its dequantization in one kernel, no
(M, N, K) intermediate; the same on the GPU, and the CUDA source compiling."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import check, gpu_build
from hypothesis import given, settings
from hypothesis import strategies as st

from cuvil_aot.compiler.toolchain import nvcc

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["i32[M,K], i32[K,N]", "i64[M,K], i64[K,N]", "i8[M,K], i8[K,N]",
                         "i16[M,K], i16[K,N]", "u8[M,K], u8[K,N]", "u64[M,K], u64[K,N]",
                         "u8[M,K], i8[K,N]", "i8[M,K], i32[K,N]", "bool[M,K], bool[K,N]",
                         "bool[M,K], i16[K,N]", "i8[M,K], f32[K,N]"])
def mm(a, b):
    return a @ b

@cv.optimize(signatures=["i32[B,M,K], i32[K,N]", "i64[B,M,K], i64[B,K,N]",
                         "i8[M,K], i8[B,K,N]", "i32[A,1,M,K], i32[B,K,N]"])
def batched(a, b):
    return np.matmul(a, b)

@cv.optimize(signatures=["i32[K], i32[K,N]", "i64[M,K], i64[K]", "u8[K], u8[K]"])
def vectors(a, b):
    return a @ b

@cv.optimize(signatures=["i32[M,K], i32[J,N]"])
def loose(a, b):
    return a @ b

@cv.optimize(signatures=["i8[M,K], i8[K,N], f32[M,1], f32[1,N]"])
def int8_matmul_dequant(xq, wq, x_scale, w_scale):
    acc = xq.astype(np.int32) @ wq.astype(np.int32)
    return acc.astype(np.float32) * x_scale * w_scale

@cv.optimize(signatures=["i32[M,K], i32[K,N], i32[N]"])
def with_bias(a, b, bias):
    return np.maximum(a @ b + bias, 0), (a @ b).sum(axis=1)
'''

CODES = {"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8",
         "u64": "uint64", "bool": "bool", "f32": "float32"}
SIZES = ("A", "B", "M", "K", "N")


def _values(rng: np.random.Generator, dtype: str, shape: tuple[int, ...],
            full: bool) -> np.ndarray:
    """``full``: over the whole range of the dtype (so products and sums wrap)."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "float32":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = (int(info.min), int(info.max)) if full else (max(int(info.min), -9), 9)
    return rng.integers(lo, hi, shape, dtype=dtype, endpoint=True)


def _args(fn, sig: str, sizes: dict[str, int], seed: int, full: bool,
          view: str) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for kind, spec in re.findall(r"(\w+)\[([^\]]*)\]", sig):
        shape = tuple(int(d) if d.strip().isdigit() else sizes[d.strip()]
                      for d in spec.split(","))
        a = _values(rng, CODES[kind], shape, full)
        if view == "strided" and a.ndim:
            a = np.repeat(a, 2, axis=-1)[..., ::2]
        elif view == "transposed" and a.ndim >= 2:
            a = np.swapaxes(np.swapaxes(a, -1, -2).copy(), -1, -2)
        out.append(a)
    return out


dims = st.integers(0, 6)
views = st.sampled_from(["contiguous", "strided", "transposed"])


@pytest.mark.parametrize("name", ["mm", "batched", "vectors", "int8_matmul_dequant",
                                  "with_bias"])
@settings(max_examples=25, deadline=None)
@given(sizes=st.fixed_dictionaries({d: dims for d in SIZES}), seed=st.integers(0, 2**16),
       full=st.booleans(), view=views)
def test_against_numpy(compiled, name, sizes, seed, full, view):
    fn = getattr(compiled, name)
    for sig in fn.signatures:
        args = _args(fn, sig, sizes, seed, full and "f32" not in sig, view)  # floats: small
        check(fn, *args, scale=max(4.0, sizes["K"]))


@pytest.mark.parametrize(("sig", "dtype"), [
    ("i32[M,K], i32[K,N]", "int32"), ("i8[M,K], i8[K,N]", "int8"),
    ("u8[M,K], i8[K,N]", "int16"), ("bool[M,K], bool[K,N]", "bool"),
    ("u64[M,K], u64[K,N]", "uint64"), ("i8[M,K], f32[K,N]", "float32")])
def test_result_dtype_is_numpy_s(compiled, sig, dtype):
    args = _args(compiled.mm, sig, {"M": 2, "K": 3, "N": 4}, 0, True, "contiguous")
    assert compiled.mm(*args).dtype == np.dtype(dtype) == (args[0] @ args[1]).dtype


def test_int32_wraps_as_numpy():
    """int32 @ int32 wraps at 32 bits: 2**31 - 1 twice is 2**32 - 2, which is -2."""
    a = np.full((1, 2), 2**31 - 1, np.int32)
    b = np.ones((2, 1), np.int32)
    with np.errstate(all="ignore"):
        assert (a @ b)[0, 0] == -2


def test_int32_wraps_compiled(compiled):
    a = np.full((1, 2), 2**31 - 1, np.int32)
    b = np.ones((2, 1), np.int32)
    np.testing.assert_array_equal(compiled.mm(a, b), a @ b)
    a64 = np.full((1, 3), 2**62, np.int64)
    np.testing.assert_array_equal(compiled.mm(a64, np.full((3, 1), 3, np.int64)),
                                  a64 @ np.full((3, 1), 3, np.int64))


def test_dequant_is_one_kernel_without_intermediate(compiled):
    """The quantized matmul and its dequantization are one row kernel over (M, N): no
    (M, N, K) product and no int32 accumulator array in memory."""
    names = list(compiled.__artifact__.manifest["functions"])
    prefix = f"f{names.index('int8_matmul_dequant')}_s0_"
    kernels = re.findall(r"static void (f\d+_s\d+_k\d+)\(",
                         compiled.__artifact__.sources["kernels.c"])
    assert [k for k in kernels if k.startswith(prefix)] == [f"{prefix}k0"]
    run = compiled.__artifact__.sources["module.c"].split(f"{prefix}run(")[1].split("done:")[0]
    assert "cv_buffer(" not in run


def test_inner_dimensions_must_match(compiled):
    a = np.zeros((2, 3), np.int32)
    with pytest.raises(ValueError, match="mismatch in its core dimension 0"):
        a @ np.zeros((4, 2), np.int32)
    with pytest.raises(ValueError, match="mismatch in its core dimension 0"):
        compiled.loose(a, np.zeros((4, 2), np.int32))


# GPU ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_compiled(tmp_path_factory):
    from conftest import compile_source
    from gpu_harness import device_arch

    return compile_source(tmp_path_factory.mktemp("gpu_int_matmul"), SOURCE,
                          cuda_archs=(device_arch(),))


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["cupy", "torch"])
def test_gpu_against_numpy(gpu_compiled, framework):
    from gpu_harness import Framework, run_check

    fw = Framework(framework)
    rng = np.random.default_rng(5)
    failures = []
    for name in sorted(gpu_compiled.__artifact__.manifest["functions"]):
        fn = getattr(gpu_compiled, name)
        for sig in fn.signatures:
            for view in ("contiguous", "strided", "transposed"):
                sizes = {d: int(rng.choice([0, 1, 3, 7, 64])) for d in SIZES}
                sizes["J"] = sizes["K"]  # loose(): J must equal K, as NumPy checks
                args = _args(fn, sig, sizes, int(rng.integers(1 << 16)), "f32" not in sig,
                             "contiguous")
                try:
                    run_check(fn, fw, args, view, max(8.0, sizes["K"]))
                except Exception as exc:  # noqa: BLE001 - every failure is reported at the end
                    failures.append(f"{name}({sig}) {view} {sizes}: {type(exc).__name__}: "
                                    f"{str(exc)[:300]}")
    assert not failures, "\n".join(failures)


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc not found")
def test_cuda_kernels_compile(tmp_path: Path):
    """Every integer matmul compiles for the GPU (nvcc, no device needed)."""
    gpu_build(tmp_path, SOURCE)
