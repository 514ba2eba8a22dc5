"""The user-facing API: ``optimize``, the marked function's call, ``compile_module``."""

from __future__ import annotations

import linecache
import sys
import threading
import types
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from cuvil_aot.errors import Diagnostic, SignatureError, SourceSpan
from cuvil_aot.marks import PRECISIONS, Marked

if TYPE_CHECKING:
    from cuvil_aot.load.builder import LoadableArtifact


class Dispatcher(Marked):
    """A marked function. Calls run its compiled code; ``py_func`` is the original.

    Without the import hook the module is compiled at the first call (lazy mode).
    """

    def __init__(self, fn: Callable[..., Any], signatures: Sequence[str] | None,
                 fallback: str | None, precision: str = "fp32"):
        super().__init__(fn, signatures, fallback, precision)
        self._warned = False
        self._lock = threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        compiled = self.compiled
        if compiled is None:
            compiled = self._compile()
        if self.fallback is None:
            return compiled(*args, **kwargs)
        try:
            return compiled(*args, **kwargs)
        except SignatureError as exc:
            if not self._warned:
                self._warned = True
                warnings.warn(f"{self.py_func.__qualname__}: no compiled signature matches, "
                              f"running the Python function ({exc})", RuntimeWarning,
                              stacklevel=2)
            return self.py_func(*args, **kwargs)

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        """As a method, called with the instance first, as the original would be."""
        return self if obj is None else types.MethodType(self, obj)

    def _compile(self) -> Callable[..., Any]:
        from cuvil_aot import knobs
        from cuvil_aot.load import artifacts  # a cache hit needs no compiler import
        from cuvil_aot.runtime.binding import Refused

        qualname = self.py_func.__qualname__
        if "<locals>" in qualname or qualname.count(".") > (self.owner is not None):
            # a def inside a function, a method of a nested class, a static method
            self.compiled = Refused(self, not_module_level(self.py_func).render())
            return self.compiled
        module = sys.modules[self.py_func.__module__]
        artifacts.ensure_bound(module, artifacts.Settings.from_knobs(knobs.read()))
        if self.compiled is None:
            raise RuntimeError(f"{self.py_func.__qualname__} was not bound when its module "
                               "was compiled")
        return self.compiled

    def __repr__(self) -> str:
        return f"<cuvil_aot function {self.py_func.__module__}.{self.py_func.__qualname__}>"


def not_module_level(fn: types.FunctionType) -> Diagnostic:
    """Why a method or a function defined inside another is not compiled (a module's build
    compiles the functions at its top level), at its ``def`` line, with what to write."""
    code, name = fn.__code__, fn.__qualname__
    line = code.co_firstlineno  # its first decorator's line: the def follows
    while (text := linecache.getline(code.co_filename, line)) and \
            not text.lstrip().startswith(("def ", "async def ")):
        line += 1
    col = len(text) - len(text.lstrip())
    span = SourceSpan(code.co_filename, line, col, line, col + len(f"def {fn.__name__}"),
                      text.rstrip("\n")) if text else None
    if "<locals>" in name:
        return Diagnostic(span, f"{name} is defined inside another function; cuvil_aot "
                          "compiles the functions a module defines at its top level",
                          f"define {fn.__name__} at the module's top level and pass it what "
                          "it reads from the enclosing function as arguments")
    owner = name.rsplit(".", 1)[0]
    return Diagnostic(span, f"{name} is a static method or a method of a nested class "
                      f"({owner}); cuvil_aot compiles the functions and the methods of the "
                      "classes a module defines at its top level",
                      f"a method of a class at the top level, or a module-level function "
                      f"`def {fn.__name__}(...)` called from it")


def optimize(fn: Callable[..., Any] | None = None, *, signatures: Sequence[str] | None = None,
             fallback: str | None = None, precision: str = "fp32") -> Any:
    """Mark ``fn`` for compilation, as ``@optimize`` or ``@optimize(signatures=[...])``.

    ``precision`` decides what its float32 matmuls read: "fp32" (the default) the operands
    as they are; "tf32", "bf16", "fp16" the operands rounded to that type, accumulated and
    finished (epilogues) in float32. Result dtypes stay NumPy's for the code as written.
    """
    if isinstance(signatures, str):
        signatures = [signatures]
    if precision not in PRECISIONS:  # at the decorator, not at the first call
        raise ValueError(f"optimize(): precision must be one of "
                         f"{', '.join(map(repr, PRECISIONS))}, got {precision!r}")

    def wrap(f: Callable[..., Any]) -> Dispatcher:
        return Dispatcher(f, signatures, fallback, precision)

    return wrap(fn) if fn is not None else wrap


def compile_module(module: types.ModuleType, **options: Any) -> LoadableArtifact:
    """Compile every marked function of ``module`` into one extension.

    Returns an artifact; ``artifact.load()`` imports it and binds the functions. A function
    the compiler refused is left out (``artifact.refused`` says why): once loaded, calling
    it raises that CompileError, or with ``fallback="python"`` runs the original.
    """
    from cuvil_aot import knobs
    from cuvil_aot.load import builder
    from cuvil_aot.load.settings import Settings
    from cuvil_aot.options import Options

    return builder.compile_module(module, Settings.from_knobs(knobs.read(), Options(**options)))
