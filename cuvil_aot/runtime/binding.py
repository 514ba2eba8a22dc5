"""Binding: a marked module's functions become calls straight into its extension."""

from __future__ import annotations

import functools
import inspect
import threading
import types
from collections.abc import Mapping
from typing import Any

from cuvil_aot.errors import CompileError, SignatureError, warn_user
from cuvil_aot.marks import Marked, find_class, marked


class Refused:
    """A marked function the compiler refused (the rest of its module was compiled).

    A call raises its CompileError (file:line:col and caret, as the build rendered it);
    with ``fallback="python"`` it warns once, naming the reason, and runs the original."""

    def __init__(self, mark: Marked, reason: str) -> None:
        functools.update_wrapper(self, mark.py_func)
        self.dispatcher, self.signatures, self.reason = mark, mark.signatures, reason
        self.py_func = mark.py_func
        self._warned = threading.Event()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.dispatcher.fallback != "python":
            raise CompileError([], rendered=self.reason)
        if not self._warned.is_set():
            self._warned.set()
            warn_user(f"{self.py_func.__qualname__} was not compiled, running the Python "
                      f"function:\n{self.reason}", RuntimeWarning)
        return self.py_func(*args, **kwargs)

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        """As a method, called with the instance first, as the original would be."""
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self) -> str:
        return (f"<cuvil_aot function {self.py_func.__module__}.{self.py_func.__qualname__} "
                "(not compiled)>")


def defaults_of(fn: Any) -> tuple[tuple[int, str, Any], ...]:
    """(position, name, value) of each parameter of ``fn`` with a default: a call that
    leaves one out gets it, as the Python function would."""
    return tuple((i, p.name, p.default)
                 for i, p in enumerate(inspect.signature(fn).parameters.values())
                 if p.default is not inspect.Parameter.empty)


def bind(module: types.ModuleType, ext: types.ModuleType,
         functions: Mapping[str, Marked] | None = None,
         refused: Mapping[str, str] | None = None) -> None:
    """Point the marked functions of ``module`` (default: all of them) at ``ext``, and
    those in ``refused`` (name -> the rendered diagnostics) at a ``Refused``.

    The module's globals (a method: its class's attribute) become CompiledFunction
    objects, whose calls go straight to the extension (vectorcall, no Python frame); each
    mark kept elsewhere (a Dispatcher imported by another module) forwards to the same
    object. The classes of instance arguments are handed to the extension, whose wrapper
    checks an instance's type against them."""
    from cuvil_aot.runtime.native import (  # type: ignore[attr-defined,import-untyped,unused-ignore]
        CompiledFunction,
    )

    refused = refused or {}
    class_names = getattr(ext, "_cv_classes", ())
    if class_names:
        ext._cv_set_classes(tuple(find_class(n, module) for n in class_names))
    for name, mark in (marked(module) if functions is None else functions).items():
        fast: Any
        if name in refused:
            fast = Refused(mark, refused[name])
        else:
            fallback = SignatureError if mark.fallback == "python" else None
            fast = CompiledFunction(getattr(ext, name), mark.py_func, fallback,
                                    defaults_of(mark.py_func))
            fast.dispatcher = mark
            fast.signatures = mark.signatures
        mark.compiled = fast
        owner, _, attr = name.rpartition(".")  # Class.method: the class's attribute
        setattr(getattr(module, owner) if owner else module, attr, fast)
