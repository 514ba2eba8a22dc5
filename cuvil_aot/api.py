"""The user-facing API: ``optimize`` and the dtype/shape annotations."""

from __future__ import annotations

import functools
import sys
import threading
import types
import warnings
from collections.abc import Callable, Sequence
from typing import Any, cast


class DType:
    """An array dtype for annotations: ``cv.f32["B", 128]`` is a float32 array of shape (B, 128)."""

    def __init__(self, short: str, np_dtype: str):
        self.short = short
        self.np_dtype = np_dtype

    def __getitem__(self, dims: Any) -> ArrayType:
        return ArrayType(self, dims if isinstance(dims, tuple) else (dims,))

    def __repr__(self) -> str:
        return f"cv.{self.short}"


class ArrayType:
    """An annotation: dtype plus dims, each an int, a symbol ("B") or an expression ("4H")."""

    def __init__(self, dtype: DType, dims: tuple[Any, ...]):
        self.dtype = dtype
        self.dims = dims

    def __repr__(self) -> str:
        return f"{self.dtype.short}[{','.join(str(d) for d in self.dims)}]"


f16 = DType("f16", "float16")
f32 = DType("f32", "float32")
f64 = DType("f64", "float64")
i32 = DType("i32", "int32")
i64 = DType("i64", "int64")
bool_ = DType("bool_", "bool")

FALLBACKS = (None, "python")


class Dispatcher:
    """A marked function. Calls run its compiled code; ``py_func`` is the original.

    Without the import hook the module is compiled at the first call (lazy mode).
    """

    def __init__(self, fn: Callable[..., Any], signatures: Sequence[str] | None,
                 fallback: str | None):
        if fallback not in FALLBACKS:
            raise ValueError(f"fallback must be None or 'python', got {fallback!r}")
        functools.update_wrapper(self, fn)
        self.py_func = cast(types.FunctionType, fn)
        self.signatures = tuple(signatures) if signatures is not None else None
        self.fallback = fallback
        self.compiled: Callable[..., Any] | None = None
        self._warned = False
        self._lock = threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        compiled = self.compiled
        if compiled is None:
            compiled = self._compile()
        if self.fallback is None:
            return compiled(*args, **kwargs)
        from cuvil_aot.errors import SignatureError

        try:
            return compiled(*args, **kwargs)
        except SignatureError as exc:
            if not self._warned:
                self._warned = True
                warnings.warn(f"{self.py_func.__qualname__}: no compiled signature matches, "
                              f"running the Python function ({exc})", RuntimeWarning,
                              stacklevel=2)
            return self.py_func(*args, **kwargs)

    def _compile(self) -> Callable[..., Any]:
        from cuvil_aot import artifacts  # a cache hit needs no compiler import

        module = sys.modules[self.py_func.__module__]
        artifacts.ensure_bound(module)
        if self.compiled is None:
            raise RuntimeError(f"{self.py_func.__qualname__} was not bound when its module "
                               "was compiled")
        return self.compiled

    def __repr__(self) -> str:
        return f"<cuvil_aot function {self.py_func.__module__}.{self.py_func.__qualname__}>"


def optimize(fn: Callable[..., Any] | None = None, *, signatures: Sequence[str] | None = None,
             fallback: str | None = None) -> Any:
    """Mark ``fn`` for compilation, as ``@optimize`` or ``@optimize(signatures=[...])``."""
    if isinstance(signatures, str):
        signatures = [signatures]

    def wrap(f: Callable[..., Any]) -> Dispatcher:
        return Dispatcher(f, signatures, fallback)

    return wrap(fn) if fn is not None else wrap
