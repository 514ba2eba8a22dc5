"""np.searchsorted and np.digitize on a sorted 1-D array, as counts: the index where v
goes in a sorted ``a`` is the number of elements before it, those less than v (side
"left") or not greater (side "right"), in NumPy's order, where NaN sorts last. Each v
compares with every element (a broadcast comparison and a sum: len(a) * v.size work,
small for the bin edges and tables models search), in NumPy's common dtype of the two
(a Python float is a float64 there: NumPy's PyArray_DescrFromObject, not NEP 50).

np.digitize(x, bins, right) is searchsorted(bins, x, side="left" if right else "right"),
or len(bins) minus it where the bins decrease; which way they go is decided per call from
the bins as NumPy's _monotonicity does (the first pair that differs sets the direction;
bins that are neither increasing nor decreasing, for which NumPy raises ValueError, get the
increasing answer: array data cannot raise at the call).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.composed import any_
from cuvil_aot.compiler.frontend.gather import gather
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import apply, fold, strong, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, TensorType, dtype_of, is_float, np_dtype

SIDES = ("left", "right")


def sorted_table(a: Any, name: str, ctx: Ctx) -> Node:
    """A 1-D array to search; others refused as NumPy refuses them."""
    table = to_node(a, ctx.span)
    if table.type.ndim == 0:
        raise UserError(f"ValueError: object of too small depth for desired array ({name})",
                        ctx.span)
    if table.type.ndim > 1:
        raise UserError(f"ValueError: object too deep for desired array ({name})", ctx.span,
                        f"a 1-D {name}")
    return table


def count_before(table: Node, v: Any, right: bool, ctx: Ctx) -> Node:
    """For each element of v, how many of ``table`` (1-D) sort before it: less than v
    (``right``: not greater), NaN greater than every number; int64 of v's shape."""
    values = strong(to_node(v, ctx.span))
    common = dtype_of(np.promote_types(np_dtype(table.dtype), np_dtype(values.dtype)))
    keys, items = C.cast(table, common, ctx.span), C.cast(values, common, ctx.span)
    column = C.reshape(items, (*items.shape, Dim.of(1)), ctx.span)
    before = _less(keys, column, ctx) if not right else \
        apply(Op.INVERT, [_less(column, keys, ctx)], ctx.span)
    counted = C.cast(before, "int64", ctx.span)
    return checked(B.reduce, Op.SUM, counted, (counted.type.ndim - 1,), False, ctx.span,
                   span=ctx.span)


def _less(p: Node, q: Node, ctx: Ctx) -> Node:
    """p < q in NumPy's sort order: NaN after every number (npy::less's rule)."""
    lt = apply(Op.LT, [p, q], ctx.span)
    if not is_float(p.dtype):
        return lt
    q_nan = apply(Op.NE, [q, q], ctx.span)
    p_number = apply(Op.EQ, [p, p], ctx.span)
    return apply(Op.OR, [lt, apply(Op.AND, [q_nan, p_number], ctx.span)], ctx.span)


def _side(side: Any, ctx: Ctx) -> bool:
    value = fold(side)
    if value not in SIDES:
        raise UserError(f"ValueError: side must be 'left' or 'right' (got {value!r})",
                        ctx.span, "side='left' or side='right' (a constant)")
    return bool(value == "right")


def searchsorted(ctx: Ctx, a: Any, v: Any, side: Any = "left", sorter: Any = None) -> Node:
    if sorter is not None:
        raise UserError("np.searchsorted's sorter= is not supported", ctx.span,
                        "np.searchsorted(np.take(a, sorter), v) (a sorted copy)")
    return count_before(sorted_table(a, "a", ctx), v, _side(side, ctx), ctx)


def _decreasing(bins: Node, ctx: Ctx) -> Node:
    """Whether NumPy's _monotonicity finds the bins decreasing (-1): compared as float64
    pairs, the first pair that differs is not rising, and no pair rises."""
    b = C.cast(bins, "float64", ctx.span)
    n = bins.shape[0]
    ramp = Node(Op.IOTA, TensorType("int64", (n,)), span=ctx.span)
    before = apply(Op.MAXIMUM, [apply(Op.SUB, [ramp, 1], ctx.span), 0], ctx.span)
    p = gather(b, [0], [before], [0], ctx.span)  # b[i - 1]; b[0] with itself first
    differs = apply(Op.AND, [apply(Op.NE, [p, b], ctx.span), apply(Op.GT, [ramp, 0], ctx.span)],
                    ctx.span)  # (a NaN differs from itself: no pair there)
    rises = apply(Op.LT, [p, b], ctx.span)
    seen = Node(Op.CUMSUM, TensorType("int64", (n,)), (C.cast(differs, "int64", ctx.span),),
                attrs=(0,), span=ctx.span)
    first = apply(Op.AND, [differs, apply(Op.EQ, [seen, 1], ctx.span)], ctx.span)
    first_rises = any_(ctx, apply(Op.AND, [first, rises], ctx.span))
    none_rise = apply(Op.INVERT, [any_(ctx, rises)], ctx.span)
    some_differ = any_(ctx, differs)
    return apply(Op.AND, [apply(Op.AND, [some_differ, none_rise], ctx.span),
                          apply(Op.INVERT, [first_rises], ctx.span)], ctx.span)


def digitize(ctx: Ctx, x: Any, bins: Any, right: Any = False) -> Node:
    flag = fold(right)
    if not isinstance(flag, bool | np.bool_ | int):
        raise UserError("np.digitize's right must be known at compile time", ctx.span,
                        "right=True or right=False")
    edges = sorted_table(bins, "bins", ctx)
    values = to_node(x, ctx.span)
    rising = count_before(edges, values, not flag, ctx)
    if edges.shape[0].is_static and edges.shape[0].value <= 1:
        return rising  # NumPy: increasing
    length = C.cast(to_node(edges.shape[0], ctx.span), "int64", ctx.span)
    falling = apply(Op.SUB, [length, rising], ctx.span)
    return apply(Op.WHERE, [_decreasing(edges, ctx), falling, rising], ctx.span)


FUNCTIONS: dict[Any, Handler] = {np.searchsorted: searchsorted, np.digitize: digitize}
