"""The fake libcuda.so.1 (tests/data/fake_libcuda.c) for tests and bench scripts that run
the GPU path without a GPU: build it, run code in a child process that loads it (the driver
is loaded once per process, and the fake must be the libcuda.so.1 it finds), read its log
of kernels, and make arrays in its devices' memory."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

from cuvil_aot.runtime import native

TESTS = Path(__file__).resolve().parent
PACKAGE_ROOT = Path(native.__file__).resolve().parent.parent.parent  # the built runtime's
FAKE = TESTS / "data" / "fake_libcuda.c"


def build(directory: Path) -> Path:
    """libcuda.so.1 built from the fake into `directory`."""
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(directory / "libcuda.so.1"),
                    str(FAKE)], check=True)
    return directory


def environment(directory: Path, **extra: str) -> dict[str, str]:
    """This process's environment with the fake in `directory` first on the library path
    and cuvil_aot as this process imports it (installed or in the checkout) and the tests
    importable."""
    env = dict(os.environ, **extra)
    env["LD_LIBRARY_PATH"] = os.pathsep.join([str(directory), env.get("LD_LIBRARY_PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT), str(TESTS),
                                         env.get("PYTHONPATH", "")])
    return env


def run_child(directory: Path, code: str, timeout: float) -> subprocess.CompletedProcess:
    """`code` in a child process against the fake built into `directory`, without the
    knobs that would change the GPU path's choices."""
    env = environment(build(directory))
    for knob in ("CUVIL_AOT_CUDA_GRAPH", "CUVIL_AOT_CUDA_POOL"):
        env.pop(knob, None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=directory)


class Record(ctypes.Structure):
    """One kernel that ran, as the fake logs it (its `record`)."""
    _fields_ = [("kernel", ctypes.c_int), ("via_graph", ctypes.c_int),
                ("grid_x", ctypes.c_uint), ("grid_y", ctypes.c_uint), ("block", ctypes.c_uint),
                ("stream", ctypes.c_ulonglong), ("args", ctypes.c_ubyte * 32),
                ("device", ctypes.c_int), ("context_device", ctypes.c_int),
                ("smem", ctypes.c_uint)]


class DeviceArray:
    """float32 memory of one of the fake's devices: a pointer in that device's range (the
    fake's cuPointerGetAttribute names it), never read; 256 MiB apart, so none overlaps."""
    offset = 0

    def __init__(self, device: int, *shape: int) -> None:
        DeviceArray.offset += 1 << 28
        self.interface = {"shape": shape, "typestr": "<f4", "strides": None, "version": 3,
                          "data": ((device + 1) << 40 | DeviceArray.offset, False)}

    @property  # the runtime asks the type whether its arrays have one
    def __cuda_array_interface__(self) -> dict:
        return self.interface
