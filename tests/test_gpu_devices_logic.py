"""Several devices in one process (issue 26) without a GPU: a module built with sm_90 code
runs against a fake libcuda.so.1 (tests/data/fake_libcuda.c) of two devices, which logs
every kernel with the device its module was loaded on and the device whose context was
current, and counts every use of a module, function, pool, event or pointer while another
device's context is current. Arrays are ``__cuda_array_interface__`` objects whose
pointers name their device; the kernels never run, so only where things happen is
checked: the module loaded once per device, each call's launches, scratch and graphs on
its arrays' device, the caller's context given back, arrays of two devices refused, two
threads on two devices. tests/test_gpu_devices.py runs the same on two real GPUs.

In a child process: the driver is loaded once per process, and the fake must be the
libcuda.so.1 it finds (LD_LIBRARY_PATH); nvcc builds the module's sm_90 code."""

from __future__ import annotations

import shutil

import fake_driver
import pytest

CHILD = r'''
import ctypes, threading
from pathlib import Path
import pytest
from conftest import compile_source
from fake_driver import DeviceArray, Record
import cuvil_aot
from cuvil_aot.runtime import native

SOURCE = """
import numpy as np
import cuvil_aot as cv

@cv.optimize
def axpy(x: cv.f32["N"], y: cv.f32["N"]):
    return x * 2 + y

@cv.optimize
def chain(x: cv.f32["M", "K"], w: cv.f32["K", "N"], v: cv.f32["N", "P"]):
    return np.tanh(x @ w) @ v
"""

fake = ctypes.CDLL("libcuda.so.1")  # the runtime's own handle: the same file

buf = (Record * 4096)()

def flag(name):
    return ctypes.c_int.in_dll(fake, name).value

def per_device(name):
    return list((ctypes.c_int * 4).in_dll(fake, name))[:2]

def launched():
    """(module's device, current context's device, via a graph) of each kernel since the
    last look."""
    n = fake.fake_take(buf, 4096)
    return [(r.device, r.context_device, r.via_graph) for r in buf[:n]]

def current():
    c = ctypes.c_void_p()
    fake.cuCtxGetCurrent(ctypes.byref(c))
    return c.value

def on(device, fn, *shapes):
    args = [DeviceArray(device, *s) for s in shapes]
    out = args.pop()
    assert fn(*args, out=out) is out
    return launched()

ctypes.c_int.in_dll(fake, "fake_pools").value = 1
m = compile_source(Path(WORK), SOURCE, cuda_archs=("sm_90",))
fake.cuCtxSetCurrent(ctypes.c_void_p(0x100))  # the caller's: device 0's, as a framework's
vec = [(4096,)] * 3

# The module loads on the arrays' device at its first call there, once; the launches run
# there; the caller's context is current again after each call.
ran = on(1, m.axpy, *vec)
assert ran and {r[:2] for r in ran} == {(1, 1)}, ran
assert per_device("fake_loads") == [0, 1] and current() == 0x100
ran = on(0, m.axpy, *vec)
assert ran and {r[:2] for r in ran} == {(0, 0)}, ran
assert per_device("fake_loads") == [1, 1] and current() == 0x100
for d in (1, 0, 1):
    assert {r[:2] for r in on(d, m.axpy, *vec)} == {(d, d)}
assert per_device("fake_loads") == [1, 1]

# Arrays of two devices: refused before anything runs, naming both.
x0, y1, o0 = DeviceArray(0, 4096), DeviceArray(1, 4096), DeviceArray(0, 4096)
with pytest.raises(ValueError, match=r"axpy\(\): arguments on two devices: 'x' on cuda:0, "
                                     r"'y' on cuda:1"):
    m.axpy(x0, y1, out=o0)
with pytest.raises(TypeError, match=r"out\[0\] must be a writeable float32 device array .* "
                                    r"on cuda:0, got .* on cuda:1"):
    m.axpy(x0, DeviceArray(0, 4096), out=DeviceArray(1, 4096))
assert launched() == []

# Scratch (tanh(x @ w), the intermediate) from the arrays' device's pool, kept as a spare
# of that device: a second call there allocates nothing, a call on the other device
# allocates from its own pool.
mats = [(64, 96), (96, 80), (80, 48), (64, 48)]
assert {r[:2] for r in on(1, m.chain, *mats)} == {(1, 1)}
allocs = per_device("fake_pool_allocs")
assert allocs[1] >= 1, allocs
assert {r[:2] for r in on(1, m.chain, *mats)} == {(1, 1)}
assert per_device("fake_pool_allocs") == allocs
assert {r[:2] for r in on(0, m.chain, *mats)} == {(0, 0)}
after = per_device("fake_pool_allocs")
assert after[0] > allocs[0] and after[1] == allocs[1], (allocs, after)

# CUDA graphs from two launches: built and replayed per device.
native.configure(cuda_graph=2)
for d in (1, 1, 0, 0, 1, 0):
    ran = on(d, m.chain, *mats)
    assert {r[:2] for r in ran} == {(d, d)}, (d, ran)
assert native.info()["cuda_graph_stats"]["replays"] >= 2
native.configure(cuda_graph=0)

# Two threads, one device each, at once: every launch in its own device's context.
def drive(device, calls, seen):
    for _ in range(calls):
        x, y, o = (DeviceArray(device, 4096) for _ in range(3))
        m.axpy(x, y, out=o)
    seen.append(device)

seen = []
threads = [threading.Thread(target=drive, args=(d, 300, seen)) for d in (0, 1)]
for t in threads:
    t.start()
for t in threads:
    t.join()
ran = launched()
assert sorted(seen) == [0, 1] and len(ran) >= 600, len(ran)
assert all(d == c for d, c, _ in ran), [r for r in ran if r[0] != r[1]][:5]
assert {d for d, _, _ in ran} == {0, 1}

devices = {d["device"]: d for d in cuvil_aot.info()["cuda_devices"]}
assert sorted(devices) == [0, 1], devices
for d in devices.values():
    assert d["compute_capability"] == "9.0" and d["sm_count"] == 132, d
    assert d["images"] and all(k.startswith("sm_90") for k in d["images"]), d  # no PTX JIT
assert flag("fake_wrong_context") == 0, flag("fake_wrong_context")
print("ok", devices)
'''


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("nvcc") is None,
                    reason="needs a C compiler and nvcc (the module's sm_90 code)")
def test_calls_run_on_their_arrays_device(tmp_path):
    child = f"WORK = {str(tmp_path)!r}\n" + CHILD
    proc = fake_driver.run_child(tmp_path, child, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert proc.stdout.startswith("ok"), proc.stdout
