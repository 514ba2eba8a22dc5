"""np.median, np.quantile and np.percentile along one axis (or of the flattened array), on
the sort of each row (Op.SORT, NaNs last) and gathers at positions computed from the
row's length, which may be known only at the call. NumPy's arithmetic, step by step
(numpy/lib/_function_base_impl.py):

- median: the mean of the middle one or two sorted values, in mean's dtype (float64 for
  integers and bool, float32 for float16, cast back): (0.0 + a + b) / 2, or 0.0 + a (the
  sum starts from +0.0, which makes -0.0 0.0); a row
  holding a NaN gives NaN (its last sorted value); an empty row NaN;
- quantile's "linear" method, q known at compile time: virtual index v = (n - 1) * q in q's
  dtype, previous = floor(v), next = previous + 1, both n - 1 (NumPy's -1) where
  v >= n - 1, gamma = v - previous in v's dtype (a Python float where q was one, NumPy's
  weak_q), then _lerp: d = b - a in the array's dtype, a + d * gamma, or where
  gamma >= 0.5, b - d * (1 - gamma); each product stored (rounded.stored: a fused
  multiply-add would round once), each step rounded to NumPy's dtype for it. q of an
  integer dtype (0 or 1) takes the sorted value as it is, in the array's dtype. A row
  holding a NaN gives its last sorted value; an empty row raises NumPy's IndexError.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend import scans
from cuvil_aot.compiler.frontend.gather import gather
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler
from cuvil_aot.compiler.frontend.rounded import rounded_op, stored
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import apply, fold, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, dtype_of, is_float, np_dtype

METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
           "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
           "normal_unbiased", "lower", "higher", "midpoint", "nearest")
BOOL_SUBTRACT = ("TypeError: numpy boolean subtract, the `-` operator, is not supported, use "
                 "the bitwise_xor, the `^` operator, or the logical_xor function instead.")


# The rows ---------------------------------------------------------------------------------

class Rows:
    """The array sorted along its last axis (the one reduced, moved there), the length of
    that axis, and the shape keepdims gives the result (without q's axes)."""

    def __init__(self, ctx: Ctx, a: Any, axis: Any) -> None:
        x = to_node(a, ctx.span)
        axis = fold(axis)
        if isinstance(axis, tuple | list) and len(axis) == 1:
            axis = fold(axis[0])
        if axis is None:
            self.kept = (Dim.of(1),) * x.type.ndim
            x = checked(C.reshape, x, (C.total(x.shape),), ctx.span, span=ctx.span)
            along = 0
        elif isinstance(axis, bool) or not isinstance(axis, int | np.integer):
            raise UserError("axis must be an int known at compile time or None", ctx.span,
                            "axis=-1 (a constant), or axis=None for the flattened array")
        else:
            along = checked(B.normalize_axes, (int(axis),), x.type.ndim, span=ctx.span)[0]
            self.kept = tuple(Dim.of(1) if i == along else d for i, d in enumerate(x.shape))
        order = [i for i in range(x.type.ndim) if i != along] + [along]
        self.source = x
        self.sorted = scans.sort(ctx, C.permute(x, tuple(order), ctx.span), axis=-1)
        self.n = x.shape[along]

    def at(self, table: Node, index: Node, ctx: Ctx) -> Node:
        """``table[..., index]``: rows' values at int64 positions of any shape."""
        last = table.type.ndim - 1
        return gather(table, [last], [index], [last], ctx.span)

    def length(self, ctx: Ctx) -> Node:
        return C.cast(to_node(self.n, ctx.span), "int64", ctx.span)


def _finish(result: Node, rows: Rows, q_ndim: int, keepdims: Any, ctx: Ctx) -> Node:
    """q's axes (last, from the gathers) moved first, the kept axes reinserted."""
    if q_ndim:
        rank = result.type.ndim
        order = list(range(rank - q_ndim, rank)) + list(range(rank - q_ndim))
        result = C.permute(result, tuple(order), ctx.span)
    if keepdims:
        result = C.reshape(result, result.shape[:q_ndim] + rows.kept, ctx.span)
    return result


def _no_out(out: Any, name: str, ctx: Ctx) -> None:
    if out is not None:
        raise UserError(f"np.{name}(out=...) is not supported", ctx.span,
                        f"y = np.{name}(x, ...) (a new array)")


# np.median ------------------------------------------------------------------------------

def median(ctx: Ctx, a: Any, axis: Any = None, out: Any = None, overwrite_input: Any = False,
           keepdims: Any = False) -> Node:
    _no_out(out, "median", ctx)
    rows = Rows(ctx, a, axis)
    dtype = rows.source.dtype
    result = dtype_of(np.median(np.zeros(1, np_dtype(dtype))).dtype)
    mean = "float32" if result == "float16" else result  # mean's float16 sums in float32
    values = C.cast(rows.sorted, mean, ctx.span)
    # a NaN after each row: an empty row's middle and last values (NumPy's mean of nothing)
    nan = B.broadcast_to(B.const(float("nan"), mean, ctx.span), values.shape[:-1] + (Dim.of(1),),
                         ctx.span)
    padded = checked(B.concat, [values, nan], -1, ctx.span, span=ctx.span)
    n = rows.length(ctx)
    low = apply(Op.MAXIMUM, [apply(Op.FLOORDIV, [apply(Op.SUB, [n, 1], ctx.span), 2],
                                   ctx.span), 0], ctx.span)
    high = apply(Op.FLOORDIV, [n, 2], ctx.span)
    a_, b_ = rows.at(padded, low, ctx), rows.at(padded, high, ctx)
    # mean's sum starts from +0.0 (-0.0 values sum to 0.0), then divides by the count
    first = rounded_op(Op.ADD, [a_, 0.0], mean, ctx)
    both = rounded_op(Op.DIV, [rounded_op(Op.ADD, [first, b_], mean, ctx), 2], mean, ctx)
    even = apply(Op.EQ, [apply(Op.MOD, [n, 2], ctx.span), 0], ctx.span)
    value = apply(Op.WHERE, [even, both, first], ctx.span)
    if is_float(dtype):
        last = rows.at(padded, apply(Op.MAXIMUM, [apply(Op.SUB, [n, 1], ctx.span), 0],
                                     ctx.span), ctx)
        value = apply(Op.WHERE, [apply(Op.NE, [last, last], ctx.span), last, value], ctx.span)
    return _finish(C.cast(value, result, ctx.span), rows, 0, keepdims, ctx)


# np.quantile and np.percentile ----------------------------------------------------------

def _q_values(q: Any, scale: int, ctx: Ctx) -> tuple[np.ndarray, bool]:
    """q as NumPy makes it (divided by 100 for a percentile), and whether it was a Python
    number (NumPy's weak_q: its gamma a Python float)."""
    value = fold(q)
    items = value if isinstance(value, tuple | list) else [value]
    if any(isinstance(fold(v), Node | Dim) for v in items):
        raise UserError("q must be a number or a sequence of numbers known at compile time",
                        ctx.span, "q=0.5 or q=[0.25, 0.75]")
    weak = type(value) in (int, float)
    values = np.asanyarray(value if not isinstance(value, tuple | list) else
                           [fold(v) for v in value])
    if values.dtype.kind not in "biuf":
        raise UserError("q must be a number or a sequence of numbers known at compile time",
                        ctx.span, "q=0.5 or q=[0.25, 0.75]")
    if scale != 1:
        values = np.true_divide(values, scale, out=...)
    if values.size and not (values.min() >= 0 and values.max() <= 1):
        what = "Percentiles must be in the range [0, 100]" if scale != 1 else \
            "Quantiles must be in the range [0, 1]"
        raise UserError(f"ValueError: {what}", ctx.span)
    if values.ndim > 2:
        raise UserError("ValueError: q must be a scalar or 1d", ctx.span)
    return values, weak


def _constant(values: np.ndarray, ctx: Ctx) -> Node:
    """A small constant array of q's values (its own dtype)."""
    dtype = dtype_of(values.dtype)
    parts = [B.const(v.item(), dtype, ctx.span) for v in values.reshape(-1)]
    if values.ndim == 0:
        return parts[0]
    flat = checked(B.stack, parts, 0, ctx.span, span=ctx.span)
    return C.reshape(flat, tuple(Dim.of(s) for s in values.shape), ctx.span)


def _method(method: Any, ctx: Ctx) -> None:
    name = fold(method)
    if name == "linear":
        return
    if name in METHODS:
        raise UserError(f"np.quantile's method={name!r} is not supported", ctx.span,
                        "method='linear' (the default)")
    raise UserError(f"ValueError: {name!r} is not a valid method. Use one of: "
                    f"dict_keys({list(METHODS)!r})", ctx.span)


def _interpolated(rows: Rows, q: np.ndarray, weak: bool, ctx: Ctx) -> Node:
    """NumPy's _get_indexes, _get_gamma and _lerp for float virtual indices."""
    dtype = rows.source.dtype
    if dtype == "bool":
        raise UserError(BOOL_SUBTRACT, ctx.span, "x.astype(np.float64)")
    virtual = dtype_of((3 * q).dtype)  # (n - 1) * q: the length a Python int
    n = rows.length(ctx)
    last = apply(Op.SUB, [n, 1], ctx.span)
    top = C.cast(last, virtual, ctx.span)
    index = rounded_op(Op.MUL, [top, _constant(q, ctx)], virtual, ctx)
    floor = apply(Op.FLOOR, [index], ctx.span)
    above = apply(Op.GE, [index, top], ctx.span)
    previous = apply(Op.WHERE, [above, last, C.cast(floor, "int64", ctx.span)], ctx.span)
    following = apply(Op.WHERE, [above, last, apply(Op.ADD, [previous, 1], ctx.span)], ctx.span)
    # gamma = v - previous with NumPy's previous: -1 where above (v + 1 there)
    numpy_previous = apply(Op.WHERE, [above, -1.0, C.cast(floor, "float64", ctx.span)], ctx.span)
    gamma = C.cast(rounded_op(Op.SUB, [index, numpy_previous], "float64", ctx), virtual,
                   ctx.span)
    t_dtype = "float64" if weak else virtual
    t = C.cast(gamma, t_dtype, ctx.span)
    low, high = rows.at(rows.sorted, previous, ctx), rows.at(rows.sorted, following, ctx)
    stand_in = 0.5 if weak else np.zeros(1, np_dtype(virtual))
    product = dtype_of((np.zeros(1, np_dtype(dtype)) * stand_in).dtype)
    lerp = dtype_of((np.zeros(1, np_dtype(dtype)) + np.zeros(1, np_dtype(product))).dtype)
    diff = rounded_op(Op.SUB, [high, low], dtype, ctx)
    up = rounded_op(Op.ADD, [low, stored(rounded_op(Op.MUL, [diff, t], product, ctx), ctx)],
                    lerp, ctx)
    rest = rounded_op(Op.SUB, [1, t], t_dtype, ctx)
    down = rounded_op(Op.SUB, [high, stored(rounded_op(Op.MUL, [diff, rest], product, ctx),
                                            ctx)], lerp, ctx)
    return apply(Op.WHERE, [apply(Op.GE, [t, 0.5], ctx.span), down, up], ctx.span)


def _quantiles(ctx: Ctx, a: Any, q: Any, axis: Any, keepdims: Any, scale: int) -> Node:
    rows = Rows(ctx, a, axis)
    values, weak = _q_values(q, scale, ctx)
    # NumPy reads the last sorted value of each row: IndexError where a row is empty
    need = rows.n - 1
    if not need.known_nonnegative():
        ctx.requirements.append((need, C.Raises("IndexError", (
            "index -1 is out of bounds for axis 0 with size ", rows.n))))
    if np.issubdtype((3 * values).dtype, np.integer):  # taken as they are: no interpolation
        index = apply(Op.MUL, [apply(Op.SUB, [rows.length(ctx), 1], ctx.span),
                               _constant(values.astype(np.int64), ctx)], ctx.span)
        result = rows.at(rows.sorted, C.cast(index, "int64", ctx.span), ctx)
    else:
        result = _interpolated(rows, values, weak, ctx)
    if is_float(rows.source.dtype):
        last = rows.at(rows.sorted, apply(Op.SUB, [rows.length(ctx), 1], ctx.span), ctx)
        last = B.broadcast_to(C.reshape(last, last.shape + (Dim.of(1),) * values.ndim,
                                        ctx.span), result.shape, ctx.span)
        nan = apply(Op.NE, [last, last], ctx.span)
        result = apply(Op.WHERE, [nan, C.cast(last, result.dtype, ctx.span), result], ctx.span)
    return _finish(result, rows, values.ndim, keepdims, ctx)


def _quantile_handler(name: str, scale: int) -> Handler:
    def handler(ctx: Ctx, a: Any, q: Any, axis: Any = None, out: Any = None,
                overwrite_input: Any = False, method: Any = "linear", keepdims: Any = False,
                *, weights: Any = None, interpolation: Any = None) -> Node:
        _no_out(out, name, ctx)
        if weights is not None or interpolation is not None:
            raise UserError(f"np.{name}'s weights= and interpolation= are not supported",
                            ctx.span, "method='linear' without weights")
        _method(method, ctx)
        return _quantiles(ctx, a, q, axis, keepdims, scale)
    return handler


FUNCTIONS: dict[Any, Handler] = {
    np.median: median, np.quantile: _quantile_handler("quantile", 1),
    np.percentile: _quantile_handler("percentile", 100),
}
