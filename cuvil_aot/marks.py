"""What a mark is: the dtype/shape annotations and the marked-function record.

Base vocabulary: the compiler reads marks (signatures, the original function), the
loader finds them in a module, and ``api.Dispatcher`` adds the call behaviour on top.
Nothing here imports the rest of cuvil_aot.
"""

from __future__ import annotations

import functools
import sys
import types
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

    def __or__(self, other: None) -> OptionalType:
        return _or_none(ArrayType(self, ()), other)

    __ror__ = __or__


class ArrayType:
    """An annotation: dtype plus dims, each an int, a symbol ("B") or an expression ("4H")."""

    def __init__(self, dtype: DType, dims: tuple[Any, ...]):
        self.dtype = dtype
        self.dims = dims

    def __repr__(self) -> str:
        return f"{self.dtype.short}[{','.join(str(d) for d in self.dims)}]"

    def __or__(self, other: None) -> OptionalType:
        return _or_none(self, other)

    __ror__ = __or__


class OptionalType:
    """``cv.f32["N"] | None``: an array (or number) argument that may be None instead (a
    mask, a bias). Each such argument doubles the versions compiled: one where it is None,
    one where not."""

    def __init__(self, inner: Any):
        self.inner = inner

    def __repr__(self) -> str:
        return f"{self.inner!r} | None"


def _or_none(inner: ArrayType, other: object) -> OptionalType:
    if other is not None:
        return NotImplemented  # type: ignore[no-any-return]
    return OptionalType(inner)


f16 = DType("f16", "float16")
# bfloat16: NumPy arrays of ml_dtypes.bfloat16 (the optional extra "bf16"), computed in float32
bf16 = DType("bf16", "bfloat16")
f32 = DType("f32", "float32")
f64 = DType("f64", "float64")
i8 = DType("i8", "int8")
i16 = DType("i16", "int16")
i32 = DType("i32", "int32")
i64 = DType("i64", "int64")
u8 = DType("u8", "uint8")
u64 = DType("u64", "uint64")
bool_ = DType("bool_", "bool")
ARRAY_DTYPES = (f16, bf16, f32, f64, i8, i16, i32, i64, u8, u64, bool_)  # every annotation dtype


def like(value: Any, path: str = "value") -> Any:
    """The signature type of ``value``: an array's dtype and shape (its sizes fixed), a
    Python float, int or bool's type, and dicts, lists and tuples of them item by item:
    ``blocks: cv.like(params["blocks"])`` declares picoGPT's layers as they load.
    NumPy, PyTorch and CuPy arrays alike (their ``dtype`` and ``shape``)."""
    if isinstance(value, dict):
        return {k: like(v, f"{path}[{k!r}]") for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [like(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, bool | int | float):
        return type(value)
    name = str(getattr(value, "dtype", "")).removeprefix("torch.")
    found = [d for d in ARRAY_DTYPES if d.np_dtype == name]
    if not found or not hasattr(value, "shape"):
        raise TypeError(f"cv.like: {path} is a {type(value).__name__}, not an array of "
                        f"{', '.join(d.np_dtype for d in ARRAY_DTYPES)}, a number or a dict or "
                        "list of them")
    return found[0][tuple(int(d) for d in value.shape)]


FALLBACKS = (None, "python")
# What a function's matmuls read (README, "Precision"): their operands rounded to TF32,
# bfloat16 or float16, accumulated in float32; fp32 rounds nothing
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")


class Marked:
    """A function marked for compilation: the original, its signatures, its fallback, the
    precision of its matmuls, and the compiled code once bound (set by the runtime's
    binding)."""

    def __init__(self, fn: Callable[..., Any], signatures: Sequence[str] | None,
                 fallback: str | None, precision: str = "fp32"):
        if fallback not in FALLBACKS:
            raise ValueError(f"fallback must be None or 'python', got {fallback!r}")
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(map(repr, PRECISIONS))}, "
                             f"got {precision!r}")
        functools.update_wrapper(cast(Any, self), fn)
        self.py_func = cast(types.FunctionType, fn)
        self.signatures = tuple(signatures) if signatures is not None else None
        self.fallback = fallback
        self.precision = precision
        self.compiled: Callable[..., Any] | None = None
        self.owner: type | None = None  # a method's class

    def __set_name__(self, owner: type, name: str) -> None:
        self.owner = owner


def as_marked(value: object) -> object:
    """A global bound to compiled code (a CompiledFunction) counts through its mark."""
    return getattr(value, "dispatcher", value) if not isinstance(value, types.ModuleType) else value


def marked(module: types.ModuleType) -> dict[str, Marked]:
    """The marked functions defined in ``module``, by the global name they are bound to
    (a method of a class at its top level by ``Class.method``), in file order; a global
    already bound to compiled code counts through its mark."""
    found = {}
    for name, value in vars(module).items():
        value = as_marked(value)
        if isinstance(value, Marked) and value.py_func.__module__ == module.__name__:
            found[name] = value
        if isinstance(value, type) and value.__module__ == module.__name__ \
                and value.__qualname__ == name:
            for attr, member in vars(value).items():
                member = as_marked(member)
                if isinstance(member, Marked) and member.owner is value:
                    found[f"{name}.{attr}"] = member
    return dict(sorted(found.items(), key=lambda kv: kv[1].py_func.__code__.co_firstlineno))


def find_class(name: str, module: types.ModuleType | None = None) -> type:
    """The class a `Struct.cls` names ("module:qualname"): in ``module`` where that is its
    home (a module being bound, perhaps not yet in `sys.modules`), else in its loaded module."""
    home, _, qualname = name.partition(":")
    value: Any = module if module is not None and home == module.__name__ else sys.modules[home]
    for part in qualname.split("."):
        value = getattr(value, part)
    return value  # type: ignore[no-any-return]
