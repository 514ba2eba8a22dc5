"""np.linspace with scalar start and stop and a count known at compile time, bit for bit
NumPy's (numpy/_core/function_base.py):

    dt = result_type(start, stop), float64 unless inexact
    delta = stop - start                       (both cast to dt first)
    step = delta / div                         (div = num - 1, or num without endpoint)
    y = arange(num) * step, or arange(num) / div * delta where step == 0 (denormals),
        or arange(num) * delta where div <= 0 (step is then NaN)
    y += start; y[-1] = stop (with endpoint, num > 1); floor for an integer dtype

each operation rounded in dt. A C compiler contracts ``y * step + start`` into one fused
multiply-add (GCC does, at -O3 where the CPU has FMA; nvcc on the GPU): one rounding where
NumPy rounds twice, 1 ulp off. So the products are made in a scan of one element per row
(a running product, ``1 * p``, exact), whose kernel stores them: the addition reads them
rounded, from memory, and nothing else slows down.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend.handlers import Ctx, Handler
from cuvil_aot.compiler.frontend.rounded import rounded_op
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import apply, dtype_arg, fold, strong, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, TensorType, dtype_of, is_int, np_dtype

PYTHON_KINDS = {"bool": True, "int64": 0, "float64": 0.0}


def linspace(ctx: Ctx, start: Any, stop: Any, num: Any = 50, endpoint: Any = True,
             retstep: Any = False, dtype: Any = None, axis: Any = 0, *,
             device: Any = None) -> Any:
    count = _count(num, ctx)
    with_end, with_step = (_flag(v, name, ctx) for v, name in ((endpoint, "endpoint"),
                                                                 (retstep, "retstep")))
    if fold(axis) not in (0, -1):
        raise UserError(f"AxisError: destination: axis {fold(axis)} is out of bounds for "
                        "array of dimension 1", ctx.span, "axis=0 (scalar start and stop)")
    first, last = (_scalar(v, name, ctx) for v, name in ((start, "start"), (stop, "stop")))
    dt = _compute_dtype(first, last)
    div = count - 1 if with_end else count
    first, last = (strong(C.cast(v, dt, ctx.span)) for v in (first, last))
    delta = rounded_op(Op.SUB, [last, first], dt, ctx)
    ramp = C.cast(C.cast(Node(Op.IOTA, TensorType("int64", (Dim.of(count),)), span=ctx.span),
                         "float32" if dt in ("float16", "bfloat16") else dt, ctx.span), dt,
                  ctx.span)
    step: Any = math.nan  # NumPy's Python float where no step is defined
    if div > 0:
        step = rounded_op(Op.DIV, [delta, div], dt, ctx)
        by_step = rounded_op(Op.MUL, [ramp, step], dt, ctx)
        by_delta = rounded_op(Op.MUL, [rounded_op(Op.DIV, [ramp, div], dt, ctx), delta], dt,
                              ctx)
        products = apply(Op.WHERE, [apply(Op.EQ, [step, 0], ctx.span), by_delta, by_step],
                         ctx.span)
    else:
        products = rounded_op(Op.MUL, [ramp, delta], dt, ctx)
    y = rounded_op(Op.ADD, [_stored(products, ctx), first], dt, ctx)
    if with_end and count > 1:
        at_end = apply(Op.EQ, [Node(Op.IOTA, TensorType("int64", (Dim.of(count),)),
                                    span=ctx.span), count - 1], ctx.span)
        y = apply(Op.WHERE, [at_end, last, y], ctx.span)
    y = _as_dtype(y, dtype, ctx)
    return (y, step) if with_step else y


def _stored(x: Node, ctx: Ctx) -> Node:
    """``x`` through a scan of one element per row (1 * x, exact: -0.0, NaN, inf kept),
    which no consumer fuses: its users read it rounded, and cannot fuse a multiply-add."""
    column = C.reshape(x, (*x.shape, Dim.of(1)), ctx.span)
    scan = Node(Op.CUMPROD, TensorType(x.dtype, column.shape), (column,), attrs=(1,),
                span=ctx.span)
    return C.reshape(scan, x.shape, ctx.span)


def _as_dtype(y: Node, dtype: Any, ctx: Ctx) -> Node:
    """NumPy's last step: floored for an integer dtype, then cast."""
    if dtype is None:
        return y
    kind = dtype_arg(dtype, ctx.span)
    if is_int(kind):
        y = apply(Op.FLOOR, [y], ctx.span)
    return C.cast(y, kind, ctx.span)


def _count(num: Any, ctx: Ctx) -> int:
    value = fold(num)
    if isinstance(value, Node | Dim):
        raise UserError("np.linspace's num must be an int known at compile time", ctx.span,
                        "num=50, or a constant length of an argument")
    try:
        count = operator.index(value)
    except TypeError as exc:
        raise UserError(f"TypeError: {exc}", ctx.span) from None
    if count < 0:
        raise UserError(f"ValueError: Number of samples, {count}, must be non-negative.",
                        ctx.span)
    return count


def _flag(value: Any, name: str, ctx: Ctx) -> bool:
    value = fold(value)
    if not isinstance(value, bool | np.bool_ | int):
        raise UserError(f"np.linspace's {name} must be known at compile time", ctx.span,
                        f"{name}=True or {name}=False")
    return bool(value)


def _scalar(value: Any, name: str, ctx: Ctx) -> Node:
    node = to_node(value, ctx.span)
    if node.shape:
        raise UserError(f"np.linspace with an array {name} is not supported", ctx.span,
                        "scalar start and stop")
    return node


def _compute_dtype(first: Node, last: Node) -> str:
    """result_type(start, stop) with Python numbers weak, float64 unless inexact (NumPy's
    _array_converter.result_type(ensure_inexact=True))."""
    stand_ins = [PYTHON_KINDS[v.dtype] if v.type.weak else np.zeros((), np_dtype(v.dtype))
                 for v in (first, last)]
    found = np.result_type(*stand_ins)
    return dtype_of(found) if np.issubdtype(found, np.inexact) else "float64"


FUNCTIONS: dict[Any, Handler] = {np.linspace: linspace}
