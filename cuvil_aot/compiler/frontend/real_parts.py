"""NumPy's complex-number functions of real values (the compiler has no complex dtype; a
complex number stays refused where it is written):

- np.real(x): x itself (NumPy returns the same array, a Python number as it is);
- np.imag(x): zeros of x's dtype and shape (of a Python number, Python's 0 or 0.0);
- np.conj / np.conjugate(x): a copy, of the ufunc's dtype (bool gives int8);
- np.angle(x, deg=False): arctan2(0, x), NumPy's own formula: 0 for x >= +0.0, pi for
  x < 0 and for -0.0 and -inf, NaN for NaN, in arctan2's float dtype (int8 gives float16,
  bool and int32 float64); with ``deg`` times 180/pi in that dtype.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler, copy, now
from cuvil_aot.compiler.frontend.rounded import rounded_op
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import fold, is_number, strong, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import dtype_of, np_dtype

PYTHON_ZERO = {"bool": 0, "int64": 0, "float64": 0.0}  # (True).imag is the int 0


def real(ctx: Ctx, val: Any) -> Any:
    return fold(val) if is_number(val) else to_node(val, ctx.span)


def imag(ctx: Ctx, val: Any) -> Any:
    if is_number(val):
        return np.imag(fold(val))
    x = to_node(val, ctx.span)
    if x.type.weak:  # a Python number known at the call: its .imag, a Python zero
        return PYTHON_ZERO[x.dtype]
    zero = B.const(np.zeros((), np_dtype(x.dtype)).item(), x.dtype, ctx.span)
    return B.broadcast_to(zero, x.shape, ctx.span) if x.shape else \
        C.cast(zero, x.dtype, ctx.span)


def conjugate(ctx: Ctx, x: Any, /) -> Any:
    """A copy in the ufunc's dtype: its loops start at int8, so bool becomes int8."""
    if is_number(x):
        return now(np.conjugate, [x], ctx)
    node = to_node(x, ctx.span)
    dtype = _result_dtype(np.conjugate, node)
    return copy(ctx, strong(node)) if dtype == node.dtype else C.cast(node, dtype, ctx.span)


def angle(ctx: Ctx, z: Any, deg: Any = False) -> Any:
    flag = fold(deg)
    if not isinstance(flag, bool | np.bool_ | int):
        raise UserError("np.angle's deg must be known at compile time", ctx.span,
                        "deg=True or deg=False")
    if is_number(z):
        return now(lambda v: np.angle(v, deg=bool(flag)), [z], ctx)
    x = strong(to_node(z, ctx.span))  # asanyarray: a Python number becomes an array
    dtype = _result_dtype(lambda v: np.arctan2(0, v), x)
    turn = rounded_op(Op.ARCTAN2, [B.const(0, dtype), x], dtype, ctx)
    if flag:  # NumPy's a *= 180/pi, the Python float rounded to a's dtype
        scale = np_dtype(dtype).type(180 / math.pi).item()
        turn = rounded_op(Op.MUL, [turn, B.const(scale, dtype)], dtype, ctx)
    return turn


def _result_dtype(fn: Any, x: Node) -> str:
    """The dtype NumPy's ``fn`` gives for an array of x's dtype."""
    try:
        return dtype_of(np.asarray(fn(np.zeros(1, np_dtype(x.dtype)))).dtype)
    except TypeError as exc:
        raise UserError(f"{exc}", x.span) from None


FUNCTIONS: dict[Any, Handler] = {
    np.real: real, np.imag: imag, np.conjugate: conjugate, np.angle: angle,
}
