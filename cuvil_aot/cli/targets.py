"""Turning command-line targets (paths, module names, MODULE:FUNCTION) into modules."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

from cuvil_aot.importer import is_marked_source

_SKIP_DIRS = frozenset({"__pycache__", "build", "dist", "node_modules", "site-packages"})


class TargetError(Exception):
    """A target that names no importable module; the message says which and why."""


def module_name(path: Path) -> tuple[Path, str]:
    """(sys.path root, dotted name) of a .py file, walking up through its packages."""
    path = path.resolve()
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    if not parts:
        raise TargetError(f"{path}: a package's __init__.py above no package")
    return folder, ".".join(parts)


def marked_files(folder: Path) -> list[Path]:
    """Every .py file under ``folder`` whose bytes may define marked functions."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            path = Path(root) / name
            if name.endswith(".py") and is_marked_source(path.read_bytes()):
                found.append(path)
    return found


def _import(name: str, root: Path | None = None) -> ModuleType:
    if root is not None and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise TargetError(f"cannot import {name}: {exc}") from exc


def resolve(target: str) -> list[ModuleType]:
    """The modules a target names: a .py file, a directory (its marked files), or a
    dotted module name (looked up from the current directory too, as ``python -m``)."""
    path = Path(target)
    if path.is_dir():
        return [_import(name, root) for root, name in map(module_name, marked_files(path))]
    if path.suffix == ".py" or os.sep in target:
        if not path.is_file():
            raise TargetError(f"{target}: no such file")
        root, name = module_name(path)
        return [_import(name, root)]
    return [_import(target, Path.cwd())]


def split_function(target: str) -> tuple[str, str | None]:
    """'pkg.mod:fn' -> ('pkg.mod', 'fn'), 'pkg.mod:Block.forward' (a method) likewise;
    'pkg.mod' -> ('pkg.mod', None)."""
    module, sep, function = target.rpartition(":")
    if not sep or os.sep in function or not all(p.isidentifier() for p in function.split(".")):
        return target, None
    return module, function
