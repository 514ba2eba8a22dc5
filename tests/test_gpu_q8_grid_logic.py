"""The fused int8 GEMV's grid (codegen/gpu_launch.py) without a GPU: a module built with
sm_90 code runs against the fake libcuda.so.1 (tests/data/fake_libcuda.c, 132 SMs), which
logs each kernel with its grid. One row of x: a block per four outputs while they fit one
wave of CV_GEMV_Q8_X1_BLOCKS (16) blocks an SM (2,112), past it one wave of blocks each
taking the same number of groups (no tail wave: the probe's persist64). Whether the values
are right is tests/test_int8_weights.py's on a device."""

from __future__ import annotations

import shutil

import fake_driver
import pytest

CHILD = r'''
import ctypes
from pathlib import Path
from conftest import compile_source
from fake_driver import DeviceArray, Record

SOURCE = """
import numpy as np
import cuvil_aot as cv

@cv.optimize
def q8(x: cv.f32["T", "K"], q: cv.i8["N", "K"], s: cv.f32["N"]):
    return x @ (q.astype(np.float32) * s[:, None]).T
"""

fake = ctypes.CDLL("libcuda.so.1")  # the runtime's own handle: the same file
fake.fake_kernel_name.restype = ctypes.c_char_p
buf = (Record * 4096)()

def grids(t, n, k=256):
    """(entry point, grid x) of each kernel of m.q8 at x (t, k), q (n, k)."""
    q = DeviceArray(0, n, k)
    q.interface["typestr"] = "|i1"
    m.q8(DeviceArray(0, t, k), q, DeviceArray(0, n), out=DeviceArray(0, t, n))
    got = fake.fake_take(buf, 4096)
    return [(fake.fake_kernel_name(r.kernel).decode().rsplit("_", 1)[-1], r.grid_x)
            for r in buf[:got]]

ctypes.c_int.in_dll(fake, "fake_pools").value = 1
m = compile_source(Path(WORK), SOURCE, cuda_archs=("sm_90",))
assert grids(1, 4096) == [("q8x1", 1024)], grids(1, 4096)  # 1,024 groups: a block each
assert grids(1, 8448) == [("q8x1", 2112)]  # exactly one wave
assert grids(1, 11008) == [("q8x1", 1376)]  # 2,752 groups: 1,376 blocks of two
assert grids(1, 40000) == [("q8x1", 2000)]  # 10,000 groups: 2,000 blocks of five
assert grids(4, 11008) == [("q8x4", 2752)]  # four rows: a block a group, as before
print("ok")
'''


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("nvcc") is None,
                    reason="needs a C compiler and nvcc (the module's sm_90 code)")
def test_one_row_runs_in_one_wave(tmp_path):
    child = f"WORK = {str(tmp_path)!r}\n" + CHILD
    proc = fake_driver.run_child(tmp_path, child, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert proc.stdout.startswith("ok"), proc.stdout
