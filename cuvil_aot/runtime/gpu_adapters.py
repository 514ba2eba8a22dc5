"""What the native runtime asks Python about device arrays, once per array type.

The runtime reads device arrays in C (native/src/gpu_arrays.c). Where a type
offers no C way (the DLPack C exchange API) to allocate arrays of its kind or to
name its current stream, it calls these, looked up once per type by
``adapters(type)``: ``(empty, current_stream, contiguous, cupy)``.

- ``empty(shape, dtype_name, device)``: ``(array, device pointer)``, a new C-contiguous
  array of that kind, so results come back as the inputs' kind (CuPy in, CuPy out), and
  its pointer, so the runtime need not read the new array's interface; None: cannot
  allocate (the call must pass ``out=``).
- ``current_stream(device)``: the framework's current stream handle; None: the
  producer's ``__cuda_array_interface__`` stream or the legacy default stream.
- ``contiguous(array)``: a C-contiguous copy, for inputs read through a reshape
  that regroups elements.
- ``cupy``: read the arrays of this type from CuPy's ndarray attributes, not from
  their ``__cuda_array_interface__`` (a dict CuPy builds in Python per array).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

Adapters = tuple[Callable[..., Any] | None, Callable[..., Any] | None, Callable[[Any], Any],
                 bool]
# None of the frameworks is a dependency of cuvil_aot. An adapter runs only for an array of
# its framework, so the framework is imported: sys.modules has it (importlib.import_module
# would cost ~0.5 us a call in Python).


def adapters(tp: type) -> Adapters:
    root = tp.__module__.split(".")[0]
    if root == "torch":
        return _torch_empty, _torch_stream, _torch_contiguous, False
    if root == "cupy":
        return _cupy_empty, _cupy_stream, _cupy_contiguous, tp.__name__ == "ndarray"
    if root == "numba":
        return _numba_empty, None, _cupy_contiguous, False
    if root == "pycuda":
        return _pycuda_empty, None, _cupy_contiguous, False
    return None, None, _cupy_contiguous, False


def _torch_empty(shape: tuple[int, ...], dtype: str, device: int) -> tuple[Any, int]:
    torch = sys.modules["torch"]
    t = torch.empty(shape, dtype=getattr(torch, dtype), device=torch.device("cuda", device))
    return t, t.data_ptr()


def _torch_stream(device: int) -> int:
    return int(sys.modules["torch"].cuda.current_stream(device).cuda_stream)


def _torch_contiguous(x: Any) -> Any:
    return x.contiguous()


def _on_cupy_device(device: int, fn: Callable[[], Any]) -> Any:
    """fn() with ``device`` current in CuPy; entering cupy.cuda.Device costs more than the
    call itself, so only where another device is current."""
    cuda = sys.modules["cupy"].cuda
    if cuda.runtime.getDevice() == device:
        return fn()
    with cuda.Device(device):
        return fn()


def _no_bfloat16(framework: str, dtype: str) -> None:
    """CuPy, Numba and PyCUDA have no bfloat16 arrays: a bfloat16 result is refused."""
    if dtype == "bfloat16":
        raise TypeError(f"{framework} has no bfloat16 arrays: this function returns bfloat16 "
                        "on the GPU; call it with PyTorch tensors (torch.bfloat16), or cast "
                        "its result in the function (.astype(np.float32))")


def _cupy_empty(shape: tuple[int, ...], dtype: str, device: int) -> tuple[Any, int]:
    _no_bfloat16("CuPy", dtype)
    a = _on_cupy_device(device, lambda: sys.modules["cupy"].empty(shape, dtype))
    return a, a.data.ptr


def _cupy_stream(device: int) -> int:
    return int(_on_cupy_device(device, lambda: sys.modules["cupy"].cuda.get_current_stream().ptr))


def _cupy_contiguous(x: Any) -> Any:
    """A C-contiguous copy made by CuPy (read only by cuvil_aot's kernels, never returned)."""
    try:
        cupy = importlib.import_module("cupy")
    except ImportError:
        raise TypeError(f"cuvil_aot needs a C-contiguous {type(x).__name__} here (or CuPy "
                        "installed to copy it)") from None
    with cupy.cuda.Device(cupy.asarray(x).device.id):
        return cupy.ascontiguousarray(cupy.asarray(x))


def _numba_empty(shape: tuple[int, ...], dtype: str, device: int) -> tuple[Any, int]:
    _no_bfloat16("Numba", dtype)
    cuda = sys.modules["numba.cuda"]
    with cuda.gpus[device]:
        a = cuda.device_array(shape, dtype)
    return a, a.__cuda_array_interface__["data"][0]


def _pycuda_empty(shape: tuple[int, ...], dtype: str, device: int) -> tuple[Any, int]:
    _no_bfloat16("PyCUDA", dtype)
    a = sys.modules["pycuda.gpuarray"].empty(shape, dtype)
    return a, a.__cuda_array_interface__["data"][0]
