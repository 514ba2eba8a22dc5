"""Which way an N-major B (``x @ w`` of an (in, out) weight) reaches the wgmma loop, without
a GPU: a module built with sm_90 code runs against the fake libcuda.so.1
(tests/data/fake_libcuda.c), which logs each kernel by name. With CUVIL_AOT_CUDA_WG_NMAJOR
the 3xTF32 loop reads the weight as it is (no cv_transpose_f32 launch); without, and
wherever the weight cannot be mapped as it is (rows of n % 4 != 0 floats), it is copied
first; the tf32 policy's one-product loop does not split, so it always copies. What the
kernel computes is tests/test_gpu_wgmma_copies.py's on a device."""

from __future__ import annotations

import shutil

import fake_driver
import pytest

CHILD = r'''
import ctypes
from pathlib import Path
from conftest import compile_source
from fake_driver import DeviceArray, Record
from cuvil_aot.runtime import native

SOURCE = """
import numpy as np
import cuvil_aot as cv

@cv.optimize
def proj(x: cv.f32["B", "T", "K"], w: cv.f32["K", "N"], b: cv.f32["N"]):
    return x @ w + b

@cv.optimize(precision="tf32")
def proj_tf32(x: cv.f32["B", "T", "K"], w: cv.f32["K", "N"]):
    return x @ w
"""

fake = ctypes.CDLL("libcuda.so.1")  # the runtime's own handle: the same file
fake.fake_kernel_name.restype = ctypes.c_char_p
buf = (Record * 4096)()

def kinds(fn, out, *shapes):
    """Which of the wgmma loop and the copy kernel fn's call launched."""
    fn(*[DeviceArray(0, *s) for s in shapes], out=DeviceArray(0, *out))
    names = [fake.fake_kernel_name(r.kernel) for r in buf[:fake.fake_take(buf, 4096)]]
    return any(n.endswith(b"_wg") for n in names), b"cv_transpose_f32" in names

ctypes.c_int.in_dll(fake, "fake_pools").value = 1
m = compile_source(Path(WORK), SOURCE, cuda_archs=("sm_90",))
qkv = [(8, 128, 2304), (8, 128, 768), (768, 2304), (2304,)]
native.configure(cuda_wg_nmajor=False)
assert kinds(m.proj, *qkv) == (True, True)  # copies
native.configure(cuda_wg_nmajor=True)
assert kinds(m.proj, *qkv) == (True, False)  # read as it is
assert kinds(m.proj, (8, 128, 517), (8, 128, 768), (768, 517), (517,)) == (True, True)
assert kinds(m.proj, (1, 128, 2304), (1, 128, 768), (768, 2304), (2304,)) == (False, False)
assert kinds(m.proj_tf32, (8, 128, 2304), (8, 128, 768), (768, 2304)) == (True, True)
native.configure(cuda_wg_nmajor=False)
assert kinds(m.proj, *qkv) == (True, True)
print("ok")
'''


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("nvcc") is None,
                    reason="needs a C compiler and nvcc (the module's sm_90 code)")
def test_an_n_major_weight_is_read_as_it_is_where_allowed(tmp_path):
    child = f"WORK = {str(tmp_path)!r}\n" + CHILD
    proc = fake_driver.run_child(tmp_path, child, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert proc.stdout.startswith("ok"), proc.stdout
