"""np.cov and np.corrcoef as NumPy computes them (numpy/lib/_function_base_impl.py): the
observations in float64 (or the operands' wider type, or dtype=), each variable's mean
taken out, the products of the centred rows over N - ddof (0 where that is not positive,
as NumPy's, whose warning is not raised here: the factor is then inf), the result squeezed
(a symbolic count of variables is built for more than one: a call with one does not match);
the correlation that over the outer product of the standard deviations, clipped to
[-1, 1]. Without weights (fweights= and aweights= are refused)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.creation import ramp
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler, np_matmul, squeeze
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import apply, dtype_arg, fold, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, dtype_of, np_dtype


def _observations(x: Node, rowvar: bool, dtype: str, what: str, ctx: Ctx) -> Node:
    """``x`` as NumPy's cov makes its X: at least 2-D, in ``dtype``, variables as rows."""
    if x.type.ndim > 2:
        raise UserError(f"ValueError: {what} has more than 2 dimensions", ctx.span)
    rows = C.cast(x, dtype, ctx.span)
    if rows.type.ndim < 2:
        rows = C.reshape(rows, (Dim.of(1),) * (2 - rows.type.ndim) + rows.shape, ctx.span)
    if not rowvar and x.type.ndim == 2:
        rows = C.permute(rows, (1, 0), ctx.span)
    return rows


def cov(ctx: Ctx, m: Any, y: Any = None, rowvar: Any = True, bias: Any = False,
        ddof: Any = None, fweights: Any = None, aweights: Any = None, *,
        dtype: Any = None) -> Node:
    if fweights is not None or aweights is not None:
        raise UserError("np.cov with fweights= or aweights= is not supported", ctx.span,
                        "np.cov without weights")
    ddof = fold(ddof)
    if ddof is not None and (isinstance(ddof, bool) or not isinstance(ddof, int | np.integer)):
        raise UserError("np.cov's ddof must be an int known at compile time", ctx.span)
    x = to_node(m, ctx.span)
    operands = [x] + ([] if y is None else [to_node(y, ctx.span)])
    if dtype is None:
        dtype = dtype_of(np.result_type(*(np_dtype(v.dtype) for v in operands), np.float64))
    else:
        dtype = dtype_arg(dtype, ctx.span)
    rowvar = bool(fold(rowvar))
    obs = _observations(x, rowvar, dtype, "m", ctx)
    if y is not None:
        other = _observations(operands[1], True, dtype, "y", ctx)
        if not rowvar and other.shape[0] != Dim.of(1):
            other = C.permute(other, (1, 0), ctx.span)
        obs = checked(B.concat, [obs, other], 0, ctx.span, span=ctx.span)
    if obs.shape[0] == Dim.of(0):  # NumPy's early return: an empty (0, 0) array
        return checked(B.broadcast_to, B.const(0.0, "float64", ctx.span),
                       (Dim.of(0), Dim.of(0)), ctx.span, span=ctx.span)
    variables, n = obs.shape
    if not variables.is_static:  # NumPy squeezes one variable's (1, 1) to a number
        ctx.requirements.append((variables - 2, "np.cov built for more than one variable (of "
                                                "one, NumPy's result is a number)"))
    mean = checked(B.reduce, Op.SUM, obs, (1,), True, ctx.span, span=ctx.span)
    mean = apply(Op.DIV, [mean, C.cast(B.const(n, span=ctx.span), dtype, ctx.span)], ctx.span)
    centred = apply(Op.SUB, [obs, mean], ctx.span)
    products = np_matmul(ctx, centred, C.permute(centred, (1, 0), ctx.span))
    fact = apply(Op.SUB, [C.cast(B.const(n, span=ctx.span), dtype, ctx.span),
                          float(ddof if ddof is not None else 0 if fold(bias) else 1)], ctx.span)
    positive = apply(Op.GT, [fact, 0.0], ctx.span)
    scale = apply(Op.DIV, [1.0, apply(Op.WHERE, [positive, fact, 0.0], ctx.span)], ctx.span)
    return squeeze(ctx, apply(Op.MUL, [products, C.cast(scale, dtype, ctx.span)], ctx.span))


def corrcoef(ctx: Ctx, x: Any, y: Any = None, rowvar: Any = True, *, dtype: Any = None) -> Node:
    c = cov(ctx, x, y, rowvar, dtype=dtype)
    if c.type.ndim == 0:  # one variable: NumPy's c / c
        return apply(Op.DIV, [c, c], ctx.span)
    n = c.shape[0]
    eye = apply(Op.EQ, [C.reshape(ramp(n, ctx), (n, Dim.of(1)), ctx.span), ramp(n, ctx)],
                ctx.span)
    diagonal = checked(B.reduce, Op.SUM, apply(Op.WHERE, [eye, c, 0.0], ctx.span), (1,), False,
                       ctx.span, span=ctx.span)
    stddev = apply(Op.SQRT, [diagonal], ctx.span)
    scaled = apply(Op.DIV, [c, C.reshape(stddev, (n, Dim.of(1)), ctx.span)], ctx.span)
    scaled = apply(Op.DIV, [scaled, stddev], ctx.span)
    return apply(Op.MAXIMUM, [apply(Op.MINIMUM, [scaled, 1.0], ctx.span), -1.0], ctx.span)


FUNCTIONS: dict[Any, Handler] = {np.cov: cov, np.corrcoef: corrcoef}
