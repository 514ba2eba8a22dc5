"""The cheap key: what a cache hit can be decided on without the compiler.

The full cache key (``driver.key_components``) runs the frontend and asks the C
compiler for its version: that costs an import of the whole compiler (~70 ms) plus
a subprocess, far over the cold-start budget. The cheap key is computed from

- the bytes of the marked module's file,
- a fingerprint of everything its marked functions reach through global names
  (constants by value, functions by qualified name, and the bytes of every other
  module file those functions live in: helpers inlined from other modules),
- the environment parts of the full key (cuvil_aot's sources, Python ABI, NumPy,
  CPU levels),

and is mapped to the full key recorded at build time (see ``shortcuts.py``). It
only ever says "same inputs as a build we made": anything it cannot fingerprint
makes it ``None`` and the caller computes the full key.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cuvil_aot import pyconfig
from cuvil_aot.api import Dispatcher

_CONSTANTS = (bool, int, float, complex, str, bytes, type(None))
_COMPILER_PARTS = ("frontend", "ir", "passes", "codegen", "toolchain")
_SKIP_ROOTS = frozenset({"numpy", "cuvil_aot", "builtins"})
"""Modules whose code is covered by other components (NumPy version, cuvil_aot hash)."""
_REPR_LIMIT = 256


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def as_dispatcher(value: object) -> object:
    """A global bound to compiled code (a CompiledFunction) counts through its dispatcher."""
    return getattr(value, "dispatcher", value) if not isinstance(value, types.ModuleType) else value


def marked(module: types.ModuleType) -> dict[str, Dispatcher]:
    """The module's marked functions (as frontend.marked_functions, without importing it)."""
    found = {}
    for name, value in vars(module).items():
        value = as_dispatcher(value)
        if isinstance(value, Dispatcher) and value.py_func.__module__ == module.__name__:
            found[name] = value
    return found


def source_file(module: types.ModuleType) -> Path | None:
    """The module's .py file, or None (no file, or not Python source)."""
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None) or getattr(module, "__file__", None)
    if not isinstance(origin, str) or not origin.endswith(".py"):
        return None
    return Path(origin)


def file_hash(path: Path) -> str | None:
    try:
        return sha256_hex(path.read_bytes())
    except OSError:
        return None


# --- what the marked functions reach ---------------------------------------------------


def _code_names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_names(const)


def describe(value: object) -> str:
    """A stable, process-independent description of a global a function reads."""
    value = as_dispatcher(value)
    if isinstance(value, Dispatcher):
        value = value.py_func
    if isinstance(value, types.FunctionType):
        return f"function {value.__module__}.{value.__qualname__}"
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    if isinstance(value, type):
        return f"class {value.__module__}.{value.__qualname__}"
    if isinstance(value, _CONSTANTS) or _is_numpy_scalar(value) or _is_plain_tuple(value):
        text = repr(value)
        return "= " + (text if len(text) <= _REPR_LIMIT else "sha256 " + sha256_hex(text.encode()))
    name = getattr(value, "__name__", "")
    return f"object {type(value).__module__}.{type(value).__qualname__} {name}".rstrip()


def _is_numpy_scalar(value: object) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(value, np.generic)


def _is_plain_tuple(value: object) -> bool:
    return isinstance(value, tuple) and all(
        isinstance(v, _CONSTANTS) or _is_plain_tuple(v) for v in value
    )


class _Walk:
    """What the marked functions of module ``home`` reach, found so far."""

    def __init__(self, home: str) -> None:
        self.home = home
        self.globals_: dict[str, str] = {}
        self.modules: set[str] = set()
        self.todo: list[types.FunctionType] = []

    def follow(self, owner: str, name: str, value: object, names: set[str]) -> None:
        self.globals_[f"{owner}.{name}"] = describe(value)
        value = as_dispatcher(value)
        if isinstance(value, Dispatcher):
            value = value.py_func
        if isinstance(value, types.FunctionType):
            self.todo.append(value)
        elif isinstance(value, types.ModuleType) and _user_module(value.__name__):
            self.modules.add(value.__name__)
            for attr in sorted(names):  # module.attr calls: follow what attr names
                found = as_dispatcher(vars(value).get(attr))
                if isinstance(found, (types.FunctionType, Dispatcher)) or _constant(found):
                    self.follow(value.__name__, attr, found, names)

    def visit(self, fn: types.FunctionType) -> None:
        owner = str(fn.__globals__.get("__name__", "?"))
        if owner != self.home:
            self.modules.add(owner)
        names = set(_code_names(fn.__code__))
        for name in sorted(names):
            if name in fn.__globals__:
                self.follow(owner, name, fn.__globals__[name], names)
        extras = [c.cell_contents for c in fn.__closure__ or () if _cell_set(c)]
        extras += list(fn.__defaults__ or ()) + list((fn.__kwdefaults__ or {}).values())
        for i, value in enumerate(extras):
            self.follow(f"{owner}.{fn.__qualname__}", f"<extra {i}>", value, names)


def _constant(value: object) -> bool:
    return isinstance(value, _CONSTANTS) or _is_numpy_scalar(value) or _is_plain_tuple(value)


def _cell_set(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _user_module(name: str) -> bool:
    return name.partition(".")[0] not in _SKIP_ROOTS


def dependencies(module: types.ModuleType) -> dict[str, Any] | None:
    """Fingerprint of what the marked functions read; None if some input has no file."""
    walk = _Walk(module.__name__)
    signatures = {}
    for name, dispatcher in sorted(marked(module).items()):
        fn = dispatcher.py_func
        signatures[name] = [repr(dispatcher.signatures), repr(fn.__annotations__)]
        walk.todo.append(fn)
    seen: set[int] = set()
    while walk.todo:
        fn = walk.todo.pop()
        if id(fn) not in seen:
            seen.add(id(fn))
            walk.visit(fn)
    files: dict[str, str] = {}
    for name in sorted(walk.modules):
        if not _user_module(name):
            continue
        dep = sys.modules.get(name)
        path = source_file(dep) if dep is not None else None
        digest = file_hash(path) if path is not None else None
        if digest is None:
            return None
        files[name] = digest
    return {"globals": walk.globals_, "files": files, "signatures": signatures}


# --- the environment ------------------------------------------------------------------


def _header_dir() -> Path:
    """Where the generated code's headers are: as toolchain.cc.include_dirs() finds them."""
    pkg = Path(__file__).resolve().parent
    ours = pkg / "include"
    if not (ours / "cuvil_aot" / "kernel.h").exists():
        ours = pkg.parent / "native" / "include"
    return ours / "cuvil_aot"


_PACKAGE_HASH: list[str] = []


def _files(folder: Path, suffix: str) -> list[Path]:
    """Sorted like Path.glob would, without its cost (~0.1 ms a call)."""
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(suffix))
    except FileNotFoundError:
        return []
    return [folder / n for n in names]


def numpy_abi() -> str:
    """The NumPy ABI an extension depends on: its major version. Extensions are built
    for NumPy's default target API, so one built against any 2.x runs on every 2.x."""
    import numpy as np

    return f"numpy{np.__version__.split('.')[0]}"


def package_hash() -> str:
    """cuvil_aot's version plus a hash of the compiler's own sources and headers
    (the ``cuvil_aot`` key component), without importing the compiler."""
    if _PACKAGE_HASH:
        return _PACKAGE_HASH[0]
    from cuvil_aot import __version__

    root = Path(__file__).resolve().parent
    digest = hashlib.sha256(__version__.encode())
    for sub in _COMPILER_PARTS:
        for path in _files(root / sub, ".py"):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    digest.update((root / "nn.py").read_bytes())  # users inline its building blocks
    headers = hashlib.sha256()
    for header in _files(_header_dir(), ".h"):
        headers.update(header.name.encode() + b"\0" + header.read_bytes())
    digest.update(headers.hexdigest().encode())
    _PACKAGE_HASH.append(digest.hexdigest())
    return _PACKAGE_HASH[0]


def python_abi() -> str:
    return f"{sys.implementation.cache_tag}{pyconfig.ext_suffix()}"


def host_level() -> int:
    """The x86-64 level kernels are built for by default (as toolchain.cc.host_level):
    the detected one, lowered by CUVIL_AOT_CPU_LEVEL."""
    if os.uname().machine.lower() not in ("x86_64", "amd64"):
        return 1
    from cuvil_aot import _runtime  # type: ignore[attr-defined,import-untyped,unused-ignore]

    return int(_runtime.info()["cpu_level"])


def environment(cpu_levels: tuple[int, ...], cuda_archs: str = "default") -> dict[str, str]:
    """The full key's components that depend on this machine and the build settings,
    less the toolchains' identities (see toolstamp.py)."""
    levels = cpu_levels or (host_level(),)
    return {
        "cuvil_aot": package_hash(),
        "python_abi": python_abi(),
        "numpy": numpy_abi(),
        "cpu_levels": ",".join(map(str, levels)),
        "cuda_archs": cuda_archs,
    }


def components(
    module: types.ModuleType, cpu_levels: tuple[int, ...] = (), cuda_archs: str = "default"
) -> dict[str, str] | None:
    """The cheap key components of ``module``, or None when it cannot have one.

    ``cuda_archs`` is the GPU targets asked for (Options, else CUVIL_AOT_CUDA_ARCHS), or
    "default"."""
    path = source_file(module)
    source = file_hash(path) if path is not None else None
    deps = dependencies(module) if source is not None else None
    if source is None or deps is None:
        return None
    return {
        "module": module.__name__,
        "module_source": source,
        "deps": sha256_hex(canonical(deps)),
        **environment(cpu_levels, cuda_archs),
    }
