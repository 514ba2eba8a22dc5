"""The cookbook on a GPU: each cookbook module compiled once for this machine's GPU, every
snippet called with its array arguments as PyTorch CUDA tensors, and its results (and
arguments, for in-place updates) brought back and judged as tests/test_cookbook.py judges
the CPU's: the same draws, the same float64 reference and tolerances, dtypes and shapes.

Snippets on the CPU test's REFUSED and WRONG lists are skipped here (that test keeps the
lists honest), and so are snippets without an array argument (nothing to put on a GPU).
Run on a machine with an NVIDIA GPU (tools/gpu_check.sh); skipped elsewhere."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from conftest import compile_source
from gpu_harness import device_arch
from test_cookbook import REFUSED, WRONG, check_cases, params_of, snippets
from test_gpu import group

from cuvil_aot.marks import marked

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


def to_device(a: np.ndarray) -> Any:
    return torch.from_numpy(a).cuda()


def from_device(x: Any) -> np.ndarray:
    """A result or argument of the compiled function, which must be a CUDA tensor, as NumPy."""
    assert isinstance(x, torch.Tensor) and x.is_cuda, f"{type(x).__name__}, not a CUDA tensor"
    return x.cpu().numpy()


def skip_reason(module_name: str, name: str) -> str | None:
    if name in REFUSED:
        return f"refused (test_cookbook.py): {REFUSED[name]}"
    if name in WRONG:
        return f"wrong on the CPU (test_cookbook.py): {WRONG[name]}"
    mark = marked(importlib.import_module(f"cookbook.{module_name}"))[name]
    if all(p.kind in (float, int) for p in params_of(mark)):
        return "no array argument to put on the GPU"
    return None


def params() -> list[Any]:
    """Each cookbook module's snippets on one xdist worker (--dist loadgroup), which
    compiles the module once."""
    out = []
    for module_name, name in snippets():
        marks = [group(f"cookbook.{module_name}")]
        reason = skip_reason(module_name, name)
        if reason:
            marks.append(pytest.mark.skip(reason=reason))
        out.append(pytest.param(module_name, name, marks=marks, id=f"{module_name}.{name}"))
    return out


@pytest.fixture(scope="module")
def gpu_cookbook(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], ModuleType]:
    """A cookbook module compiled with CUDA kernels for device 0, loaded as a fresh copy (the
    CPU test binds the imported ``cookbook.*`` modules to its CPU-only builds). A build that
    fails (nvcc) fails each of the module's tests with its error, without building again."""
    arch = device_arch()
    built: dict[str, ModuleType | Exception] = {}

    def get(module_name: str) -> ModuleType:
        if module_name not in built:
            source = inspect.getsource(importlib.import_module(f"cookbook.{module_name}"))
            try:
                built[module_name] = compile_source(
                    tmp_path_factory.mktemp(f"cookbook_gpu_{module_name}"), source,
                    cuda_archs=(arch,))
            except Exception as exc:  # noqa: BLE001 - the cause of each test's failure below
                built[module_name] = exc
        module = built[module_name]
        if isinstance(module, Exception):
            raise RuntimeError(f"cookbook.{module_name} did not build for {arch}") from module
        return module

    return get


@pytest.mark.parametrize(("module_name", "name"), params())
def test_snippet_on_gpu(gpu_cookbook: Callable[[str], ModuleType], module_name: str,
                        name: str) -> None:
    check_cases(getattr(gpu_cookbook(module_name), name), name, to_device, from_device)
