"""The GPU build without a GPU: CUDA lowerings, nvcc for every architecture, the embedded
fatbin, and modules that import and run on the CPU where no CUDA driver exists."""

from __future__ import annotations

import ctypes.util
import struct
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import compile_source, cuda_text, generated_units, gpu_build, host_code, load_source

from cuvil_aot.compiler import pipeline
from cuvil_aot.compiler.codegen import cuda, ops_c, ops_cuda
from cuvil_aot.compiler.ir.group import Kind
from cuvil_aot.compiler.ir.ops import BINARY, ELEMENTWISE, REDUCE, UNARY, Op
from cuvil_aot.compiler.ir.types import DTYPES
from cuvil_aot.compiler.toolchain import nvcc
from cuvil_aot.errors import CudaError
from cuvil_aot.options import DEFAULT_ARCHS, parse_archs
from cuvil_aot.runtime import extension

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NVCC = nvcc.find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not found")
SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[N], f32[N]"])
def axpy(x, y):
    return 2 * x + y
'''


@pytest.fixture(scope="module")
def models():
    sys.path.insert(0, str(EXAMPLES))
    try:
        import models as module
    finally:
        sys.path.remove(str(EXAMPLES))
    return module


def _lowerable_c(op: Op, dtype: str) -> bool:
    arity = 1 if op in UNARY else 2 if op in BINARY else 3
    try:
        ops_c.render(op, dtype, [f"a{i}" for i in range(arity)])
    except ops_c.Unsupported:
        return False
    return True


@pytest.mark.parametrize("op", sorted(ELEMENTWISE - {Op.CAST}, key=lambda o: o.name))
def test_every_op_with_a_c_lowering_has_a_cuda_lowering(op):
    arity = 1 if op in UNARY else 2 if op in BINARY else 3
    args = [f"a{i}" for i in range(arity)]
    for dtype in DTYPES:
        if _lowerable_c(op, dtype):
            assert ops_cuda.render(op, dtype, args)


def test_reductions_and_matmul_have_gpu_kernels():
    assert set(cuda.REDUCE_OP) | {Op.ARGMAX, Op.ARGMIN} == set(REDUCE)
    assert set(cuda.ENTRIES) == set(Kind)


def test_transcendentals_use_cuda_libm_not_cpu_polynomials():
    assert ops_cuda.render(Op.EXP, "float32", ["x"]) == "expf(x)"
    assert ops_cuda.render(Op.TANH, "float64", ["x"]) == "tanh(x)"
    assert ops_cuda.render(Op.ADD, "float16", ["x", "y"]) == ops_c.render(Op.ADD, "float16",
                                                                         ["x", "y"])


LIBM_UNARY = ("tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh",
              "arctanh", "exp2", "log2", "log10", "cbrt")
LIBM_SOURCE = f"""
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[N], f32[N]", "f64[N], f64[N]", "f16[N], f16[N]"])
def libm(x, y):
    return {", ".join(f"np.{fn}(x)" for fn in LIBM_UNARY)}, np.arctan2(x, y), np.hypot(x, y), \
        np.copysign(x, y)
"""


@needs_nvcc
def test_the_c_librarys_functions_compile_for_the_gpu_in_every_float_type(tmp_path):
    """Each LIBM op's CUDA function exists in float and double, and float16 goes through
    float (nvcc compiles them; test_gpu.py checks their values on a device)."""
    assert {op.name.lower() for op in ops_c.LIBM} == {*LIBM_UNARY, "arctan2", "hypot",
                                                     "copysign"}
    (tmp_path / "text").mkdir()
    text = cuda_text(generated_units(tmp_path / "text", LIBM_SOURCE, ("sm_90",)))
    for name in ("tanf(", "acoshf(", "log10(", "atan2f(", "hypot(", "cbrtf("):
        assert name in text, name
    (tmp_path / "build").mkdir()
    gpu_build(tmp_path / "build", LIBM_SOURCE)


def test_cuda_source_is_deterministic_and_one_kernel_per_group(models):
    targets = nvcc.GpuBuild(nvcc.Nvcc("nvcc", "", frozenset()), ("sm_90",)).targets
    first = pipeline.generate_sources(models, pipeline.Options(cpu_levels=(1,)), targets)[3]
    second = pipeline.generate_sources(models, pipeline.Options(cpu_levels=(1,)), targets)[3]
    assert first == second
    cu = cuda_text(first)
    # matmul_relu: one GEMM group, its epilogue in the kernels, no buffer for x @ w
    assert cu.count("struct f0_s0_g0_epi") == 1 and "f0_s0_g1" not in cu
    # its main loops are the unit's, shared by its GEMMs, which pass their tag
    assert '"f0_gemm_f32_tiled", "f0_gemm_f32_tiled64", "f0_gemm_f32_gemv1"' in host_code(first)
    assert "f0_s0_g0_tiled" not in host_code(first) and "case 0: f0_s0_g0_epi{" in cu
    assert "__expf" not in cu


def test_gemv_consumers_reading_aligned_column_runs_may_run_in_its_tiles(models):
    """The LSTM step's gate math may run inside its GEMV's tiles (the host decides per
    call: one.runs); the ResNet head's softmax needs every logit and keeps its barrier."""
    targets = nvcc.GpuBuild(nvcc.Nvcc("nvcc", "", frozenset()), ("sm_90",)).targets
    files = pipeline.generate_sources(models, pipeline.Options(cpu_levels=(1,)), targets)[3]
    cu, host = cuda_text(files), host_code(files)
    assert "struct f1_s0_after1" in cu and "f1_s0_after1{&o.a1, o.runs[0] != 0}" in cu
    assert host.count("one.runs[0] = ") == 1
    assert "_after" not in cu.replace("f1_s0_after1", "").replace("cv_gemv_nothing_after", "")


def test_new_outputs_get_their_python_objects_after_the_launches(models):
    """The framework's wrapping of a new output (~3 us of host time through PyTorch's
    DLPack exchange) runs while the kernels do: api->gpu->wrap comes after the call's
    last launch, api->gpu->empty (allocation only) before its first."""
    targets = nvcc.GpuBuild(nvcc.Nvcc("nvcc", "", frozenset()), ("sm_90",)).targets
    host = host_code(pipeline.generate_sources(models, pipeline.Options(cpu_levels=(1,)),
                                               targets)[3])
    run = host[host.index("static PyObject *f1_s0_grun("):]
    run = run[:run.index("\n}\n")]
    assert run.count("api->gpu->wrap(") == 2  # the LSTM step's h and c
    assert run.index("api->gpu->empty(") < run.index("api->gpu->launch")
    last_launch = max(run.rindex("api->gpu->launch_list("), run.rindex("api->gpu->launch_one("))
    assert last_launch < run.index("api->gpu->wrap(")


def test_archs_spec_and_targets():
    assert parse_archs("sm_90, compute_120") == ("sm_90", "compute_120")
    assert parse_archs("none") == ()
    with pytest.raises(ValueError, match="sm_XY"):
        parse_archs("hopper")
    build = nvcc.GpuBuild(nvcc.Nvcc("nvcc", "", frozenset()), DEFAULT_ARCHS)
    assert build.targets.sass == (75, 80, 86, 89, 90, 100, 120) and build.targets.ptx == 120


def test_without_nvcc_a_build_is_cpu_only_and_says_so_once(monkeypatch):
    monkeypatch.setattr(nvcc, "candidates", lambda home: [])
    monkeypatch.setattr(nvcc, "_warned", set())
    with pytest.warns(RuntimeWarning, match="nvcc not found"):
        assert nvcc.resolve(("sm_90",), "") is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert nvcc.resolve(("sm_90",), "") is None


def _fatbin_archs(data: bytes) -> set[str]:
    """The entries of a fatbin (magic 0xBA55ED50): 'sm_XY' for SASS, 'compute_XY' for PTX."""
    magic, _, header, size = struct.unpack_from("<IHHQ", data, 0)
    assert magic == 0xBA55ED50
    found, pos, end = set(), header, header + size
    while pos < end:
        kind, _, entry_header, padded = struct.unpack_from("<HHII", data, pos)
        arch = struct.unpack_from("<I", data, pos + 28)[0]
        found.add(f"{'compute' if kind == 1 else 'sm'}_{arch}")
        pos += entry_header + padded
    return found


WRAP_HARNESS = r"""
#include "cuvil_aot/gpu_wrap.h"
int fits(int64_t a_rs, int64_t a_cs, int64_t b_rs, int64_t k, int64_t m, int64_t n) {
    const cv_gpu_term t = {0, a_rs, a_cs, 0, 0, b_rs, 1, 0, k};
    return cv_gpu_term_fits32(&t, m, n);
}
int split(int64_t tiles, int64_t depth, int64_t total, int sm) {
    return cv_gpu_split(tiles, depth, total, sm);
}
"""


def _wrap_harness(tmp_path: Path) -> ctypes.CDLL:
    """gpu_wrap.h's host-side choices, compiled with gcc for ctypes."""
    import sysconfig

    src = tmp_path / "wrap.c"
    src.write_text(WRAP_HARNESS)
    lib = tmp_path / "wrap.so"
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", f"-I{ROOT / 'native' / 'include'}",
                    f"-I{sysconfig.get_paths()['include']}", f"-I{np.get_include()}",
                    "-Wno-unused-function", str(src), "-o", str(lib)], check=True)
    return ctypes.CDLL(str(lib))


def test_the_float4_gemv_takes_32_bit_offsets_only_where_they_fit(tmp_path):
    """cv_gpu_term_fits32, the host's check before cv_gemv_vec's 32-bit index math: every
    offset within a batch of A (m x k) and B (k x n) and n itself at most 2^30 - 1 (room
    for a step past the end), with either stride's sign."""
    fits = _wrap_harness(tmp_path).fits
    fits.argtypes = [ctypes.c_int64] * 6
    limit = 2**30 - 1
    assert fits(512, 1, 2048, 512, 1, 2048)  # the LSTM step's terms
    assert fits(0, 1, 4, (limit - 4) // 4 + 1, 1, 4)  # B's reach exactly at the limit
    assert not fits(0, 1, 4, (limit - 4) // 4 + 2, 1, 4)
    assert fits(0, 1, -4, (limit - 4) // 4 + 1, 1, 4)  # negative strides reach as far
    assert not fits(0, 1, -4, (limit - 4) // 4 + 2, 1, 4)
    assert not fits(0, -(2**30), 4, 2, 1, 4)  # A's reach along k
    assert not fits(2**30, 1, 4, 1, 2, 4)  # A's reach along m
    assert fits(2**40, 1, 4, 1, 1, 4)  # one row of A: its row stride never multiplies
    assert not fits(0, 1, 0, 1, 1, limit + 1)  # n itself


def test_split_k_fills_the_sms_with_chunks_of_at_least_128(tmp_path):
    """cv_gpu_split: k-chunks for about two blocks per SM where the tiles are too few,
    each at least 128 deep, at most 16, partial sums at most 2^24 elements."""
    split = _wrap_harness(tmp_path).split
    split.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int]
    assert split(32, 512, 256 * 1000, 132) == 4  # the ResNet head at batch 256: k bounds it
    assert split(32, 4096, 256 * 1000, 132) == 8  # the SMs bound it
    assert split(2, 8192, 4096, 132) == 16  # never more than 16
    assert split(96, 768, 256 * 3072, 132) == 2
    assert split(100, 4096, 4096, 132) == 2
    assert split(133, 4096, 4096, 132) == 1  # two blocks per SM already
    assert split(4, 255, 4096, 132) == 1  # k too shallow for two chunks
    assert split(4, 4096, 2**22, 132) == 4  # partial sums capped at 2^24
    assert split(0, 4096, 0, 132) == 16  # no tiles: never a division by zero


@needs_nvcc
@pytest.mark.slow
def test_gpu_probes_compile_against_the_headers(tmp_path):
    """bench/gpu's probes include cuvil_aot's CUDA headers and a copy of the generated
    source: they must still compile when either changes (one was found broken a session
    after cv_gemv gained an argument)."""
    from concurrent.futures import ThreadPoolExecutor

    probes = sorted((ROOT / "bench" / "gpu").glob("*.cu"))
    assert len(probes) >= 6

    def build(source: Path) -> str:
        out = subprocess.run([NVCC.path, "-O3", "-std=c++17", "-arch=sm_90",
                              f"-I{ROOT / 'native' / 'include'}", "-c", str(source), "-o",
                              str(tmp_path / (source.stem + ".o"))],
                             capture_output=True, text=True)
        return "" if out.returncode == 0 else f"{source.name}:\n{out.stderr[-2000:]}"

    with ThreadPoolExecutor(max_workers=2) as pool:
        failures = [f for f in pool.map(build, probes) if f]
    assert not failures, "\n".join(failures)


@needs_nvcc
@pytest.mark.slow
def test_nvcc_builds_every_default_arch_and_the_fatbin_is_embedded(tmp_path):
    """The examples (every kernel family: elementwise, rows, GEMM and GEMV, one-kernels)
    compile for every default architecture, as a wheel's build does (~1 min)."""
    module = compile_source(tmp_path, (EXAMPLES / "models.py").read_text(),
                            cuda_archs=DEFAULT_ARCHS)
    artifact = module.__artifact__
    fatbins = sorted(artifact.path.parent.glob("f*.fatbin"))
    assert len(fatbins) == len(artifact.manifest["functions"])  # a unit per function
    for fatbin in fatbins:
        data = fatbin.read_bytes()
        assert _fatbin_archs(data) == set(DEFAULT_ARCHS)
        assert data in artifact.path.read_bytes()  # the bytes are in the extension itself
    assert artifact.manifest["cuda"]["archs"] == list(DEFAULT_ARCHS)


@needs_nvcc
def test_examples_compile_for_the_gpu(models, tmp_path):
    artifact = pipeline.build(models, pipeline.Options(cuda_archs=("sm_90",)), out_dir=tmp_path)
    for fatbin in tmp_path.glob("f*.fatbin"):
        assert _fatbin_archs(fatbin.read_bytes()) == {"sm_90"}
    ext = extension.load(artifact.ext_name, artifact.path)
    x, w, b = np.ones((3, 128), np.float32), np.ones((128, 64), np.float32), np.ones(64, np.float32)
    np.testing.assert_array_equal(ext.matmul_relu(x, w, b), np.full((3, 64), 129, np.float32))


MIXED = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(signatures=["f32[B,N], f32[N,M]", "f64[B,N], f64[N,M]"])
def ends_with_a_gemm(x, w):
    return np.tanh(x) @ w

@cv.optimize(signatures=["f32[B,N], f32[N,M], f32[M,K]"])
def two_gemms(x, w, v):
    return (x @ w) @ v * 2
'''


@needs_nvcc
@pytest.mark.parametrize("source", ["mixed", "transformers"])
def test_shared_gemm_main_loops_compile(tmp_path, source):
    """Units whose GEMMs share their main loops compile for the GPU: float32 and float64
    GEMMs in one unit (two shared sets), a one-kernel whose last phase is a GEMV, and the
    transformer layers of bench/ (nvcc, no device)."""
    text = MIXED if source == "mixed" else (ROOT / "bench" / "transformer_models.py").read_text()
    module = load_source(tmp_path, text)
    artifact = pipeline.build(module, pipeline.Options(cuda_archs=("sm_90",)), out_dir=tmp_path)
    assert artifact.manifest["refused"] == {}
    if source == "mixed":
        cu = cuda_text(artifact.sources)
        assert "f0_gemm_f32_tc64(" in cu and "f0_gemm_f64_tiled(" in cu
        assert "f0_gemm_f64_tc64(" not in cu  # tensor cores: float32 only
        # the one-kernel's last phase, a GEMV through the main loop its phases share
        assert "case 1: on = 1; t = o.a1.t; nt = 1; m = o.a1.n[0]; n = o.a1.n[1];" in cu
        assert "cv_gemv<float, 1>(t, nt, m, n, nb, cols, vec, f0_s0_one_epi_float{&o, g})" in cu


class FakeDeviceArray:
    """Looks like a CuPy array to the wrapper; no driver may ever dereference it."""

    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (4096, False),
                                "version": 3}


@pytest.mark.skipif(ctypes.util.find_library("cuda") is not None, reason="a CUDA driver exists")
@needs_nvcc
def test_without_a_driver_modules_import_cpu_runs_gpu_raises(tmp_path):
    module = compile_source(tmp_path, SOURCE, cuda_archs=("sm_90",))
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(module.axpy(x, x), 3 * x)
    with pytest.raises(CudaError, match="no usable CUDA driver"):
        module.axpy(FakeDeviceArray(), FakeDeviceArray())
    with pytest.raises(TypeError, match="stream= is for calls with device arrays"):
        module.axpy(x, x, stream=0)


def test_cpu_only_module_rejects_device_arrays_clearly(tmp_path):
    module = compile_source(tmp_path, SOURCE, cuda_archs=())
    assert not cuda_text(module.__artifact__.sources)
    with pytest.raises(CudaError, match="built without CUDA kernels|no usable CUDA driver"):
        module.axpy(FakeDeviceArray(), FakeDeviceArray())


EPILOGUE_LOADS = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def residual(x: cv.f32["M", 64], w: cv.f32[64, 64], r: cv.f32["M", 64]):
    return x @ w.T + r

@cv.optimize
def small_chain(x: cv.f32[4, 64], w: cv.f32[64, 64], v: cv.f32[64, 64]):
    return np.tanh(x @ w.T) @ v.T
'''


def _epilogue(text: str, name: str) -> str:
    start = text.index(f"struct {name}_epi_t")
    return text[start:text.index("};", start)]


def test_gemm_epilogues_read_through_the_read_only_path_where_safe(tmp_path):
    """A GEMM epilogue loads what its kernel does not write through cv_ld<RO> (ld.global.nc:
    ptxas may then issue a band's loads before its stores); a one-kernel's phases run it
    with RO false (an earlier phase of the launch may have written what they read)."""
    units = generated_units(tmp_path, EPILOGUE_LOADS, ("sm_90a",))
    text = cuda_text(units)
    residual = _epilogue(text, "f0_s0_g0")
    assert residual.count("cv_ld<RO>(&p") == 1 and "using f0_s0_g0_epi = f0_s0_g0_epi_t<true>;" \
        in text
    assert "_epi_t<false>{&o->a" in units["kernels_f1.cu"]  # the one-kernel's switch
