"""The Hopper GEMM's place in the generated code, without a GPU (cuda_wgmma.py): which
units get the ``_wg`` entry and which kind (3xTF32, or one TF32 product under the tf32
policy), that such a unit compiles to sm_90a machine code with wgmma and TMA in it (and to
sm_80 where the entry only traps), that the host code compiles, and the host's split-K
choice (gpu_wrap.h's cv_gpu_wg_split)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import cuda_text, generated_units, gpu_build, host_code

from cuvil_aot.compiler.codegen import cuda_wgmma
from cuvil_aot.compiler.gpu_targets import GpuTargets, sass_code
from cuvil_aot.compiler.toolchain import nvcc

ROOT = Path(__file__).resolve().parent.parent
NVCC = nvcc.find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not found")

SOURCE = '''
import numpy as np
import cuvil_aot as cv

@cv.optimize
def linear(x: cv.f32["M", "K"], w: cv.f32["N", "K"], b: cv.f32["N"]):
    return np.maximum(x @ w.T + b, 0)

@cv.optimize(precision="tf32")
def linear_tf32(x: cv.f32["M", "K"], w: cv.f32["N", "K"]):
    return x @ w.T

@cv.optimize
def linear64(x: cv.f64["M", "K"], w: cv.f64["N", "K"]):
    return x @ w.T

@cv.optimize
def scale(x: cv.f32["N"]):
    return x * 2

@cv.optimize
def linear_kn(x: cv.f32["M", "K"], w: cv.f32["K", "N"]):
    return x @ w

@cv.optimize
def heads(q: cv.f32["B", "T", "D"], k: cv.f32["B", "T", "D"]):
    qh = q.reshape(q.shape[0], q.shape[1], 4, -1).transpose(0, 2, 1, 3)
    kh = k.reshape(k.shape[0], k.shape[1], 4, -1).transpose(0, 2, 1, 3)
    return np.matmul(qh, kh.transpose(0, 1, 3, 2))
'''


def _units(tmp_path: Path, archs: tuple[str, ...]) -> dict[str, str]:
    return generated_units(tmp_path, SOURCE, archs)


def test_float32_units_get_the_wgmma_entry_of_their_kind(tmp_path):
    units = _units(tmp_path, ("sm_90",))
    fp32, tf32, fp64, scale, kn, heads = (units[f"kernels_f{i}.cu"] for i in range(6))
    assert "cv_gemm_wgmma_job<CV_WG_TF32X3, 128, 3>" in fp32  # float32 accuracy: 3xTF32
    assert "cv_gemm_wgmma_job<CV_WG_TF32, 256, 4>" in tf32  # TF32 numbers: one product
    assert "cv_gemm_wgmma_job<CV_WG_TF32X3, 128, 3>" in heads  # q @ k^T on head views
    # B n-contiguous as stored (x @ w of an (in, out) weight): over a K-major copy
    assert "cv_gemm_wgmma_job<CV_WG_TF32X3, 128, 3>" in kn and "cuda_transpose.h" in kn
    # no float32 GEMM: no header, no entry (nvcc's time)
    for text in (fp64, scale):
        assert "cuda_gemm_wgmma.h" not in text and "_wg(" not in text
    host = host_code(units)
    assert '"f0_gemm_f32_wg"' in host and '"f1_gemm_f32_wg"' in host
    # then split-K in clusters (cv_gemm_tc_cluster), then the unit's one copy kernel
    assert '"f4_gemm_f32_wg", "f4_gemm_f32_tcc", "cv_transpose_f32"' in host
    # 3xTF32 may read an N-major B as it is (wgl & 8), before any copy; one TF32 product
    # (the tf32 unit) only over copies
    assert host.count("(wgl & 8) && cv_gpu_wg_maps_nmajor(") == 3  # linear, kn, heads
    assert "api->gpu->wgmma(&cv_gpu_f0, dev)" in host and "cv_gpu_wg_maps(" in host
    assert "f2_gemm_f64_wg" not in host
    # without SASS for sm_90 (PTX only, or other GPUs) no unit has it
    for archs in (("sm_80",), ("sm_80", "compute_90")):
        folder = tmp_path / "_".join(archs)
        folder.mkdir()
        assert "_wg" not in cuda_text(_units(folder, archs))


def test_sm_90_sass_is_built_as_sm_90a_and_ptx_stays_generic():
    assert sass_code("sm_90") == "sm_90a" and sass_code("sm_80") == "sm_80"
    build = nvcc.GpuBuild(nvcc.Nvcc("nvcc", "", frozenset()), ("sm_90", "compute_90"))
    sass, ptx = (nvcc.Image("f0", arch, "") for arch in ("sm_90", "compute_90"))
    assert "-gencode=arch=compute_90a,code=sm_90a" in build.command(sass, Path("a"), Path("b"))
    assert "-arch=compute_90" in build.command(ptx, Path("a"), Path("b"))
    assert build.targets == GpuTargets((90,), 90)  # what the runtime compares with the device


@needs_nvcc
@pytest.mark.parametrize("archs", [("sm_90",), ("sm_80",)])
def test_the_unit_compiles_with_wgmma_only_for_sm_90a(tmp_path, archs):
    assert NVCC is not None
    text = _units(tmp_path, ("sm_90",))["kernels_f0.cu"]  # an sm_80 + sm_90 build's unit
    src = tmp_path / "unit.cu"
    src.write_text(text)
    code = sass_code(archs[0])
    out = tmp_path / "unit.cubin"
    subprocess.run([NVCC.path, "-cubin", f"-gencode=arch=compute_{code[3:]},code={code}",
                    *nvcc.NVCC_FLAGS, f"-I{ROOT / 'native' / 'include'}", str(src), "-o",
                    str(out)], check=True, capture_output=True, text=True)
    dump = shutil.which("cuobjdump", path=str(Path(NVCC.path).parent)) or shutil.which("cuobjdump")
    if dump is None:
        return
    sass = subprocess.run([dump, "-sass", "-fun", "f0_gemm_f32_wg", str(out)], check=True,
                          capture_output=True, text=True).stdout
    if code == "sm_90a":
        assert "HGMMA.64x128x8.F32.TF32" in sass and "UTMALDG.3D" in sass
    else:
        assert "HGMMA" not in sass and "TRAP" in sass


@needs_nvcc
@pytest.mark.slow
def test_a_wgmma_module_builds_and_runs_on_the_cpu(tmp_path):
    """nvcc, fatbinary (an sm_90a image) and the host wrapper all build; NumPy arrays still
    run on the CPU."""
    import numpy as np

    artifact = gpu_build(tmp_path, SOURCE)
    from cuvil_aot.runtime import extension

    ext = extension.load(artifact.ext_name, artifact.path)
    x, w, b = (np.ones(s, np.float32) for s in ((3, 8), (4, 8), (4,)))
    np.testing.assert_array_equal(ext.linear(x, w, b), np.full((3, 4), 9, np.float32))


SPLIT = r"""
#include "cuvil_aot/gpu_wrap.h"
int wg_split(int64_t m, int64_t n, int64_t nb, int64_t depth, int sm, int bn, int x3, int tail,
             int64_t *row0) {
    return cv_gpu_wg_split(m, n, nb, depth, sm, bn, x3, tail, row0);
}
int wg_bn(int64_t m, int64_t n, int64_t nb, int sm) { return cv_gpu_wg_bn(m, n, nb, sm, 192, 256); }
"""


def _host_model(tmp_path):
    import sysconfig

    import numpy as np

    src, lib = tmp_path / "split.c", tmp_path / "split.so"
    src.write_text(SPLIT)
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", f"-I{ROOT / 'native' / 'include'}",
                    f"-I{sysconfig.get_paths()['include']}", f"-I{np.get_include()}",
                    "-Wno-unused-function", str(src), "-o", str(lib)], check=True)
    return ctypes.CDLL(str(lib))


def _wg_split(tmp_path):
    """cv_gpu_wg_split as (split, row0) of (m, n, nb, depth, sm, bn, x3, tail)."""
    split = _host_model(tmp_path).wg_split
    split.argtypes = [ctypes.c_int64] * 4 + [ctypes.c_int] * 4 + [ctypes.c_void_p]
    row0 = ctypes.c_int64(-1)

    def choose(*args):
        s = split(*args, ctypes.byref(row0))
        return s, row0.value
    return choose


def test_few_tiles_split_k_of_the_wgmma_loop(tmp_path):
    """A persistent grid of a block per SM: split where whole rounds of chunks beat the
    whole rounds of tiles, the partial sums' traffic counted."""
    split = _wg_split(tmp_path)
    assert split(1024, 768, 1, 768, 132, 128, 1, 0) == (2, 0)  # BERT-base 1024 x 768 x 768
    assert split(1024, 768, 1, 3072, 132, 128, 1, 0) == (5, 0)  # 1024 x 768 x 3072
    assert split(1024, 768, 1, 768, 132, 256, 0, 0) == (1, 0)  # one TF32 product: sums cost
    assert split(2048, 768, 1, 3072, 132, 256, 0, 0)[0] > 1  # ... more than 24 tiles of k 768
    assert split(1024, 3072, 1, 768, 132, 128, 1, 0) == (1, 0)  # a second round of 60 tiles
    assert split(4096, 768, 1, 768, 132, 128, 1, 0) == (1, 0)  # ... the sums cost it again
    assert split(4096, 768, 1, 3072, 132, 128, 1, 0) == (2, 0)  # ... not at k = 3072
    assert split(4096, 3072, 1, 768, 132, 128, 1, 0) == (1, 0)  # 5.8 rounds: nearly full
    assert split(1024, 768, 1, 255, 132, 128, 1, 0) == (1, 0)  # too shallow for two chunks
    # 128 rows (18 to 24 tiles): chunks of 128 deep, where those of 256 made 54 to 72 items
    assert split(128, 2304, 1, 768, 132, 128, 1, 1) == (6, 0)
    assert split(128, 3072, 1, 768, 132, 128, 1, 1) == (5, 0)
    assert split(128, 768, 1, 3072, 132, 128, 1, 1) == (16, 0)
    s, _ = split(8192, 256, 1, 1 << 16, 1024, 256, 1, 0)  # 64 tiles, 2^21 sums a chunk
    assert 1 < s <= 8  # on 1024 SMs: the partial sums capped at 2^24
    assert split(0, 4096, 1, 4096, 132, 128, 1, 0) == (1, 0)


def test_the_tail_alone_splits_where_allowed(tmp_path):
    """With the tail split allowed: the rows of tiles that fill whole rounds stay whole,
    the last round's tiles come in chunks (row0: the first split row, a multiple of 128)."""
    split = _wg_split(tmp_path)
    assert split(1024, 2304, 1, 768, 132, 128, 1, 1) == (6, 896)  # GPT-2 QKV: 126 + 18 x 6
    assert split(1024, 3072, 1, 768, 132, 128, 1, 1) == (2, 640)  # 192 tiles: 120 + 72 x 2
    assert split(4096, 768, 1, 768, 132, 128, 1, 1) == (2, 2816)  # 192 tiles: 132 + 60 x 2
    assert split(1024, 768, 1, 768, 132, 128, 1, 1) == (2, 0)  # 48 tiles: all split, as before
    assert split(8, 768, 128, 768, 132, 128, 1, 1)[1] == 0  # batches: all or none
    assert split(4096, 3072, 1, 768, 132, 128, 1, 1)[1] in (0, 4096 - 128 * (4096 // 128))


BF16_SOURCE = '''
import ml_dtypes
import cuvil_aot as cv

@cv.optimize
def mm(x: cv.bf16["M", "K"], w: cv.bf16["N", "K"]):
    return (x @ w.T).astype(ml_dtypes.bfloat16)
'''


def test_bf16_tile_width_fills_the_sms_soonest(tmp_path):
    """192-wide tiles where rounds x width is less than with 256-wide ones."""
    bn = _host_model(tmp_path).wg_bn
    bn.argtypes = [ctypes.c_int64] * 3 + [ctypes.c_int]
    assert bn(4096, 768, 1, 132) == 192  # BERT-base's projections: 128 tiles against 96
    assert bn(128, 768, 32, 132) == 192  # the same, 32 batches of 128 rows
    assert bn(4096, 2304, 1, 132) == 192  # GPT-2's QKV: 3 rounds of 192 against 3 of 256
    assert bn(4096, 3072, 1, 132) == 256  # 4 rounds of 192, 3 of 256: a tie keeps 256
    assert bn(4096, 4096, 1, 132) == 256  # 6 rounds of 192 against 4 of 256
    assert bn(128, 768, 1, 132) == 192  # one round either way: the narrower
    assert bn(0, 768, 1, 132) == 256  # nothing to tile


def test_bf16_units_get_both_tile_widths(tmp_path):
    """A unit with a bfloat16 GEMM built for sm_90a has _wg and _wg192, the launch picking
    the second where cv_gpu_wg_bn says 192 (its kernel id the next)."""
    units = generated_units(tmp_path, BF16_SOURCE, ("sm_90a",))
    kernels = units["kernels_f0.cu"]
    assert "cv_gemm_wgmma_job<CV_WG_BF16, 256, 4>(" in kernels
    assert "cv_gemm_wgmma_job<CV_WG_BF16, 192, 4>(" in kernels
    host = host_code(units)
    assert '"f0_gemm_b16_wg", "f0_gemm_b16_wg192"' in host
    assert "const int bn = cv_gpu_wg_bn(m, n, nb, sm, 192, 256);" in host
    assert f"wsmem = bn == 192 ? {cuda_wgmma.BF16_192.smem} : {cuda_wgmma.BF16.smem};" in host


def test_wg_config_matches_the_header():
    """The host's shared memory size is the header's (the entry static_asserts it)."""
    assert cuda_wgmma.X3.smem == cuda_wgmma.ONE.smem == 214528
