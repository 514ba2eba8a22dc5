"""NumPy's float-only math functions as exact compositions of the IR's operations, with
NumPy's values, result dtypes and edge cases (NaN, ±inf, ±0.0, empty axes):

- np.logaddexp, np.logaddexp2 (NumPy's npy_logaddexp and npy_logaddexp2, branch for
  branch), np.heaviside, np.float_power (of real numbers);
- np.nanmax, np.nanmin, np.nanmean (NaN where a slice is all NaN), np.average (unweighted);
- np.isclose, np.allclose (NumPy's formula, its dtypes and its infinities);
- np.diagonal and np.trace (a gather at a ramp's positions), np.inner (a matmul of rows),
  np.vdot (of the flattened operands), np.linalg.matrix_power (NumPy's matmuls).

A binary function here gets NumPy's own result dtype for its operands (int8 gives
float16, int32 float64, a Python scalar follows NEP 50); the operands are rounded to it
first, as NumPy's loop converts them, and float16 is computed in float32 and rounded once,
as NumPy's float16 loops of these functions are.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.composed import all_
from cuvil_aot.compiler.frontend.creation import ramp
from cuvil_aot.compiler.frontend.gather import gather
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler, axes_arg, mean, now, np_matmul
from cuvil_aot.compiler.frontend.operators import binary
from cuvil_aot.compiler.frontend.shapes import axis_of
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import apply, fold, is_number, python_value, strong, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, TensorType, dtype_of, is_float, np_dtype

LOG_2 = 0.6931471805599453  # NumPy's NPY_LOGE2 and NPY_LOG2E, rounded to float64
LOG2_E = 1.4426950408889634
_PYTHON_DUMMY = {"bool": True, "int64": 1, "float64": 1.0}


def _dummy(x: Node) -> Any:
    """A stand-in NumPy promotes as it does ``x``: a Python scalar for a weak value."""
    return _PYTHON_DUMMY[x.dtype] if x.type.weak else np.ones((1,), np_dtype(x.dtype))


def _float_operands(fn: Any, args: list[Any], ctx: Ctx) -> tuple[list[Node], str]:
    """``args`` as ``fn``'s loop takes them, in the dtype to compute in, and the result
    dtype: NumPy's own for these operands."""
    nodes = [to_node(a, ctx.span) for a in args]
    try:
        result = dtype_of(np.asarray(fn(*(_dummy(x) for x in nodes))).dtype)
    except TypeError as exc:
        raise UserError(f"np.{fn.__name__} is not defined for "
                        f"{', '.join(x.dtype for x in nodes)}: {exc}", ctx.span) from None
    compute = "float32" if result in ("float16", "bfloat16") else result
    return [strong(C.cast(C.cast(x, result, ctx.span), compute, ctx.span)) for x in nodes], \
        result


def _isnan(x: Node, ctx: Ctx) -> Node:
    return apply(Op.NE, [x, x], ctx.span)


def _logaddexp(fn: Any, exp: Op, same: float, scale: float) -> Handler:
    """NumPy's npy_logaddexp (``exp`` EXP, ``same`` log(2), ``scale`` 1) and npy_logaddexp2
    (EXP2, 1, log2(e)): x + same where x == y (equal infinities), NaN where one is NaN,
    else max + scale * log1p(exp(-|x - y|))."""
    def handler(ctx: Ctx, x1: Any, x2: Any, /) -> Any:
        if is_number(x1) and is_number(x2):
            return now(fn, [x1, x2], ctx)
        (x, y), result = _float_operands(fn, [x1, x2], ctx)
        diff = apply(Op.SUB, [x, y], ctx.span)
        larger = apply(Op.WHERE, [apply(Op.GT, [diff, 0.0], ctx.span), x, y], ctx.span)
        # -|x - y| is -tmp where tmp > 0 and tmp where tmp < 0, NumPy's two branches
        down = apply(Op.NEG, [apply(Op.ABS, [diff], ctx.span)], ctx.span)
        tail = apply(Op.LOG1P, [apply(exp, [down], ctx.span)], ctx.span)
        if scale != 1.0:
            tail = apply(Op.MUL, [scale, tail], ctx.span)
        out = apply(Op.WHERE, [_isnan(diff, ctx), diff,
                               apply(Op.ADD, [larger, tail], ctx.span)], ctx.span)
        equal = apply(Op.EQ, [x, y], ctx.span)
        out = apply(Op.WHERE, [equal, apply(Op.ADD, [x, same], ctx.span), out], ctx.span)
        return strong(C.cast(out, result, ctx.span))
    return handler


def heaviside(ctx: Ctx, x1: Any, x2: Any, /) -> Any:
    """NaN where x1 is NaN, x2 where it is zero, else 0 below zero and 1 above."""
    if is_number(x1) and is_number(x2):
        return now(np.heaviside, [x1, x2], ctx)
    (x, h0), result = _float_operands(np.heaviside, [x1, x2], ctx)
    step = apply(Op.WHERE, [apply(Op.LT, [x, 0.0], ctx.span), B.const(0.0, x.dtype),
                            B.const(1.0, x.dtype)], ctx.span)
    out = apply(Op.WHERE, [apply(Op.EQ, [x, 0.0], ctx.span), h0, step], ctx.span)
    out = apply(Op.WHERE, [_isnan(x, ctx), B.const(math.nan, x.dtype), out], ctx.span)
    return strong(C.cast(out, result, ctx.span))


def float_power(ctx: Ctx, x1: Any, x2: Any, /) -> Any:
    """C's pow in float64 (NaN for a negative base to a non-integer power, as NumPy's)."""
    if is_number(x1) and is_number(x2):
        return now(np.float_power, [x1, x2], ctx)
    (x, y), _ = _float_operands(np.float_power, [x1, x2], ctx)  # float64, as NumPy's
    power = apply(Op.POW, [x, y], ctx.span)
    # GCC makes pow(x, 0.5) sqrt(x), which is -0.0 and NaN at -0.0 and -inf; pow's are
    # +0.0 and +inf, |x| (and at +0.0 too)
    root = apply(Op.EQ, [y, 0.5], ctx.span)
    edge = apply(Op.OR, [apply(Op.EQ, [x, 0.0], ctx.span), apply(Op.EQ, [x, -math.inf],
                                                                  ctx.span)], ctx.span)
    fixed = apply(Op.AND, [root, edge], ctx.span)
    return strong(apply(Op.WHERE, [fixed, apply(Op.ABS, [x], ctx.span), power], ctx.span))


def _nan_extremum(op: Op, fill: float) -> Handler:
    """np.nanmax (``op`` MAX, ``fill`` -inf) and np.nanmin (MIN, inf): the extremum of
    the numbers, NaN where a slice has none; of an empty one NumPy's ValueError."""
    def handler(ctx: Ctx, a: Any, axis: Any = None, keepdims: bool = False) -> Node:
        x = to_node(a, ctx.span)
        axes = axes_arg(axis, ctx)
        if not is_float(x.dtype):
            return checked(B.reduce, op, x, axes, bool(keepdims), ctx.span, span=ctx.span)
        nan = _isnan(x, ctx)
        filled = apply(Op.WHERE, [nan, fill, x], ctx.span)
        extremum = checked(B.reduce, op, filled, axes, bool(keepdims), ctx.span, span=ctx.span)
        return apply(Op.WHERE, [_no_numbers(nan, axes, bool(keepdims), ctx), math.nan,
                                extremum], ctx.span)
    return handler


def _no_numbers(nan: Node, axes: tuple[int, ...] | None, keepdims: bool, ctx: Ctx) -> Node:
    """Where every value of a slice is NaN (``nan`` flags them)."""
    return apply(Op.EQ, [_count_of_numbers(nan, axes, keepdims, ctx), 0], ctx.span)


def _count_of_numbers(nan: Node, axes: tuple[int, ...] | None, keepdims: bool,
                      ctx: Ctx) -> Node:
    numbers = C.cast(apply(Op.INVERT, [nan], ctx.span), "int64", ctx.span)
    return checked(B.reduce, Op.SUM, numbers, axes, keepdims, ctx.span, span=ctx.span)


def nanmean(ctx: Ctx, a: Any, axis: Any = None, keepdims: bool = False) -> Node:
    """NumPy's: the sum of the numbers in x's dtype (float16 summed in float32) over their
    count, divided in float64 and rounded to x's dtype; NaN for a slice of none (0 / 0)."""
    x = to_node(a, ctx.span)
    if not is_float(x.dtype):
        return mean(ctx, x, axis, keepdims=keepdims)
    axes = axes_arg(axis, ctx)
    nan = _isnan(x, ctx)
    numbers = apply(Op.WHERE, [nan, 0.0, x], ctx.span)
    if x.dtype in ("float16", "bfloat16"):
        numbers = C.cast(numbers, "float32", ctx.span)
    total = checked(B.reduce, Op.SUM, numbers, axes, bool(keepdims), ctx.span, span=ctx.span)
    total = C.cast(C.cast(total, x.dtype, ctx.span), "float64", ctx.span)
    average = apply(Op.DIV, [total, _count_of_numbers(nan, axes, bool(keepdims), ctx)],
                    ctx.span)
    return C.cast(average, x.dtype, ctx.span)


def average(ctx: Ctx, a: Any, axis: Any = None, weights: Any = None, returned: Any = False, *,
            keepdims: Any = False) -> Any:
    """np.mean; with ``returned`` also NumPy's count a.size / avg.size (Python's
    ZeroDivisionError at the call where no slice is left) in avg's dtype and shape."""
    if weights is not None:  # NumPy's ZeroDivisionError for weights summing to zero would
        # depend on array data, which no check at the call sees
        raise UserError("np.average with weights= is not supported", ctx.span,
                        "np.sum(a * w, axis) / np.sum(w, axis)")
    flag = _compile_time_flag(returned, "average", ctx, "returned")
    x = to_node(a, ctx.span)
    avg = mean(ctx, x, axis, keepdims=bool(keepdims))
    count = binary("Div", fold(C.total(x.shape)), fold(C.total(avg.shape)), ctx.span,
                   ctx.span, ctx.span)
    if not flag:
        return avg
    scale = strong(C.cast(to_node(count, ctx.span), avg.dtype, ctx.span))
    return avg, B.broadcast_to(scale, avg.shape, ctx.span) if avg.shape else scale


def isclose(ctx: Ctx, a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
            equal_nan: Any = False) -> Any:
    """NumPy's: |a - b| <= atol + rtol * |b| where b is finite, or a == b (infinities
    equal only to themselves); NaNs equal only with ``equal_nan``, b made float first."""
    flag = _compile_time_flag(equal_nan, "isclose", ctx)
    if all(is_number(v) for v in (a, b, rtol, atol)):
        return now(lambda p, q, r, t: np.isclose(p, q, rtol=r, atol=t, equal_nan=flag),
                   [a, b, rtol, atol], ctx)
    x, y = to_node(a, ctx.span), _inexact(to_node(b, ctx.span), ctx)
    gap = apply(Op.ABS, [apply(Op.SUB, [x, y], ctx.span)], ctx.span)
    bound = apply(Op.ADD, [atol, apply(Op.MUL, [rtol, apply(Op.ABS, [y], ctx.span)],
                                       ctx.span)], ctx.span)
    finite = apply(Op.LT, [apply(Op.ABS, [y], ctx.span), math.inf], ctx.span)
    near = apply(Op.AND, [apply(Op.LE, [gap, bound], ctx.span), finite], ctx.span)
    out = apply(Op.OR, [near, apply(Op.EQ, [x, y], ctx.span)], ctx.span)
    if flag:
        both_nan = apply(Op.AND, [_isnan(x, ctx), _isnan(y, ctx)], ctx.span)
        out = apply(Op.OR, [out, both_nan], ctx.span)
    return strong(out)


def allclose(ctx: Ctx, a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
             equal_nan: Any = False) -> Any:
    """Whether np.isclose holds everywhere (of an empty array: True), a Python bool."""
    flag = _compile_time_flag(equal_nan, "allclose", ctx)
    if all(is_number(v) for v in (a, b, rtol, atol)):
        return now(lambda p, q, r, t: np.allclose(p, q, rtol=r, atol=t, equal_nan=flag),
                   [a, b, rtol, atol], ctx)
    return python_value(all_(ctx, isclose(ctx, a, b, rtol, atol, flag)), bool, ctx.span)


def _inexact(y: Node, ctx: Ctx) -> Node:
    """``y`` as np.isclose makes it: a float of NumPy's result_type(y, 1.0), a Python int
    or bool a Python float."""
    if y.type.weak:
        floated: Node = python_value(y, float, ctx.span)
        return floated
    return C.cast(y, dtype_of(np.result_type(_dummy(y), 1.0)), ctx.span)


def _compile_time_flag(value: Any, name: str, ctx: Ctx, flag: str = "equal_nan") -> bool:
    if not isinstance(fold(value), bool | np.bool_ | int):
        raise UserError(f"np.{name}'s {flag} must be known at compile time", ctx.span,
                        f"{flag}=True or {flag}=False")
    return bool(value)


def diagonal(ctx: Ctx, a: Any, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> Node:
    """NumPy's: axis1 and axis2 dropped, their diagonal a[..., i, i + offset] the last axis
    (a copy, where NumPy's is a read-only view)."""
    x = to_node(a, ctx.span)
    k = _compile_time_int(offset, "offset", ctx)
    if x.type.ndim < 2:
        raise UserError("diag requires an array of at least two dimensions", ctx.span)
    first, second = (axis_of(x, v, ctx) for v in (axis1, axis2))
    if first == second:
        raise UserError("axis1 and axis2 cannot be the same", ctx.span)
    rows, cols = x.shape[first], x.shape[second]
    length = _diagonal_length(rows, cols, k, ctx)
    rest = [d for d in range(x.type.ndim) if d not in (first, second)]
    table = C.permute(x, [*rest, first, second], ctx.span)
    ramp = Node(Op.IOTA, TensorType("int64", (length,)), span=ctx.span)
    row, col = (apply(Op.ADD, [ramp, shift], ctx.span) if shift else ramp
                for shift in (max(-k, 0), max(k, 0)))
    return gather(table, [len(rest), len(rest) + 1], [row, col], [first, second], ctx.span)


def _diagonal_length(rows: Dim, cols: Dim, k: int, ctx: Ctx) -> Dim:
    """min(rows, cols - k) for k >= 0, min(rows + k, cols) below, and at least 0."""
    if rows.is_static and cols.is_static:
        return Dim.of(max(0, min(rows.value + min(k, 0), cols.value - max(k, 0))))
    if k == 0 and C.same(rows, cols):
        return rows
    raise UserError(f"np.diagonal of axes of lengths {rows} and {cols} with offset {k}: its "
                    "length is not known at compile time", ctx.span,
                    "offset=0 of two axes of one symbol, or axes of constant lengths")


def trace(ctx: Ctx, a: Any, offset: Any = 0, axis1: Any = 0, axis2: Any = 1, dtype: Any = None,
          out: Any = None) -> Node:
    """The sum of np.diagonal along its axis, np.sum's dtype (int8 gives int64)."""
    if dtype is not None or out is not None:
        raise UserError("np.trace with dtype= or out= is not supported", ctx.span,
                        "np.trace(a.astype(dtype))")
    diag = diagonal(ctx, a, offset, axis1, axis2)
    return checked(B.reduce, Op.SUM, diag, (-1,), False, ctx.span, span=ctx.span)


def inner(ctx: Ctx, a: Any, b: Any, /) -> Node:
    """Sums of products over the last axes: a's other axes, then b's, as (rows of a) @
    (rows of b).T; of a 0-d operand the product, in the dtype NumPy makes of arrays of
    both (a Python float with a float32 array is float64 here)."""
    x, y = to_node(a, ctx.span), to_node(b, ctx.span)
    if x.type.ndim == 0 or y.type.ndim == 0:
        dtype = dtype_of(np.result_type(*(np.ones(1, np_dtype(v.dtype)) for v in (x, y))))
        return strong(apply(Op.MUL, [C.cast(v, dtype, ctx.span) for v in (x, y)], ctx.span))
    rows_x, rows_y = (C.reshape(v, (C.total(v.shape[:-1]), v.shape[-1]), ctx.span)
                      for v in (x, y))
    product = np_matmul(ctx, rows_x, C.permute(rows_y, (1, 0), ctx.span))
    return C.reshape(product, x.shape[:-1] + y.shape[:-1], ctx.span)


def vdot(ctx: Ctx, a: Any, b: Any, /) -> Node:
    """The dot product of the flattened operands (real: no conjugate), NumPy's ValueError
    where their sizes differ."""
    x, y = (C.reshape(v, (C.total(v.shape),), ctx.span)
            for v in (to_node(a, ctx.span), to_node(b, ctx.span)))
    return inner(ctx, x, y)


def matrix_power(ctx: Ctx, a: Any, n: Any) -> Node:
    """a raised to a power known at compile time by NumPy's own sequence of matmuls (n 1:
    a; 2 and 3 directly; above, squarings of a with the set bits' products); n 0: the
    identity in a's dtype. The last two axes must be square; a negative n (an inverse)
    is refused."""
    x = to_node(a, ctx.span)
    power = fold(n)
    if isinstance(power, bool) or not isinstance(power, int | np.integer):
        raise UserError("TypeError: exponent must be an integer known at compile time",
                        ctx.span)
    if x.type.ndim < 2:
        raise UserError(f"LinAlgError: {x.type.ndim}-dimensional array given. Array must be "
                        "at least two-dimensional", ctx.span)
    rows, cols = x.shape[-2], x.shape[-1]
    if rows.is_static and cols.is_static and rows != cols:
        raise UserError("LinAlgError: Last 2 dimensions of the array must be square", ctx.span)
    if power < 0:
        raise UserError("np.linalg.matrix_power with a negative exponent (a matrix inverse) "
                        "is not supported", ctx.span, "a non-negative exponent")
    if power == 0:
        i = ramp(rows, ctx)
        same = apply(Op.EQ, [C.reshape(i, (rows, Dim.of(1)), ctx.span), i], ctx.span)
        return checked(B.broadcast_to, C.cast(same, x.dtype, ctx.span), x.shape, ctx.span,
                       span=ctx.span)
    if power <= 3:
        out = x
        for _ in range(int(power) - 1):
            out = np_matmul(ctx, out, x)
        return out
    z = result = None
    while power > 0:
        z = x if z is None else np_matmul(ctx, z, z)
        power, bit = divmod(power, 2)
        if bit:
            result = z if result is None else np_matmul(ctx, result, z)
    assert result is not None
    return result


def _compile_time_int(value: Any, name: str, ctx: Ctx) -> int:
    value = fold(value)
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise UserError(f"np.diagonal's {name} must be an int known at compile time", ctx.span)
    return int(value)


FUNCTIONS: dict[Any, Handler] = {
    np.logaddexp: _logaddexp(np.logaddexp, Op.EXP, LOG_2, 1.0),
    np.logaddexp2: _logaddexp(np.logaddexp2, Op.EXP2, 1.0, LOG2_E),
    np.heaviside: heaviside, np.float_power: float_power,
    np.nanmax: _nan_extremum(Op.MAX, -math.inf), np.nanmin: _nan_extremum(Op.MIN, math.inf),
    np.nanmean: nanmean, np.average: average, np.isclose: isclose, np.allclose: allclose,
    np.diagonal: diagonal, np.trace: trace, np.inner: inner, np.vdot: vdot,
    np.linalg.matrix_power: matrix_power,
}
