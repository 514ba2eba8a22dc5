"""The one way cuvil_aot imports a built extension: by file, under its own name, not
registered in ``sys.modules`` (the cache, prebuilt files and tests all load through it)."""

from __future__ import annotations

import importlib.util
from importlib.machinery import ExtensionFileLoader
from pathlib import Path
from types import ModuleType


def load(name: str, origin: str | Path, real_path: str | Path | None = None) -> ModuleType:
    """Import the extension module ``name`` from the file at ``origin`` (dlopen and its
    PyInit run here). ``real_path`` becomes ``__file__`` where ``origin`` is a name that
    means nothing once loaded (a /proc/self/fd link to verified bytes)."""
    loader = ExtensionFileLoader(name, str(origin))
    spec = importlib.util.spec_from_file_location(name, str(origin), loader=loader)
    if spec is None:
        raise ImportError(f"cannot make an import spec for {real_path or origin}", name=name)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    if real_path is not None:
        module.__file__ = str(real_path)
    return module
