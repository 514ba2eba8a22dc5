"""Where a float32 GEMM's split-K runs in thread-block clusters, without a GPU: a module
built with sm_90 code runs against the fake libcuda.so.1 (tests/data/fake_libcuda.c, 132
SMs of compute capability 9.0), which logs each kernel by name and grid. GPT-2's 128-row
projections (an N-major weight the wgmma loop does not take at 128 rows) split k: with
CUVIL_AOT_CUDA_TC_CLUSTER (the default) in clusters (``_tcc``, CV_TC_CLUSTER blocks a tile,
no ``_ksum``), without it through partial sums and ``_ksum``, as where k splits in fewer
chunks. What
the cluster kernel computes is tests/test_gpu_gemm.py's on a device."""

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
"""

fake = ctypes.CDLL("libcuda.so.1")  # the runtime's own handle: the same file
fake.fake_kernel_name.restype = ctypes.c_char_p
buf = (Record * 4096)()

def launches(fn, out, *shapes):
    """The GEMM kernels fn's call launched: (name suffix, grid.x, dynamic smem) each."""
    fn(*[DeviceArray(0, *s) for s in shapes], out=DeviceArray(0, *out))
    records = buf[:fake.fake_take(buf, 4096)]
    names = [(fake.fake_kernel_name(r.kernel).decode(), r.grid_x, r.smem) for r in records]
    return [(n.rsplit("_", 1)[1], x, s) for n, x, s in names if "_gemm_" in n]

def gemms(fn, out, *shapes):
    return [(n, x) for n, x, _ in launches(fn, out, *shapes)]

ctypes.c_int.in_dll(fake, "fake_pools").value = 1
m = compile_source(Path(WORK), SOURCE, cuda_archs=("sm_90",))
assert native.info()["cuda_tc_cluster"]  # on by default
qkv = [(1, 128, 2304), (1, 128, 768), (768, 2304), (2304,)]
assert gemms(m.proj, *qkv) == [("tcc", 2 * 18 * 8)], gemms(m.proj, *qkv)
# its k-slabs' stages are dynamic shared memory (CV_TCC_SMEM), asked for by every launch path
for graphs in (0, 4):
    native.configure(cuda_graph=graphs)
    for _ in range(3):  # a graph is built on a later call
        smem = {s for n, _, s in launches(m.proj, *qkv) if n == "tcc"}
    assert smem == {4 * (64 * 40 + 32 * 132) * 4}, (graphs, smem)
native.configure(cuda_graph=4)  # the default
fc2 = [(1, 128, 768), (1, 128, 3072), (3072, 768), (768,)]
assert gemms(m.proj, *fc2) == [("tcc", 2 * 6 * 8)]
native.configure(cuda_tc_cluster=False)
kinds = [n for n, _ in gemms(m.proj, *qkv)]
assert kinds == ["tc64", "ksum"], kinds
native.configure(cuda_tc_cluster=True)
# k = 256 splits in two (CV_SPLIT_MIN_K 128 deep each), below half a cluster's chunks
shallow = [(1, 128, 2304), (1, 128, 256), (256, 2304), (2304,)]
assert [n for n, _ in gemms(m.proj, *shallow)] == ["tc64", "ksum"]
# where the wgmma loop takes the GEMM (256 rows), it keeps it
wide = [(1, 256, 4224), (1, 256, 768), (768, 4224), (4224,)]
assert [n for n, _ in gemms(m.proj, *wide)][0] == "wg"
print("ok")
'''


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("nvcc") is None,
                    reason="needs a C compiler and nvcc (the module's sm_90 code)")
def test_few_tiles_split_k_in_clusters_where_allowed(tmp_path):
    child = f"WORK = {str(tmp_path)!r}\n" + CHILD
    proc = fake_driver.run_child(tmp_path, child, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert proc.stdout.startswith("ok"), proc.stdout
