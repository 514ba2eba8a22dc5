"""The cheap key: what a cache hit can be decided on without the compiler.

The full cache key (``pipeline.key_components``) runs the frontend and asks the C
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

import ast
import dis
import hashlib
import importlib.util
import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cuvil_aot import digest, host, marks
from cuvil_aot.digest import Undigestible
from cuvil_aot.marks import Marked, as_marked

_SKIP_ROOTS = frozenset({"numpy", "cuvil_aot", "builtins"})
"""Modules whose code is covered by other components (NumPy version, cuvil_aot hash)."""
_REPR_LIMIT = 256


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


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


def _imported_modules(code: types.CodeType, package: str | None) -> Iterator[str]:
    """The absolute names of the modules an ``import`` inside the function names."""
    level = 0
    for ins in dis.get_instructions(code):
        if ins.opname == "LOAD_CONST" and isinstance(ins.argval, int):
            level = ins.argval  # IMPORT_NAME's level is loaded two instructions before it
        elif ins.opname == "IMPORT_NAME":
            try:
                yield importlib.util.resolve_name("." * level + ins.argval, package)
            except (ImportError, ValueError):
                yield "?"  # a relative import without a package: never loaded
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _imported_modules(const, package)


def describe(value: object) -> str:
    """A stable, process-independent description of a global a function reads: the
    full key's (digest.describe), hashed when long. A value the frontend would refuse
    (Undigestible) is named only: it never reaches a built entry."""
    try:
        text = digest.describe(value)
    except Undigestible:
        name = getattr(value, "__name__", "")
        return f"object {type(value).__module__}.{type(value).__qualname__} {name}".rstrip()
    return text if len(text) <= _REPR_LIMIT else "sha256 " + sha256_hex(text.encode())


class _Walk:
    """What the marked functions of module ``home`` reach, found so far."""

    def __init__(self, home: str) -> None:
        self.home = home
        self.globals_: dict[str, str] = {}
        self.modules: set[str] = set()
        self.todo: list[types.FunctionType] = []
        self.unknown = False  # a module imported inside a function and not loaded yet

    def follow(self, owner: str, name: str, value: object, names: set[str]) -> None:
        self.globals_[f"{owner}.{name}"] = describe(value)
        value = as_marked(value)
        if isinstance(value, Marked):
            value = value.py_func
        if isinstance(value, types.FunctionType):
            self.todo.append(value)
        elif isinstance(value, types.ModuleType) and _user_module(value.__name__):
            self.modules.add(value.__name__)
            for attr in sorted(names & set(vars(value))):  # module.attr: what attr names
                self.follow(value.__name__, attr, vars(value)[attr], names)

    def visit(self, fn: types.FunctionType) -> None:
        owner = str(fn.__globals__.get("__name__", "?"))
        if owner != self.home:
            self.modules.add(owner)
        names = set(_code_names(fn.__code__))
        for name in sorted(names):
            if name in fn.__globals__:
                self.follow(owner, name, fn.__globals__[name], names)
        for name in sorted(set(_imported_modules(fn.__code__, fn.__globals__.get("__package__")))):
            if _user_module(name):  # its file, and the names the function reads from it
                inner = sys.modules.get(name)
                self.unknown |= inner is None
                if inner is not None:
                    self.follow(owner, f"<import {name}>", inner, names)
        extras = [c.cell_contents for c in fn.__closure__ or () if _cell_set(c)]
        extras += list(fn.__defaults__ or ()) + list((fn.__kwdefaults__ or {}).values())
        for i, value in enumerate(extras):
            self.follow(f"{owner}.{fn.__qualname__}", f"<extra {i}>", value, names)


def _cell_set(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _user_module(name: str) -> bool:
    return name.partition(".")[0] not in _SKIP_ROOTS


def _annotations(fn: types.FunctionType, owner: type | None,
                 classes: set[type]) -> str | None:
    """The function's annotations and what they name, without evaluating them: a string
    annotation (``from __future__ import annotations``) with the values of the globals it
    names; a TypedDict, dict type or class (a method's ``owner``, the type of its
    ``self``) by its items, followed the same way where it lives; so an edit to a type
    defined in another module changes the key. The classes met go into ``classes``. None
    past a depth of 8."""
    def hint(value: Any, where: dict[str, Any], depth: int) -> Any:
        if depth > 8:
            raise RecursionError
        text = getattr(value, "__forward_arg__", value)  # a TypedDict's ForwardRef
        if isinstance(text, str):
            try:
                names = {n.id for n in ast.walk(ast.parse(text, mode="eval"))
                         if isinstance(n, ast.Name) and n.id in where}
            except SyntaxError:
                names = set()
            return [text, {n: hint(where[n], where, depth + 1) for n in sorted(names)}]
        if isinstance(value, dict):
            return {k: hint(v, where, depth + 1) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [hint(v, where, depth + 1) for v in value]
        shape = getattr(value, "shape", None)
        if isinstance(shape, tuple) and hasattr(value, "dtype"):  # cv.like(PARAMS): arrays
            return f"array {value.dtype} {shape}"
        if isinstance(value, type) and _user_module(value.__module__):  # a TypedDict, a class
            classes.add(value)
            home = sys.modules.get(value.__module__)
            return [value.__qualname__, {
                k: hint(v, vars(home) if home else {}, depth + 1)
                for b in reversed(value.__mro__[:-1])
                for k, v in vars(b).get("__annotations__", {}).items()}]
        return repr(value)
    try:
        described = {k: hint(v, fn.__globals__, 0) for k, v in fn.__annotations__.items()}
        if owner is not None:
            described["<self>"] = hint(owner, fn.__globals__, 0)
        return repr(described)
    except RecursionError:
        return None


def _class_functions(cls: type) -> Iterator[types.FunctionType]:
    """The Python functions a class and its bases hold: what ``self.f`` may inline."""
    for base in cls.__mro__[:-1]:
        for value in vars(base).values():
            value = as_marked(value)
            value = getattr(value, "fget", None) or getattr(value, "__func__", value)
            value = getattr(value, "py_func", value)
            if isinstance(value, types.FunctionType):
                yield value


def dependencies(module: types.ModuleType) -> dict[str, Any] | None:
    """Fingerprint of what the marked functions read; None if some input has no file."""
    walk = _Walk(module.__name__)
    signatures = {}
    classes: set[type] = set()
    for name, dispatcher in sorted(marks.marked(module).items()):
        fn = dispatcher.py_func
        annotations = _annotations(fn, dispatcher.owner, classes)
        if annotations is None:
            return None
        signatures[name] = [repr(dispatcher.signatures), annotations, dispatcher.precision]
        walk.todo.append(fn)
    for cls in classes:  # their methods may be inlined: what they read, where they live
        walk.todo.extend(_class_functions(cls))
        walk.modules.update(b.__module__ for b in cls.__mro__[:-1] if b.__module__ != walk.home)
    seen: set[int] = set()
    while walk.todo:
        fn = walk.todo.pop()
        if id(fn) not in seen:
            seen.add(id(fn))
            walk.visit(fn)
    if walk.unknown:
        return None
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


def environment(cpu_levels: tuple[int, ...], cuda_archs: str = "default") -> dict[str, str]:
    """The full key's components that depend on this machine and the build settings,
    less the toolchains' identities (see toolstamp.py)."""
    levels = cpu_levels or (host.cpu_level(),)
    return {
        "cuvil_aot": host.package_hash(),
        "python_abi": host.python_abi(),
        "numpy": host.numpy_abi(),
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
