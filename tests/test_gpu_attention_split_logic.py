"""Where a fused attention runs its split entry (``_s``: blocks of 32 query rows, the keys
split between two halves of the warps), without a GPU: a module built with sm_90 code runs
against the fake libcuda.so.1 (tests/data/fake_libcuda.c, 132 SMs), which logs each kernel
by name and grid. GPT-2's causal attention at 1 x 128 (12 heads of 64: 24 blocks of 64
rows) takes it with CUVIL_AOT_CUDA_ATTENTION_SPLIT (the default), in 48 blocks; at 8 x 128
(192 blocks) it does not; without the setting never. At up to 16 query rows the FMA
kernel's entry runs (``_f``), at up to 4 (a decode step) the decode rows' (``_d``,
cuda_attention_decode.h). Grouped-query
attention (K/V heads repeated by np.repeat) runs the fused kernel over its B·H heads only
with CUVIL_AOT_CUDA_ATTENTION_GROUPED. What
the split kernel computes is tests/attention_emulator.cpp's on the CPU and
tests/test_gpu_attention.py's on a device."""

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

def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

@cv.optimize
def causal(q: cv.f32["B", "H", "T", 64], k: cv.f32["B", "H", "T", 64],
           v: cv.f32["B", "H", "T", 64], mask: cv.f32["T", "T"]):
    return softmax(q @ k.transpose(0, 1, 3, 2) * 0.125 + mask) @ v

@cv.optimize
def grouped(q: cv.f32["B", "H", "T", 64], k: cv.f32["B", "KV", "T", 64],
            v: cv.f32["B", "KV", "T", 64], mask: cv.f32["T", "T"]):
    n = q.shape[1] // k.shape[1]
    k = np.repeat(k, n, axis=1)
    return softmax(q @ k.transpose(0, 1, 3, 2) * 0.125 + mask) @ np.repeat(v, n, axis=1)
"""

fake = ctypes.CDLL("libcuda.so.1")  # the runtime's own handle: the same file
fake.fake_kernel_name.restype = ctypes.c_char_p
buf = (Record * 4096)()

def attention(b, t):
    """The attention kernel fn's call launched: (name, grid.x, grid.y)."""
    heads = (b, 12, t, 64)
    m.causal(*[DeviceArray(0, *heads) for _ in range(3)], DeviceArray(0, t, t),
             out=DeviceArray(0, *heads))
    records = buf[:fake.fake_take(buf, 4096)]
    got = [(fake.fake_kernel_name(r.kernel).decode(), r.grid_x, r.grid_y) for r in records]
    return [g for g in got if "_a0" in g[0]]

ctypes.c_int.in_dll(fake, "fake_pools").value = 1
m = compile_source(Path(WORK), SOURCE, cuda_archs=("sm_90",))
assert native.info()["cuda_attention_split"]  # on by default
native.configure(cuda_attention_split=False)
assert attention(1, 128) == [("f0_s0_a0", 2, 12)], attention(1, 128)
native.configure(cuda_attention_split=True)
assert attention(1, 128) == [("f0_s0_a0_s", 4, 12)], attention(1, 128)
assert attention(8, 128) == [("f0_s0_a0", 2, 96)]  # 192 blocks: enough
assert attention(1, 32) == [("f0_s0_a0", 1, 12)]  # one block of rows either way
assert attention(1, 33) == [("f0_s0_a0_s", 2, 12)]

def launched(fn, b, h, kv, t):
    """The kernels fn's call launched: (name, grid.x, grid.y)."""
    fn(DeviceArray(0, b, h, t, 64), *[DeviceArray(0, b, kv, t, 64) for _ in range(2)],
       DeviceArray(0, t, t), out=DeviceArray(0, b, h, t, 64))
    records = buf[:fake.fake_take(buf, 4096)]
    return [(fake.fake_kernel_name(r.kernel).decode(), r.grid_x, r.grid_y) for r in records]

# grouped-query attention (8 heads over 2): the fused kernel over B·H = 16 heads of T rows,
# only with CUVIL_AOT_CUDA_ATTENTION_GROUPED; else its matmuls per K/V head and softmax
assert native.info()["cuda_attention_grouped"]  # on by default
assert [g for g in launched(m.grouped, 2, 8, 2, 128) if "_a0" in g[0]] == [
    ("f1_s0_a0_s", 4, 16)]
assert [g for g in launched(m.grouped, 2, 8, 2, 128) if "gemm" in g[0]] == []
# one query row (a decode step): the fused kernel too (cuda_attention_decode.h), alone
assert [g for g in launched(m.grouped, 1, 8, 2, 1) if "_a0" in g[0]] == [("f1_s0_a0_d", 1, 8)]
assert attention(4, 1) == [("f0_s0_a0_d", 1, 48)]
assert attention(2, 4) == [("f0_s0_a0_d", 1, 24)]
assert attention(2, 5) == [("f0_s0_a0_f", 1, 24)]  # 5-16 rows: the FMA kernel's entry
assert attention(2, 16) == [("f0_s0_a0_f", 1, 24)] and attention(2, 17) == [("f0_s0_a0", 1, 24)]
names = lambda t: [g[0] for g in launched(m.causal, 4, 12, 12, t)]  # noqa: E731
# no GEMM or softmax of its own
assert [n.replace("_a0_d", "_a0") for n in names(1)] == names(128) and "f0_s0_a0_d" in names(1)
native.configure(cuda_attention_grouped=False)
assert not [g for g in launched(m.grouped, 2, 8, 2, 128) if "_a0" in g[0]]
native.configure(cuda_attention_grouped=True)
print("ok")
'''


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("nvcc") is None,
                    reason="needs a C compiler and nvcc (the module's sm_90 code)")
def test_few_attention_blocks_split_their_keys_where_allowed(tmp_path):
    child = f"WORK = {str(tmp_path)!r}\n" + CHILD
    proc = fake_driver.run_child(tmp_path, child, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert proc.stdout.startswith("ok"), proc.stdout
