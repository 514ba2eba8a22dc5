"""np.linalg.norm: vector norms and the matrix norms that need no decomposition; np.outer.

NumPy's ``norm`` is Python; this handler follows its source branch by branch (NumPy
2.x, ``numpy/linalg/_linalg.py``), so results and dtypes are its own:

- integers and booleans are computed in float64 (NumPy casts them to float);
- ``axis=None`` with ``ord=None`` (any rank), ``'fro'`` (2-D) or ``2`` (1-D):
  ``sqrt(sum(x * x))`` over every axis;
- one axis (an int, or ``axis=None`` on a 1-D array): ``inf``: ``max|x|`` (0 over no
  elements, NumPy's ``initial=0``), ``-inf``: ``min|x|``, ``0``: the count of
  nonzeros, ``1``: ``sum|x|``, ``None``/``2``: ``sqrt(sum(x * x))``, another number p:
  ``sum(|x| ** p) ** (1 / p)`` with ``1 / p`` rounded to the result dtype first;
- two axes (a 2-tuple, or ``axis=None`` on a 2-D array): ``'fro'``, and the largest
  (``1``, ``inf``) or smallest (``-1``, ``-inf``) column or row sum of ``|x|``.

``ord`` 2, -2 and ``'nuc'`` of a matrix need its singular values: refused.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import apply, fold, strong, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, TensorType, is_float
from cuvil_aot.errors import SourceSpan

Order = None | str | int | float
MATRIX_ORDERS = "ord=None, 'fro', 1, -1, np.inf or -np.inf"


def _is(order: Order, value: float) -> bool:
    """``order == value`` as NumPy tests it (a string equals no number)."""
    return order is not None and not isinstance(order, str) and order == value


# Arguments --------------------------------------------------------------------------------

def order_arg(order: Any, ctx: Ctx) -> Order:
    order = fold(order)
    if isinstance(order, np.generic):
        order = order.item()
    if order is None or isinstance(order, str | int | float):
        return order
    raise UserError("np.linalg.norm's ord must be None, a string or a number known at "
                    "compile time", ctx.span, "ord=2, ord=np.inf, ord='fro'")


def axes_arg(axis: Any, ndim: int, ctx: Ctx) -> tuple[int, ...]:
    """The normed axes, each in range (NumPy's errors for those out of range)."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, tuple) else (axis,)
    items = tuple(fold(a) for a in items)
    if not all(isinstance(a, int | np.integer) and not isinstance(a, bool) for a in items):
        raise UserError("'axis' must be None, an integer or a tuple of integers known at "
                        "compile time", ctx.span)
    axes = tuple(checked(B.normalize_axes, (int(a),), ndim, span=ctx.span)[0] for a in items)
    if len(axes) == 2 and axes[0] == axes[1]:
        raise UserError("Duplicate axes given.", ctx.span)
    return axes


def as_float(x: Any, span: SourceSpan) -> Node:
    node = strong(to_node(x, span))
    return node if is_float(node.dtype) else C.cast(node, "float64", span)


# Building blocks ----------------------------------------------------------------------------

def _sum(x: Node, axes: tuple[int, ...], keepdims: bool, span: SourceSpan) -> Node:
    if not axes:  # a 0-d array: NumPy's reduction over no axes is the value itself
        return x
    return B.reduce(Op.SUM, x, axes, keepdims, span)


def root_sum_squares(x: Node, axes: tuple[int, ...], keepdims: bool, span: SourceSpan) -> Node:
    return apply(Op.SQRT, [_sum(apply(Op.MUL, [x, x], span), axes, keepdims, span)], span)


def padded_with_zero(x: Node, axis: int, span: SourceSpan) -> Node:
    """``x`` with a row of zeros appended along ``axis`` where that axis may be empty: a
    max over it is then NumPy's ``max(initial=0)`` of ``x >= 0`` (the zeros go in before
    any sum, since a reduction feeding a concatenate does not fuse)."""
    if x.shape[axis].is_static and x.shape[axis].value > 0:
        return x
    slab = tuple(Dim.of(1) if i == axis else d for i, d in enumerate(x.shape))
    zeros = Node(Op.BROADCAST, TensorType(x.dtype, slab), (B.const(0, x.dtype, span),),
                 span=span)
    return B.concat([x, zeros], axis, span)


# Norms ----------------------------------------------------------------------------------------

def vector_norm(x: Node, axis: int, order: Order, keepdims: bool, span: SourceSpan) -> Node:
    axes = (axis,)
    if _is(order, math.inf):
        magnitudes = padded_with_zero(apply(Op.ABS, [x], span), axis, span)
        return B.reduce(Op.MAX, magnitudes, axes, keepdims, span)
    if _is(order, -math.inf):
        return B.reduce(Op.MIN, apply(Op.ABS, [x], span), axes, keepdims, span)
    if _is(order, 0):
        nonzero = C.cast(apply(Op.NE, [x, 0], span), x.dtype, span)
        return B.reduce(Op.SUM, nonzero, axes, keepdims, span)
    if _is(order, 1):
        return B.reduce(Op.SUM, apply(Op.ABS, [x], span), axes, keepdims, span)
    if order is None or _is(order, 2):
        return root_sum_squares(x, axes, keepdims, span)
    if isinstance(order, str):
        raise UserError(f"Invalid norm order '{order}' for vectors", span,
                        "ord=None, a number, np.inf or -np.inf")
    powers = apply(Op.POW, [apply(Op.ABS, [x], span), order], span)
    total = B.reduce(Op.SUM, powers, axes, keepdims, span)
    inverse = np.reciprocal(order, dtype=total.dtype)  # NumPy rounds 1/p to the dtype
    return apply(Op.POW, [total, inverse], span)


def matrix_norm(x: Node, axes: tuple[int, ...], order: Order, keepdims: bool,
                span: SourceSpan) -> Node:
    if order == "nuc" or _is(order, 2) or _is(order, -2):
        raise UserError(f"np.linalg.norm(ord={order!r}) of a matrix needs its singular "
                        "values (an SVD), which is not supported", span, MATRIX_ORDERS)
    if order is None or order in ("fro", "f"):
        out = root_sum_squares(x, axes, False, span)
    elif isinstance(order, str) or not any(_is(order, o) for o in (1, -1, math.inf, -math.inf)):
        raise UserError("Invalid norm order for matrices.", span, MATRIX_ORDERS)
    else:
        out = _extreme_line_sum(x, axes, order, span)
    if keepdims:
        shape = tuple(Dim.of(1) if i in axes else d for i, d in enumerate(x.shape))
        out = C.reshape(out, shape, span)
    return out


def _extreme_line_sum(x: Node, axes: tuple[int, ...], order: int | float,
                      span: SourceSpan) -> Node:
    """ord 1 / -1: the largest / smallest column sum of |x|; inf / -inf: row sum."""
    row, col = axes
    summed, over = (row, col) if abs(order) == 1 else (col, row)
    magnitudes = apply(Op.ABS, [x], span)
    if order > 0:
        magnitudes = padded_with_zero(magnitudes, over, span)
    sums = B.reduce(Op.SUM, magnitudes, (summed,), False, span)
    remaining = over - 1 if over > summed else over
    return B.reduce(Op.MAX if order > 0 else Op.MIN, sums, (remaining,), False, span)


def norm(ctx: Ctx, x: Any, ord: Any = None, axis: Any = None, keepdims: Any = False) -> Node:
    a = as_float(x, ctx.span)
    order = order_arg(ord, ctx)
    keep = fold(keepdims)
    keep = keep.item() if isinstance(keep, np.generic) else keep
    if not isinstance(keep, bool | int):
        raise UserError("keepdims must be a bool known at compile time", ctx.span)
    ndim = a.type.ndim
    if axis is None and (order is None or (order in ("f", "fro") and ndim == 2)
                         or (_is(order, 2) and ndim == 1)):
        return root_sum_squares(a, tuple(range(ndim)), bool(keep), ctx.span)
    axes = axes_arg(axis, ndim, ctx)
    if len(axes) == 1:
        return checked(vector_norm, a, axes[0], order, bool(keep), ctx.span, span=ctx.span)
    if len(axes) == 2:
        return checked(matrix_norm, a, axes, order, bool(keep), ctx.span, span=ctx.span)
    raise UserError("Improper number of dimensions to norm.", ctx.span,
                    "axis=an int (a vector norm) or a 2-tuple (a matrix norm)")


def outer(ctx: Ctx, a: Any, b: Any, out: Any = None) -> Node:
    """np.outer: both flattened, a[:, None] * b[None, :]."""
    if out is not None:
        raise UserError("np.outer(..., out=) is not supported", ctx.span, "y = np.outer(a, b)")
    x, y = (C.reshape(to_node(v, ctx.span), (-1,), ctx.span) for v in (a, b))
    column = C.reshape(x, (x.shape[0], Dim.of(1)), ctx.span)
    row = C.reshape(y, (Dim.of(1), y.shape[0]), ctx.span)
    return strong(apply(Op.MUL, [column, row], ctx.span))


FUNCTIONS: dict[Any, Handler] = {np.linalg.norm: norm, np.outer: outer}
