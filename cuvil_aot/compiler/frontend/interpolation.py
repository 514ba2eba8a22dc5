"""np.interp(x, xp, fp, left, right) for 1-D increasing xp, NumPy's C loop
(numpy/_core/src/multiarray/compiled_base.c, arr_interp) element by element, in float64:

    j = the last index with xp[j] <= x (searchsorted.count_before, side "right", minus 1)
    x NaN                    -> x
    j == -1 (x < xp[0])      -> left (fp[0] by default)
    x > xp[-1]               -> right (fp[-1] by default)
    j == len(xp) - 1         -> fp[j]
    xp[j] == x               -> fp[j]
    else slope = (fp[j+1] - fp[j]) / (xp[j+1] - xp[j]),
         slope * (x - xp[j]) + fp[j]; if NaN, slope * (x - xp[j+1]) + fp[j+1];
         if NaN again and fp[j] == fp[j+1], fp[j]

and for one sample point x < xp[0] ? left : x > xp[0] ? right : fp[0] (a NaN x too). Each
product is stored (rounded.stored) before its addition: a fused multiply-add rounds once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend.gather import gather
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler
from cuvil_aot.compiler.frontend.rounded import stored
from cuvil_aot.compiler.frontend.searchsorted import count_before, sorted_table
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import apply, strong, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim


def _lengths(xp: Node, fp: Node, ctx: Ctx) -> None:
    """NumPy's ValueErrors: no sample points, or xp and fp of different lengths."""
    n, m = xp.shape[0], fp.shape[0]
    if n.is_static and m.is_static and n.value != m.value:
        raise UserError("ValueError: fp and xp are not of the same length.", ctx.span)
    if n.is_static and n.value == 0:
        raise UserError("ValueError: array of sample points is empty", ctx.span)
    if not n.known_positive():
        ctx.requirements.append((n - 1, C.Raises("ValueError",
                                                 ("array of sample points is empty",))))
    if not C.same(n, m):
        for need in (n - m, m - n):
            ctx.requirements.append((need, C.Raises("ValueError", (
                "fp and xp are not of the same length.",))))


def _bound(value: Any, default: Node, ctx: Ctx) -> Node:
    if value is None:
        return default
    bound = C.cast(to_node(value, ctx.span), "float64", ctx.span)
    if bound.shape:
        raise UserError("np.interp's left and right must be numbers (0-d)", ctx.span,
                        "left=0.0")
    return bound


def interp(ctx: Ctx, x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Node:
    if period is not None:
        raise UserError("np.interp's period= is not supported", ctx.span,
                        "x % period (then the points of one period, extended at both ends)")
    points = C.cast(sorted_table(xp, "xp", ctx), "float64", ctx.span)
    values = C.cast(sorted_table(fp, "fp", ctx), "float64", ctx.span)
    if values.dtype != "float64":
        raise UserError("np.interp of complex fp is not supported", ctx.span)
    _lengths(points, values, ctx)
    at = C.cast(strong(to_node(x, ctx.span)), "float64", ctx.span)
    n = C.cast(to_node(points.shape[0], ctx.span), "int64", ctx.span)
    last = apply(Op.SUB, [n, 1], ctx.span)

    def take(table: Node, index: Any) -> Node:
        return gather(table, [0], [C.cast(to_node(index, ctx.span), "int64", ctx.span)], [0],
                      ctx.span)

    low = _bound(left, take(values, 0), ctx)
    high = _bound(right, take(values, last), ctx)
    j = apply(Op.SUB, [count_before(points, at, True, ctx), 1], ctx.span)
    # the interval's ends, clipped into the table (the other cases pick other values)
    k = apply(Op.MINIMUM, [apply(Op.MAXIMUM, [j, 0], ctx.span),
                           apply(Op.MAXIMUM, [apply(Op.SUB, [n, 2], ctx.span), 0], ctx.span)],
              ctx.span)
    k1 = apply(Op.MINIMUM, [apply(Op.ADD, [k, 1], ctx.span), last], ctx.span)
    x0, x1, y0, y1 = take(points, k), take(points, k1), take(values, k), take(values, k1)
    slope = apply(Op.DIV, [apply(Op.SUB, [y1, y0], ctx.span),
                           apply(Op.SUB, [x1, x0], ctx.span)], ctx.span)

    def line(xk: Node, yk: Node) -> Node:
        return apply(Op.ADD, [stored(apply(Op.MUL, [slope, apply(Op.SUB, [at, xk], ctx.span)],
                                           ctx.span), ctx), yk], ctx.span)

    first, second = line(x0, y0), line(x1, y1)
    out = apply(Op.WHERE, [_is_nan(first, ctx), apply(Op.WHERE, [
        apply(Op.AND, [_is_nan(second, ctx), apply(Op.EQ, [y0, y1], ctx.span)], ctx.span),
        y0, second], ctx.span), first], ctx.span)
    for case, value in ((apply(Op.EQ, [x0, at], ctx.span), y0),
                        (apply(Op.EQ, [j, last], ctx.span), take(values, last)),
                        (apply(Op.GT, [at, take(points, last)], ctx.span), high),
                        (apply(Op.EQ, [j, -1], ctx.span), low),
                        (_is_nan(at, ctx), at)):
        out = apply(Op.WHERE, [case, value, out], ctx.span)
    x_first = take(points, 0)
    single = apply(Op.WHERE, [apply(Op.LT, [at, x_first], ctx.span), low, apply(
        Op.WHERE, [apply(Op.GT, [at, x_first], ctx.span), high, take(values, 0)], ctx.span)],
        ctx.span)
    if points.shape[0] == Dim.of(1):
        return single
    return apply(Op.WHERE, [apply(Op.EQ, [n, 1], ctx.span), single, out], ctx.span)


def _is_nan(v: Node, ctx: Ctx) -> Node:
    return apply(Op.NE, [v, v], ctx.span)


FUNCTIONS: dict[Any, Handler] = {np.interp: interp}
