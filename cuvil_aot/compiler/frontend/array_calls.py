"""np.array, np.asarray, np.asanyarray and np.ascontiguousarray: of an array, the array
(asarray; cast where dtype= says) or a copy of it (np.array); of a number, a strongly
typed 0-d constant; of a nested list or tuple of numbers, the constant array NumPy makes
of it (values.literal_array: `mean = np.array([0.485, 0.456, 0.406])`)."""

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


def _as_node(obj: Any, dtype: str | None, ctx: Ctx) -> tuple[Node, bool]:
    """(the array, whether it is the argument's own node): NumPy's conversion of ``obj``."""
    if isinstance(obj, Node):
        return (obj if dtype is None else C.cast(obj, dtype, ctx.span)), dtype is None
    if is_number(obj) or isinstance(obj, np.generic):
        value = np.asarray(fold(obj), dtype=dtype)  # NumPy's dtype of a lone number
        return B.const(value.item(), dtype_of(value.dtype), ctx.span), False
    if isinstance(obj, list | tuple):
        return literal_array(obj, dtype, ctx.span), False
    raise UserError(f"np.array of a {type(obj).__name__} is not supported", ctx.span,
                    "pass an array, a number or a list of numbers")


def _with_ndmin(x: Node, ndmin: int, ctx: Ctx) -> Node:
    """NumPy's ndmin: ones prepended to the shape."""
    missing = int(ndmin) - len(x.shape)
    return x if missing <= 0 else C.reshape(x, (Dim.of(1),) * missing + x.shape, ctx.span)


def array(ctx: Ctx, obj: Any, dtype: Any = None, *, copy: Any = True, order: Any = "K",
          subok: bool = False, ndmin: int = 0) -> Node:
    kind = None if dtype is None else dtype_arg(dtype, ctx.span)
    x, own = _as_node(obj, kind, ctx)
    x = _with_ndmin(x, ndmin, ctx)
    return copy_of(ctx, x) if own and copy is not False else x


def _converter(name: str) -> Handler:
    def handler(ctx: Ctx, a: Any, dtype: Any = None, order: Any = None, **_: Any) -> Node:
        return _as_node(a, None if dtype is None else dtype_arg(dtype, ctx.span), ctx)[0]
    handler.__name__ = name
    return handler


FUNCTIONS: dict[Any, Handler] = {
    np.array: array, np.asarray: _converter("asarray"), np.asanyarray: _converter("asanyarray"),
    np.ascontiguousarray: _converter("ascontiguousarray"),
}
