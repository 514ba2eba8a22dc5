"""np.array, np.asarray, np.asanyarray, np.ascontiguousarray and ``.astype``: of an array,
the array (asarray; cast where dtype= says) or a copy of it (np.array); of a number, a strongly
typed 0-d constant; of a nested list or tuple of numbers, the constant array NumPy makes
of it (values.literal_array: `mean = np.array([0.485, 0.456, 0.406])`); of one holding
arrays, those arrays stacked (`np.array([a, b])`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler
from cuvil_aot.compiler.frontend.handlers import copy as copy_of
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import dtype_arg, fold, is_number, literal_array
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.types import Dim, dtype_of


def _as_node(obj: Any, dtype: str | None, ctx: Ctx) -> Node:
    """NumPy's conversion of ``obj`` (an argument's own node where nothing converts it)."""
    if isinstance(obj, Node):
        return obj if dtype is None else C.cast(obj, dtype, ctx.span)
    if is_number(obj) or isinstance(obj, np.generic):
        value = np.asarray(fold(obj), dtype=dtype)  # NumPy's dtype of a lone number
        return B.const(value.item(), dtype_of(value.dtype), ctx.span)
    if isinstance(obj, list | tuple):
        return literal_array(obj, dtype, ctx.span)
    raise UserError(f"np.array of a {type(obj).__name__} is not supported", ctx.span,
                    "pass an array, a number or a list of numbers")


def _copied(ctx: Ctx, obj: Any, x: Node, copy: Any) -> Node:
    """A new array where NumPy makes one of an array (a cast to its own dtype is the array
    itself): writing it must not write ``obj``."""
    return copy_of(ctx, x) if x is obj and copy else x


def _with_ndmin(x: Node, ndmin: int, ctx: Ctx) -> Node:
    """NumPy's ndmin: ones prepended to the shape."""
    missing = int(ndmin) - len(x.shape)
    return x if missing <= 0 else C.reshape(x, (Dim.of(1),) * missing + x.shape, ctx.span)


def array(ctx: Ctx, obj: Any, dtype: Any = None, *, copy: Any = True, order: Any = "K",
          subok: bool = False, ndmin: int = 0) -> Node:
    x = _as_node(obj, None if dtype is None else dtype_arg(dtype, ctx.span), ctx)
    return _with_ndmin(_copied(ctx, obj, x, copy), ndmin, ctx)


def _converter(name: str) -> Handler:
    def handler(ctx: Ctx, a: Any, dtype: Any = None, order: Any = None, *, copy: Any = None,
                like: Any = None) -> Node:
        x = _as_node(a, None if dtype is None else dtype_arg(dtype, ctx.span), ctx)
        return _copied(ctx, a, x, copy)
    handler.__name__ = name
    return handler


def astype(ctx: Ctx, a: Node, dtype: Any, order: str = "K", casting: str = "unsafe",
           subok: bool = True, copy: bool = True) -> Node:
    """A copy, or with copy=False (order 'K') and the same dtype the array itself: a write
    through either name shows in both, as in NumPy. subok changes nothing seen here."""
    target = dtype_arg(dtype, ctx.span)
    if casting not in ("no", "equiv", "safe", "same_kind", "unsafe") or order not in "KACF" \
            or (copy is False and order != "K"):
        raise UserError(f"astype(casting={casting!r}, order={order!r}, copy={copy!r}) is not "
                        "supported", ctx.span, "casting='unsafe' ... 'no', order='K'")
    if not np.can_cast(a.dtype, target, casting):  # type: ignore[arg-type]
        raise UserError(f"TypeError: Cannot cast array data from dtype('{a.dtype}') to "
                        f"dtype('{target}') according to the rule '{casting}'", ctx.span)
    cast = C.cast(a, target, ctx.span)
    return copy_of(ctx, a) if cast is a and copy is not False else cast


FUNCTIONS: dict[Any, Handler] = {
    np.array: array, np.asarray: _converter("asarray"), np.asanyarray: _converter("asanyarray"),
    np.ascontiguousarray: _converter("ascontiguousarray"),
}

METHODS: dict[str, Handler] = {"astype": astype}
