"""The methods of NumPy's binary ufuncs (``np.add.outer``, ``np.maximum.reduce``, ...), as
the functions the compiler already has:

- ``u.outer(A, B)``: ``u(A[..., None, ...], B)`` (A's shape then B's) for every binary
  ufunc with a handler, Python numbers made arrays first (int64, float64), as NumPy's;
- ``u.reduce(array, axis=0, dtype, keepdims, initial, where)`` for add, multiply,
  maximum, minimum (np.sum, np.prod, np.max, np.min with ufunc.reduce's DEFAULT AXIS 0;
  axis=None reduces all) and logical_and, logical_or (bool results, as np.all and np.any);
- ``u.accumulate(array, axis=0, dtype)`` for add and multiply (np.cumsum, np.cumprod),
  maximum and minimum (a running extremum, Op.CUMMAX / Op.CUMMIN: a NaN stays once seen);
  a 0-d array or several axes raise NumPy's errors.

Every other method of these ufuncs (reduceat, at, reduce and accumulate of the rest) is
refused with a diagnostic saying what to write instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend import reduction_kwargs, scans
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler, axes_arg, now
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import apply, dtype_arg, fold, is_number, strong, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, dtype_of, np_dtype

REDUCE = {np.add: Op.SUM, np.multiply: Op.PROD, np.maximum: Op.MAX, np.minimum: Op.MIN}
LOGICAL = {np.logical_and: True, np.logical_or: False}  # True: every element must hold
ACCUMULATE = {np.add: Op.CUMSUM, np.multiply: Op.CUMPROD, np.maximum: Op.CUMMAX,
              np.minimum: Op.CUMMIN}
REDUCIBLE = "np.add/multiply/maximum/minimum/logical_and/logical_or.reduce"


def _outer(ufunc: np.ufunc, handler: Handler) -> Handler:
    def outer(ctx: Ctx, A: Any, B: Any, /) -> Any:
        if is_number(A) and is_number(B):
            return now(ufunc.outer, [A, B], ctx)
        x, y = (strong(to_node(v, ctx.span)) for v in (A, B))
        x = C.reshape(x, x.shape + (Dim.of(1),) * y.type.ndim, ctx.span)
        return handler(ctx, x, y)
    return outer


def _reduce_axes(x: Node, axis: Any, keepdims: Any,
                 ctx: Ctx) -> tuple[Node, tuple[int, ...] | None, bool]:
    """The array, the reduced axes (None: all) and keepdims; a 0-d array, which NumPy
    reduces along axis 0 or -1 as its one element into a 0-d result, made a 1-d array of
    that element, its axis dropped."""
    if x.type.ndim == 0 and fold(axis) in (0, -1, None, ()):
        return C.reshape(x, (Dim.of(1),), ctx.span), (0,), False
    return x, axes_arg(axis, ctx), bool(keepdims)


def _no_out(out: Any, name: str, ctx: Ctx) -> None:
    if out is not None:
        raise UserError(f"np.{name}(out=...) is not supported", ctx.span,
                        f"y = np.{name}(x, axis) (a new array)")


def _reduce(ufunc: np.ufunc, op: Op) -> Handler:
    """np.sum / np.prod / np.max / np.min along axis 0 by default."""
    def reduce(ctx: Ctx, array: Any, axis: Any = 0, dtype: Any = None, out: Any = None,
               keepdims: Any = False, initial: Any = None, where: Any = True) -> Node:
        _no_out(out, f"{ufunc.__name__}.reduce", ctx)
        source = to_node(array, ctx.span)
        kind = None if dtype is None else dtype_arg(dtype, ctx.span)
        if source.type.ndim == 0 and op in reduction_kwargs.IDENTITIES and \
                fold(axis) in (0, -1, None, ()):
            return _sum_of_one(ufunc, op, source, kind, initial, where, ctx)
        x, axes, keep = _reduce_axes(source, axis, keepdims, ctx)
        return reduction_kwargs.reduce(op, x, axes, keep, kind, initial, where, ctx.span)
    return reduce


def _sum_of_one(ufunc: np.ufunc, op: Op, x: Node, dtype: str | None, initial: Any,
                where: Any, ctx: Ctx) -> Node:
    """add.reduce / multiply.reduce of a 0-d array: its one element in the reduction's
    dtype (int8 gives int64), the identity where masked out, then the initial value
    (no reduction node: the kernels have none of no axes or of one float element)."""
    kind = dtype or dtype_of(ufunc.reduce(np.zeros(1, np_dtype(x.dtype))).dtype)
    value = C.cast(x, kind, ctx.span)
    if fold(where) is not True:
        mask = C.cast(to_node(where, ctx.span), "bool", ctx.span)
        if mask.shape:
            raise UserError("a where= mask of a 0-d array's reduction must be 0-d", ctx.span)
        value = apply(Op.WHERE, [mask, value, reduction_kwargs.IDENTITIES[op]], ctx.span)
        value = C.cast(value, kind, ctx.span)
    if initial is None:
        return value
    if not is_number(initial):
        raise UserError("a reduction's initial= must be a number known at compile time",
                        ctx.span, "initial=0.0")
    start = ufunc.reduce(np.empty(0, np_dtype(x.dtype)), dtype=kind, initial=fold(initial))
    return apply(Op.ADD if op is Op.SUM else Op.MUL,
                 [value, B.const(start.item(), kind, ctx.span)], ctx.span)


def _logical_reduce(ufunc: np.ufunc, every: bool) -> Handler:
    """np.logical_and.reduce (``every``) and np.logical_or.reduce: the count of elements
    that decide (false ones, true ones) is zero (nonzero), the masked-out ones not counted
    (the identity: True, False); a falsy (truthy) initial decides every slice."""
    def reduce(ctx: Ctx, array: Any, axis: Any = 0, dtype: Any = None, out: Any = None,
               keepdims: Any = False, initial: Any = None, where: Any = True) -> Node:
        name = f"{ufunc.__name__}.reduce"
        _no_out(out, name, ctx)
        if dtype is not None and dtype_arg(dtype, ctx.span) != "bool":
            raise UserError(f"TypeError: No loop matching the specified signature and casting "
                            f"was found for ufunc {ufunc.__name__}", ctx.span, "dtype=bool")
        x, axes, keep = _reduce_axes(to_node(array, ctx.span), axis, keepdims, ctx)
        flags = C.cast(x, "bool", ctx.span)
        deciding = apply(Op.EQ, [flags, False], ctx.span) if every else flags
        count = reduction_kwargs.reduce(Op.SUM, C.cast(deciding, "int64", ctx.span), axes,
                                        keep, None, None, where, ctx.span)
        result = apply(Op.EQ if every else Op.GT, [count, 0], ctx.span)
        if initial is None:
            return result
        if not is_number(initial):
            raise UserError(f"np.{name}'s initial= must be a number known at compile time",
                            ctx.span, f"initial={every}")
        start = bool(fold(initial))
        if start == every:
            return result
        return apply(Op.AND if every else Op.OR, [result, start], ctx.span)
    return reduce


def _accumulate(ufunc: np.ufunc, scan: Handler) -> Handler:
    """A running sum, product, maximum or minimum along one axis, 0 by default."""
    def accumulate(ctx: Ctx, array: Any, axis: Any = 0, dtype: Any = None,
                   out: Any = None) -> Node:
        _no_out(out, f"{ufunc.__name__}.accumulate", ctx)
        x = to_node(array, ctx.span)
        if x.type.ndim == 0:
            raise UserError("TypeError: cannot accumulate on a scalar", ctx.span)
        if axis is None or isinstance(axis, tuple | list) and len(axis) != 1:
            raise UserError("ValueError: accumulate does not allow multiple axes", ctx.span,
                            "axis=0 (an int)")
        one = axis[0] if isinstance(axis, tuple | list) else axis
        result: Node = scan(ctx, x, one, dtype)
        return result
    return accumulate


def _refused(ufunc: np.ufunc, method: str, hint: str) -> Handler:
    def handler(ctx: Ctx, *args: Any, **kwargs: Any) -> Any:
        raise UserError(f"np.{ufunc.__name__}.{method} is not supported", ctx.span, hint)
    return handler


def _reduce_of(ufunc: np.ufunc) -> Handler:
    if ufunc in REDUCE:
        return _reduce(ufunc, REDUCE[ufunc])
    if ufunc in LOGICAL:
        return _logical_reduce(ufunc, LOGICAL[ufunc])
    return _refused(ufunc, "reduce", REDUCIBLE)


def _accumulate_of(ufunc: np.ufunc) -> Handler:
    if ufunc in ACCUMULATE:
        return _accumulate(ufunc, scans.running(ACCUMULATE[ufunc]))
    return _refused(ufunc, "accumulate", "np.add/multiply/maximum/minimum.accumulate "
                    "(np.cumsum, np.cumprod), or a loop over the axis")


def registry(functions: dict[Any, Handler]) -> dict[Any, Handler]:
    """The methods of every binary ufunc among ``functions``, keyed by the bound methods
    (``np.add.outer``) a call resolves to."""
    methods: dict[Any, Handler] = {}
    for fn, handler in functions.items():
        if not isinstance(fn, np.ufunc) or fn.nin != 2 or fn.nout != 1:
            continue
        methods[fn.outer] = _outer(fn, handler)
        methods[fn.reduce] = _reduce_of(fn)
        methods[fn.accumulate] = _accumulate_of(fn)
        methods[fn.reduceat] = _refused(fn, "reduceat", f"np.{fn.__name__}.reduce of each "
                                        "slice")
        methods[fn.at] = _refused(fn, "at", "x[ids] += v (a repeated index adds once), or a "
                                  "loop")
    return methods
