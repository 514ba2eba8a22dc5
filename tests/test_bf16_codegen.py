"""bfloat16 on the GPU, without a GPU: which main loops a unit gets (the bf16 wgmma kind on
sm_90 where both operands may be K-major, the SIMT tiles on bfloat16 elsewhere), that the
units compile with nvcc for sm_80 and sm_90a (wgmma on bfloat16 in the latter's machine
code) and that the host code compiles. tests/test_gpu_bf16.py runs them on a GPU."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import compile_source, generated_units, gpu_build, host_code

from cuvil_aot.compiler.codegen import cuda_wgmma
from cuvil_aot.compiler.gpu_targets import sass_code
from cuvil_aot.compiler.toolchain import nvcc

pytest.importorskip("ml_dtypes")

ROOT = Path(__file__).resolve().parent.parent
NVCC = nvcc.find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not found")

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize(precision="bf16")
def linear(x: cv.f32["M", "K"], w: cv.f32["N", "K"], b: cv.f32["N"]):
    return np.maximum(x @ w.T + b, 0)

@cv.optimize(precision="bf16")
def linear_kn(x: cv.f32["M", "K"], w: cv.f32["K", "N"]):
    return x @ w

@cv.optimize
def arrays(x: cv.bf16["B", "M", "K"], w: cv.bf16["N", "K"]):
    return x @ w.T

@cv.optimize
def rows(x: cv.bf16["M", "K"], g: cv.f32["K"]):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype), x * g, x.sum(), \\
        np.sort(x, axis=-1), np.cumsum(x, axis=-1), np.argsort(x, axis=-1)

@cv.optimize
def misc(x: cv.bf16["N", "K"], y: cv.bf16["N", "K"], ids: cv.i64["M"]):
    z = x.copy()
    z[ids] = y[ids] * 2
    return x[ids], np.where(x > y, x, y), x.T + 1, z, np.concatenate([x, y])

@cv.optimize(precision="bf16")
def small(x: cv.f32["M", "K"], w: cv.f32["N", "K"]):
    return np.tanh(x @ w.T)

@cv.optimize(precision="bf16")
def attend(q: cv.f32["B", "T", "D"], k: cv.f32["B", "T", "D"], v: cv.f32["B", "T", "D"]):
    b, t = q.shape[0], q.shape[1]
    qh = q.reshape(b, t, 4, -1).transpose(0, 2, 1, 3)
    kh = k.reshape(b, t, 4, -1).transpose(0, 2, 1, 3)
    vh = v.reshape(b, t, 4, -1).transpose(0, 2, 1, 3)
    return np.matmul(np.matmul(qh, kh.transpose(0, 1, 3, 2)) * 0.125, vh)
'''


def _units(tmp_path: Path, archs: tuple[str, ...]) -> dict[str, str]:
    return generated_units(tmp_path, SOURCE, archs)


def test_bf16_gemms_get_the_bf16_wgmma_kind_where_b_may_be_k_major(tmp_path):
    units = _units(tmp_path, ("sm_90",))
    linear, kn, arrays, rows, _, small = (units[f"kernels_f{i}.cu"] for i in range(6))
    bf16 = f"cv_gemm_wgmma_job<CV_WG_BF16, {cuda_wgmma.BF16.bn}, {cuda_wgmma.BF16.stages}>"
    for text in (linear, arrays, small):  # x @ w.T: w rounded as stored, K-major
        assert bf16 in text and "cv_gemm_tiled<float, 128, cv_bf16>(" in text
        assert "CV_WG_TF32" not in text  # no float32 GEMM in these units
    assert "cv_bf16_round(" in linear  # the policy's rounding pass
    # x @ w of an (in, out) weight: B n-contiguous, the SIMT tiles on bfloat16 only
    assert "cv_gemm_tiled<float, 64, cv_bf16>(" in kn and "_wg(" not in kn
    assert "_gemm_" not in rows and "cv_bf16" in rows
    host = host_code(units)
    assert '"f0_gemm_b16_wg"' in host and "cv_gpu_wg_maps_bf16(" in host
    assert "CV_DT_BFLOAT16" in host and "cv_gpu_refused(" not in host
    # neither GEMV nor mma.sync entries read bfloat16: a bf16 GEMM never runs them
    assert "f0_gemm_b16_gemv" not in host and "f0_gemm_b16_tc64" not in host


def test_attention_heads_are_copied_k_major_for_both_gemms(tmp_path):
    """Under the bf16 policy, V's heads (P @ V's B, n-contiguous as split) are copied
    transposed (canonicalize._k_major_heads), so both of attention's GEMMs may run wgmma."""
    units = _units(tmp_path, ("sm_90",))
    host = host_code(units)
    f6 = host[host.index("f6_s0"):]  # the attention function's wrapper
    assert f6.count("wgl && cv_gpu_wg_maps_bf16(") >= 2
    module = compile_source(tmp_path, SOURCE)  # on the CPU: the copies' layout is right
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, 33, 24)).astype(np.float32) for _ in range(3))
    got = module.attend(q, k, v)
    want = module.attend.py_func(*(a.astype(np.float64) for a in (q, k, v)))
    split = [a.astype(np.float64).reshape(2, 33, 4, 6).transpose(0, 2, 1, 3) for a in (q, k, v)]
    spread = np.abs(split[0]) @ np.abs(split[1]).transpose(0, 1, 3, 2) * 0.125 @ np.abs(split[2])
    np.testing.assert_array_less(np.abs(got - want), 5 * 2.0 ** -8 * spread + 1e-6)


def test_without_sm_90_bf16_gemms_run_the_tiles(tmp_path):
    units = _units(tmp_path, ("sm_80",))
    assert "CV_WG_BF16" not in "".join(units.values())
    assert "cv_gemm_tiled<float, 128, cv_bf16>(" in units["kernels_f0.cu"]


def test_bf16_config_matches_the_header():
    """The host's shared memory size is the header's (the entry static_asserts it)."""
    assert cuda_wgmma.BF16.smem == 214528 and not cuda_wgmma.BF16.x3


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_the_units_compile(tmp_path, arch):
    """Every unit of an sm_80 + sm_90 build compiles for both (the sm_80 image of a _wg
    entry only traps); on sm_90a the bf16 entry runs wgmma on bfloat16 fed by TMA."""
    assert NVCC is not None
    units = _units(tmp_path, ("sm_90",))
    code = sass_code(arch)
    dump = shutil.which("cuobjdump", path=str(Path(NVCC.path).parent)) or shutil.which("cuobjdump")
    for name in sorted(units):
        if not name.endswith(".cu"):
            continue
        src, out = tmp_path / name, tmp_path / f"{name}.cubin"
        src.write_text(units[name])
        subprocess.run([NVCC.path, "-cubin", f"-gencode=arch=compute_{code[3:]},code={code}",
                        *nvcc.NVCC_FLAGS, f"-I{ROOT / 'native' / 'include'}", str(src), "-o",
                        str(out)], check=True, capture_output=True, text=True)
        if name == "kernels_f0.cu" and dump is not None:
            sass = subprocess.run([dump, "-sass", "-fun", "f0_gemm_b16_wg", str(out)],
                                  check=True, capture_output=True, text=True).stdout
            if code == "sm_90a":
                assert "HGMMA.64x256x16.F32.BF16" in sass and "UTMALDG.3D" in sass
            else:
                assert "HGMMA" not in sass and "TRAP" in sass


@needs_nvcc
@pytest.mark.slow
def test_a_bf16_module_builds_and_runs_on_the_cpu(tmp_path):
    """nvcc, fatbinary and the host wrapper (bfloat16 device arrays, the bf16 maps) all
    build; NumPy arrays still run on the CPU."""
    import ml_dtypes

    artifact = gpu_build(tmp_path, SOURCE)
    from cuvil_aot.runtime import extension

    ext = extension.load(artifact.ext_name, artifact.path)
    x, w, b = (np.ones(s, np.float32) for s in ((3, 8), (4, 8), (4,)))
    np.testing.assert_array_equal(ext.linear(x, w, b), np.full((3, 4), 9, np.float32))
    bf = ml_dtypes.bfloat16
    got = ext.arrays(np.ones((2, 3, 8), bf), np.ones((4, 8), bf))
    np.testing.assert_array_equal(got, np.full((2, 3, 4), 8, np.float32))
