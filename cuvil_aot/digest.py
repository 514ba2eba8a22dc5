"""A stable description of a Python value compiled code may depend on: the cache keys
record it for every global, attribute, container item, default and closure a marked
function reads, so an edit to any of them is a miss, never old code.

The description is the same in every process (no ids, no addresses, no hash order) and
changes whenever the value does: numbers and strings by repr, containers item by item,
arrays by their bytes, functions by name plus their defaults and closure, user classes
and objects by their attributes. Library objects (NumPy, the standard library) are
named, not walked: their versions are in the key already. A value none of this covers
raises ``Undigestible``; the frontend turns it into a diagnostic.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import sys
import types
from typing import Any

_SCALARS = (bool, int, float, complex, str, bytes, type(None))
_LIBRARIES = frozenset({"numpy", "builtins", "math", "cuvil_aot", "operator", "_operator",
                        "functools"})


class Undigestible(TypeError):
    """A value whose changes cuvil_aot cannot see; the message names its type."""


def describe(value: object) -> str:
    """The value's stable description (see the module docstring)."""
    return _Describer().of(value)


def _library(obj: object) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module.partition(".")[0] in _LIBRARIES


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Describer:
    """One description; remembers what it is inside of, so cycles end."""

    def __init__(self) -> None:
        self.inside: set[int] = set()

    def of(self, value: object) -> str:
        if isinstance(value, _SCALARS):
            return f"{type(value).__name__} {value!r}"
        numpy = self._numpy(value)
        if numpy is not None:
            return numpy
        if id(value) in self.inside:
            return "<cycle>"
        self.inside.add(id(value))
        try:
            return self._compound(value)
        finally:
            self.inside.discard(id(value))

    def _numpy(self, value: object) -> str | None:
        np = sys.modules.get("numpy")
        if np is None:
            return None
        if isinstance(value, np.generic):
            return f"{type(value).__name__} {value!r}"
        if isinstance(value, np.ndarray):
            data = np.ascontiguousarray(value).tobytes()
            return f"ndarray {value.dtype.str} {value.shape} sha256 {_sha(data)}"
        if isinstance(value, np.dtype):
            return f"dtype {value.str}"
        if isinstance(value, np.ufunc):
            return f"ufunc numpy.{value.__name__}"
        return None

    def _compound(self, value: object) -> str:
        marked = getattr(value, "dispatcher", None) or value  # a bound marked function
        fn = getattr(marked, "py_func", None)
        if isinstance(fn, types.FunctionType):
            return self._function(fn)
        if isinstance(value, (tuple, list)):
            return f"{type(value).__name__}({', '.join(map(self.of, value))})"
        if isinstance(value, (set, frozenset)):
            return f"{type(value).__name__}({', '.join(sorted(map(self.of, value)))})"
        if isinstance(value, dict):
            items = sorted(f"{self.of(k)}: {self.of(v)}" for k, v in value.items())
            return f"dict({', '.join(items)})"
        if isinstance(value, types.ModuleType):
            return f"module {value.__name__}"
        if isinstance(value, functools.partial):  # a library type holding the user's values
            return (f"partial {self.of(value.func)} args {self.of(value.args)} "
                    f"keywords {self.of(value.keywords)}")
        if isinstance(value, types.FunctionType):
            return self._function(value)
        if isinstance(value, types.MethodType):
            return f"method {self.of(value.__func__)} of {self.of(value.__self__)}"
        if isinstance(value, (staticmethod, classmethod)):
            return f"{type(value).__name__} {self.of(value.__func__)}"
        if isinstance(value, property):
            return f"property {self.of(value.fget)}"
        if isinstance(value, type):
            return self._class(value)
        if _library(value) and callable(value):  # np.mean's C cousins, math.sqrt, len
            name = getattr(value, "__qualname__", None) or getattr(value, "__name__", "")
            return f"callable {getattr(value, '__module__', '')}.{name}"
        if not _library(type(value)):
            return self._object(value)
        raise Undigestible(f"a {type(value).__module__}.{type(value).__qualname__}")

    def _function(self, fn: types.FunctionType) -> str:
        head = f"function {fn.__module__}.{fn.__qualname__}"
        if _library(fn):
            return head
        parts = [head, f"defaults {self.of(fn.__defaults__)}",
                 f"kwdefaults {self.of(fn.__kwdefaults__)}"]
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                parts.append(f"closure {name} {self.of(cell.cell_contents)}")
            except ValueError:  # an empty cell: the name is not bound yet
                parts.append(f"closure {name} <empty>")
        return " ".join(parts)

    def _class(self, cls: type) -> str:
        head = f"class {cls.__module__}.{cls.__qualname__}"
        if _library(cls):
            return head
        attrs = sorted(f"{name}={self.of(v)}" for name, v in vars(cls).items()
                       if not (name.startswith("__") and name.endswith("__")))
        bases = ", ".join(self.of(b) for b in cls.__bases__ if b is not object)
        return f"{head}({bases}) {{{', '.join(attrs)}}}"

    def _object(self, value: object) -> str:
        head = f"object {self.of(type(value))}"
        if dataclasses.is_dataclass(value):
            fields: dict[str, Any] = {f.name: getattr(value, f.name)
                                      for f in dataclasses.fields(value)}
            return f"{head} {self.of(fields)}"
        state = getattr(value, "__dict__", None)
        if isinstance(state, dict):
            return f"{head} {self.of(state)}"
        raise Undigestible(f"a {type(value).__module__}.{type(value).__qualname__} "
                           "without a __dict__")
