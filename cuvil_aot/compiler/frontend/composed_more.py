"""More NumPy functions that are compositions of the IR's operations, each as NumPy's own
Python or C code computes it (its dtypes from NumPy's own call on stand-in arrays):

- np.select: the default, then each choice where its condition holds, the first
  condition winning (NumPy's copyto from the last to the first);
- np.divmod (floor_divide and remainder) and np.modf (C's modf: the fraction with the
  sign of x, 0 with its sign for an infinity; the integral part trunc(x));
- np.sinc (NumPy's sin(pi y) / (pi y) with y = 1e-20 at 0), np.polyval (Horner's rule
  from zeros_like(x), the coefficients as NumPy scalars of their array's dtype) and
  np.trapezoid (the trapezoids' mean heights times dx or diff(x), summed);
- np.shape, np.ndim and np.size: the array's own facts, as its attributes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.composed import diff, isinf_of, sliced, toward_zero
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler
from cuvil_aot.compiler.frontend.shapes import axis_of
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import apply, fold, is_number, strong, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, dtype_of, np_dtype


def _stand_in(v: Any) -> Any:
    """A value NumPy's own call types as it types ``v``: a number as it is, an array as a
    one-element array of its dtype and rank."""
    if isinstance(v, Node):
        return np.zeros((1,) * v.type.ndim, np_dtype(v.dtype))
    return fold(v)


def select(ctx: Ctx, condlist: Any, choicelist: Any, default: Any = 0) -> Node:
    if not isinstance(condlist, list | tuple) or not isinstance(choicelist, list | tuple):
        raise UserError("np.select's condlist and choicelist must be lists", ctx.span)
    if len(condlist) != len(choicelist):
        raise UserError("ValueError: list of cases must be same length as list of conditions",
                        ctx.span)
    if not condlist:
        raise UserError("ValueError: select with an empty condition list is not possible",
                        ctx.span)
    conds = [to_node(c, ctx.span) for c in condlist]
    for i, cond in enumerate(conds):
        if cond.dtype != "bool":
            raise UserError(f"TypeError: invalid entry {i} in condlist: should be boolean "
                            "ndarray", ctx.span)
    try:
        dtype = dtype_of(np.select([np.zeros(1, bool)] * len(conds),
                                   [_stand_in(v) for v in choicelist], _stand_in(default)).dtype)
    except TypeError as exc:
        raise UserError(f"TypeError: {exc}", ctx.span) from None
    out = C.cast(strong(to_node(default, ctx.span)), dtype, ctx.span)
    for cond, choice in reversed(list(zip(conds, choicelist))):
        value = C.cast(strong(to_node(choice, ctx.span)), dtype, ctx.span)
        out = apply(Op.WHERE, [cond, value, out], ctx.span)
    shape = checked(B.broadcast_all, [out.shape] + [c.shape for c in conds] +
                    [to_node(v, ctx.span).shape for v in choicelist], ctx.span, span=ctx.span)
    return checked(B.broadcast_to, out, shape, ctx.span, span=ctx.span)


def divmod_(ctx: Ctx, x1: Any, x2: Any, /) -> tuple[Any, Any]:
    if is_number(x1) and is_number(x2):
        return tuple(np.divmod(fold(x1), fold(x2)))
    return (apply(Op.FLOORDIV, [x1, x2], ctx.span), apply(Op.MOD, [x1, x2], ctx.span))


def modf(ctx: Ctx, x: Any, /) -> tuple[Any, Any]:
    if is_number(x):
        return tuple(np.modf(fold(x)))
    node = to_node(x, ctx.span)
    dtype = dtype_of(np.modf(_stand_in(node))[0].dtype)
    v = C.cast(node, dtype, ctx.span)
    whole = toward_zero(v, ctx)
    fraction = apply(Op.COPYSIGN, [apply(Op.SUB, [v, whole], ctx.span), v], ctx.span)
    zero = apply(Op.COPYSIGN, [0.0, v], ctx.span)
    return strong(apply(Op.WHERE, [isinf_of(v, ctx), zero, fraction], ctx.span)), strong(whole)


def sinc(ctx: Ctx, x: Any) -> Any:
    if is_number(x):
        return np.sinc(fold(x))
    v = to_node(x, ctx.span)
    y = apply(Op.MUL, [math.pi, apply(Op.WHERE, [apply(Op.EQ, [v, 0], ctx.span), 1.0e-20, v],
                                      ctx.span)], ctx.span)
    return strong(apply(Op.DIV, [apply(Op.SIN, [y], ctx.span), y], ctx.span))


def polyval(ctx: Ctx, p: Any, x: Any) -> Node:
    if isinstance(p, Node):
        if p.type.ndim != 1 or not p.shape[0].is_static:
            raise UserError("np.polyval's coefficients must be a 1-D array of a length known "
                            "at compile time", ctx.span)
        coefficients = [strong(_element(p, i, ctx)) for i in range(p.shape[0].value)]
    else:
        values = np.asarray([fold(c) for c in p] if isinstance(p, list | tuple) else fold(p))
        if values.ndim != 1 or values.dtype.name not in ("bool", "int64", "float64"):
            raise UserError("np.polyval's coefficients must be numbers or a 1-D array",
                            ctx.span)
        coefficients = [B.const(c.item(), values.dtype.name, ctx.span) for c in values]
    v = to_node(x, ctx.span)
    y = checked(B.broadcast_to, B.const(0, v.dtype, ctx.span), v.shape, ctx.span,
                span=ctx.span)  # zeros_like(x): not x * 0, which is NaN at inf
    for c in coefficients:
        y = apply(Op.ADD, [apply(Op.MUL, [y, v], ctx.span), c], ctx.span)
    return strong(y)


def _element(p: Node, i: int, ctx: Ctx) -> Node:
    return C.reshape(sliced(p, {0: slice(i, i + 1)}, ctx), (), ctx.span)


def trapezoid(ctx: Ctx, y: Any, x: Any = None, dx: Any = 1.0, axis: Any = -1) -> Node:
    values = to_node(y, ctx.span)
    ax = axis_of(values, axis, ctx)
    if x is None:
        d: Any = dx
    else:
        spacing = to_node(x, ctx.span)
        d = diff(ctx, spacing, 1, -1 if spacing.type.ndim == 1 else ax)
        if spacing.type.ndim == 1:  # along axis, broadcast over the others
            d = C.reshape(d, tuple(d.shape[0] if a == ax else Dim.of(1)
                                   for a in range(values.type.ndim)), ctx.span)
    upper, lower = sliced(values, {ax: slice(1, None)}, ctx), \
        sliced(values, {ax: slice(None, -1)}, ctx)
    heights = apply(Op.DIV, [apply(Op.MUL, [d, apply(Op.ADD, [upper, lower], ctx.span)],
                                   ctx.span), 2.0], ctx.span)
    return checked(B.reduce, Op.SUM, heights, (ax,), False, ctx.span, span=ctx.span)


def shape(ctx: Ctx, a: Any) -> tuple[Any, ...]:
    return tuple(fold(d) for d in to_node(a, ctx.span).shape)


def ndim(ctx: Ctx, a: Any) -> int:
    return to_node(a, ctx.span).type.ndim


def size(ctx: Ctx, a: Any, axis: int | None = None) -> Any:
    x = to_node(a, ctx.span)
    return fold(C.total(x.shape) if axis is None else x.shape[axis_of(x, axis, ctx)])


FUNCTIONS: dict[Any, Handler] = {
    np.shape: shape, np.ndim: ndim, np.size: size,
    np.select: select, np.divmod: divmod_, np.modf: modf, np.sinc: sinc, np.polyval: polyval,
    np.trapezoid: trapezoid,
}
