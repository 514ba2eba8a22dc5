"""A batched GEMM folded into one of nb·m rows (codegen/batch_fold.py) without a GPU: a module
built with sm_90 code runs against the fake libcuda.so.1 (tests/data/fake_libcuda.c), which
logs each kernel with its grid. x (3, 50, 252) @ w.T on the wgmma loop has 3 × 1 × 2 tiles
as batches, 2 × 2 folded (150 rows): the grid says which ran (k = 252, under two of the
split's chunks of at least 128: no split-K moves the grids). Above 32 rows a batch it folds
only with the tail split allowed (CUVIL_AOT_CUDA_WG_TAIL); up to 16 rows in all (a decode
step of 4 sequences, (4, 1, 256) @ w.T) where the dot GEMV runs, its grid one batch high,
and for the GEMV of 8-row tiles of an (in, out) weight (x @ w) where its rows hold whole
float4s (else batches of one row, grid 4 high); both where the batches step as rows in A,
the output and the residual, and B is shared; a kernel whose epilogue reads an operand by
batch but not by row never gets the check. Whether the folded GEMM computes the same values
is tests/test_gpu_wgmma.py's and tests/test_gpu_dot_gemv.py's on a device."""

from __future__ import annotations

import shutil

import fake_driver
import pytest

CHILD = r'''
import ctypes
from pathlib import Path
from conftest import compile_source, generated_units, host_code
from fake_driver import DeviceArray, Record
from cuvil_aot.runtime import native

SOURCE = """
import numpy as np
import cuvil_aot as cv

@cv.optimize
def linear(x: cv.f32["B", "T", "K"], w: cv.f32["N", "K"], b: cv.f32["N"],
           r: cv.f32["B", "T", "N"]):
    return x @ w.T + b + r

@cv.optimize
def bmm(x: cv.f32["B", "T", "K"], w: cv.f32["B", "N", "K"]):
    return np.matmul(x, w.transpose(0, 2, 1))

@cv.optimize
def per_batch(x: cv.f32["B", "T", "K"], w: cv.f32["N", "K"], c: cv.f32["B", "N"]):
    return x @ w.T + c[:, None, :]

@cv.optimize
def conv1d(x: cv.f32["B", "T", "K"], w: cv.f32["K", "N"], b: cv.f32["N"]):
    return x @ w + b
"""

fake = ctypes.CDLL("libcuda.so.1")  # the runtime's own handle: the same file
fake.fake_kernel_name.restype = ctypes.c_char_p
buf = (Record * 4096)()

def wg_grids(fn, out, *shapes, strides=None):
    """The grids of the wgmma launches of fn(arrays of `shapes`, out=array of `out`)."""
    args = [DeviceArray(0, *s) for s in shapes]
    if strides is not None:
        args[strides[0]].interface["strides"] = strides[1]
    fn(*args, out=DeviceArray(0, *out))
    n = fake.fake_take(buf, 4096)
    return [r.grid_x for r in buf[:n] if fake.fake_kernel_name(r.kernel).endswith(b"_wg")]

def launches(fn, out, *shapes, strides=None):
    """(entry point, grid y) of each kernel fn(arrays of `shapes`, out=array of `out`) ran."""
    args = [DeviceArray(0, *s) for s in shapes]
    if strides is not None:
        args[strides[0]].interface["strides"] = strides[1]
    fn(*args, out=DeviceArray(0, *out))
    n = fake.fake_take(buf, 4096)
    return [(fake.fake_kernel_name(r.kernel).decode(), r.grid_y) for r in buf[:n]]

ctypes.c_int.in_dll(fake, "fake_pools").value = 1
m = compile_source(Path(WORK), SOURCE, cuda_archs=("sm_90",))
lin = [(3, 50, 252), (256, 252), (256,), (3, 50, 256)]
native.configure(cuda_wg_tail=False)
assert wg_grids(m.linear, (3, 50, 256), *lin) == [6]  # tail split off: batches as they are
native.configure(cuda_wg_tail=True)
assert wg_grids(m.linear, (3, 50, 256), *lin) == [4]  # 150 rows: 2 x 2 tiles
# the residual's batches 2 x 50 rows apart: not rows of one GEMM
assert wg_grids(m.linear, (3, 50, 256), *lin, strides=(3, (2 * 50 * 256 * 4, 256 * 4, 4))) == [6]
# 32 rows a batch or fewer: the GEMV choices stay (no wgmma either way)
assert wg_grids(m.linear, (8, 20, 256), (8, 20, 256), (256, 256), (256,), (8, 20, 256)) == []
assert wg_grids(m.bmm, (3, 50, 256), (3, 50, 252), (3, 256, 252)) == [6]  # B per batch
assert wg_grids(m.per_batch, (3, 50, 256), (3, 50, 252), (256, 252), (3, 256)) == [6]
# 16 rows or fewer in all (a decode step of 4 sequences): one dot GEMV reads w once
dec = [(4, 1, 256), (512, 256), (512,), (4, 1, 512)]
assert launches(m.linear, (4, 1, 512), *dec) == [("f0_gemm_f32_dotw", 1)]
# the residual's batches 2 rows apart: each batch's blocks read w again
assert launches(m.linear, (4, 1, 512), *dec, strides=(3, (2 * 512 * 4, 512 * 4, 4))) == [
    ("f0_gemm_f32_dotw", 4)]
# 5 x 4 rows: more than the dot GEMV's 16, batches as they are
assert launches(m.linear, (5, 4, 512), (5, 4, 256), *dec[1:3], (5, 4, 512))[0][1] == 5
# an (in, out) weight's GEMV: one GEMV of 8-row tiles reads w once for the 4 rows
assert launches(m.conv1d, (4, 1, 512), (4, 1, 256), (256, 512), (512,)) == [
    ("f3_gemm_f32_gemv8", 1)]
# ... where its rows hold whole float4s; else batches of one row as they were
assert launches(m.conv1d, (4, 1, 510), (4, 1, 256), (256, 510), (510,)) == [
    ("f3_gemm_f32_gemv1", 4)]
# 2 to 32 rows of one batch: the 8-row tiles too
assert launches(m.conv1d, (1, 20, 512), (1, 20, 256), (256, 512), (512,)) == [
    ("f3_gemm_f32_gemv8", 1)]
(Path(WORK) / "units").mkdir()
host = host_code(generated_units(Path(WORK) / "units", SOURCE, ("sm_90",)))
assert host.count("(m > 32 && (api->gpu->wgmma(&cv_gpu_f0, dev) & 4))") == 1
assert host.count("(m > 32 && (api->gpu->wgmma(&cv_gpu_f1, dev) & 4))") == 1
assert "(api->gpu->wgmma(&cv_gpu_f2, dev) & 4)" not in host  # c by batch only
print("ok")
'''


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("nvcc") is None,
                    reason="needs a C compiler and nvcc (the module's sm_90 code)")
def test_batches_fold_where_they_step_as_rows(tmp_path):
    child = f"WORK = {str(tmp_path)!r}\n" + CHILD
    proc = fake_driver.run_child(tmp_path, child, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert proc.stdout.startswith("ok"), proc.stdout
