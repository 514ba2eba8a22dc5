"""Array creation inside a compiled function: np.arange, np.zeros/ones/full/empty
(and their *_like), np.eye/identity, np.tri/triu/tril, and rounding (np.round, np.rint).

Sizes are ints or dimensions of the arguments (symbolic ones included); a size computed
from a run-time number is refused, since it would make the result's shape depend on data.
A filled array is a constant broadcast, never stored unless returned; an index ramp
(np.arange) is the IR's IOTA, and masks built from ramps (eye, tri, triu, tril, and the
user's own ``np.arange(t)[:, None] >= np.arange(t)``) are computed where they are read.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler
from cuvil_aot.compiler.frontend.shape_args import is_call_int, run_time_int, shape_arg
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import (
    apply,
    dtype_arg,
    fold,
    is_number,
    is_symbolic,
    run_time_origin,
    strong,
    to_node,
)
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, TensorType, is_float, is_int

SIZE_HINT = "a size from the arguments' shapes (x.shape[0]) or a constant"


# Filled arrays -----------------------------------------------------------------------

def _dims(shape: Any, ctx: Ctx) -> tuple[Dim, ...]:
    return tuple(Dim.of(d) for d in shape_arg(shape, ctx))


def _fill_dtype(fill_value: Any, dtype: Any, ctx: Ctx) -> str:
    if dtype is not None:
        return dtype_arg(dtype, ctx.span)
    if isinstance(fill_value, Node):
        return fill_value.dtype
    if is_symbolic(fill_value):
        return "int64"  # a size, as NumPy holds an int
    return str(np.asarray(fold(fill_value)).dtype.name)


def filled(shape: tuple[Dim, ...], fill_value: Any, dtype: str, ctx: Ctx) -> Node:
    """An array of ``shape`` holding ``fill_value`` converted to ``dtype`` (unsafe
    casting, as np.full does; a Python int out of an integer dtype's range raises NumPy's
    OverflowError, now for a constant, at the call for an int known only then)."""
    if is_number(fill_value):
        source = B.const(_converted(fold(fill_value), dtype, ctx), dtype, ctx.span)
    else:
        value = to_node(fill_value, ctx.span)
        if value.type.weak and value.dtype == "int64" and not value.shape and is_int(dtype):
            B.check_python_int(value, dtype)
        source = C.cast(strong(value), dtype, ctx.span)
        if source.shape:
            return B.broadcast_to(source, shape, ctx.span)
    # A node of its own (not a shaped CONST): a returned filled array is stored.
    if not shape:
        return Node(Op.CAST, TensorType(dtype, ()), (source,), span=ctx.span)
    return Node(Op.BROADCAST, TensorType(dtype, shape), (source,), span=ctx.span)


def _converted(value: Any, dtype: str, ctx: Ctx) -> Any:
    """A fill value known now as np.full converts it: NumPy runs it."""
    try:
        with np.errstate(all="ignore"):
            return np.full((), value, dtype)[()].item()
    except OverflowError as exc:  # a Python int out of the dtype's range
        raise UserError(f"OverflowError: {exc}", ctx.span) from None


def _constant_filler(value: int) -> Handler:
    def handler(ctx: Ctx, shape: Any, dtype: Any = None, order: str = "C") -> Node:
        return filled(_dims(shape, ctx), value, dtype_arg(dtype or float, ctx.span), ctx)
    return handler


def full(ctx: Ctx, shape: Any, fill_value: Any, dtype: Any = None, order: str = "C") -> Node:
    return filled(_dims(shape, ctx), fill_value, _fill_dtype(fill_value, dtype, ctx), ctx)


def _like_filler(value: int) -> Handler:
    """zeros_like, ones_like, empty_like (any value is right for it: 0)."""
    def handler(ctx: Ctx, a: Any, dtype: Any = None, order: str = "K", subok: bool = True,
                shape: Any = None) -> Node:
        return full_like(ctx, a, value, dtype, order, subok, shape)
    return handler


def full_like(ctx: Ctx, a: Any, fill_value: Any, dtype: Any = None, order: str = "K",
              subok: bool = True, shape: Any = None) -> Node:
    x = to_node(a, ctx.span)
    dims = x.shape if shape is None else _dims(shape, ctx)
    return filled(dims, fill_value, x.dtype if dtype is None else dtype_arg(dtype, ctx.span), ctx)


# Index ramps ---------------------------------------------------------------------------

def ramp(n: Dim, ctx: Ctx) -> Node:
    """0, 1, ..., n - 1 as int64."""
    return Node(Op.IOTA, TensorType("int64", (n,)), span=ctx.span)


def _size(value: Any, what: str, ctx: Ctx) -> Any:
    """A number known now (int, float, NumPy scalar) or a dimension."""
    value = fold(value)
    if isinstance(value, Node):
        raise UserError(f"{what} is a number known only at run time (from "
                        f"{run_time_origin(value)}), so the result's shape would depend on "
                        "data", ctx.span, SIZE_HINT)
    if isinstance(value, bool) or not isinstance(value, int | float | Dim | np.generic):
        raise UserError(f"{what} must be a number, got {type(value).__name__}", ctx.span)
    return value


def _count(length: Dim, step: Any, ctx: Ctx) -> Dim:
    """How many of start, start + step, ... lie below a symbolic stop: ceil(length / step),
    0 where the length is negative (NumPy's empty range), a size the call computes."""
    if isinstance(step, bool) or not isinstance(step, int | np.integer) or step <= 0:
        raise UserError("np.arange up to a symbolic dimension takes an int start and a "
                        "positive int step", ctx.span, "np.arange(start, n, step)")
    if step == 1 and length.known_nonnegative():
        return length
    name = C.derived_symbol(length, int(step))
    ctx.derived.append((name, length, int(step)))
    return Dim.of(name)


def arange(ctx: Ctx, start_or_stop: Any, stop: Any = None, step: Any = None, /,
           dtype: Any = None) -> Node:
    start, stop = (0, start_or_stop) if stop is None else (start_or_stop, stop)
    start, stop = fold(start), fold(stop)
    if is_call_int(start) or is_call_int(stop):
        return _arange_at_call(ctx, start, stop, 1 if step is None else step, dtype)
    start, stop, step = (_size(v, f"arange's {name}", ctx) for v, name in
                         ((start, "start"), (stop, "stop"), (1 if step is None else step, "step")))
    if is_symbolic(step):
        raise UserError("np.arange takes a symbolic dimension as its start or stop only",
                        ctx.span, "np.arange(start, n, step) with a constant step")
    if is_symbolic(start):  # np.arange(past, past + T): positions after a cache's
        return _arange_at_call(ctx, start, stop, step, dtype)
    if step == 0:
        raise UserError("ZeroDivisionError: arange's step is 0", ctx.span)
    kind = dtype_arg(dtype, ctx.span) if dtype is not None else \
        np.arange(start, start + step, step).dtype.name
    if is_symbolic(stop):
        if isinstance(start, bool) or not isinstance(start, int | np.integer):
            raise UserError("np.arange up to a symbolic dimension takes an int start",
                            ctx.span, "np.arange(start, n, step)")
        n: int | Dim = _count(stop - int(start), step, ctx)
    else:
        n = max(0, math.ceil((float(stop) - float(start)) / float(step)))
    # NumPy fills start + i * delta in the result dtype, delta being the difference of its
    # first two values; from 0 by 1 that is the index itself.
    first = np.asarray(start).astype(kind)[()]
    delta = np.asarray(start + step).astype(kind)[()] - first
    out = C.cast(ramp(Dim.of(n), ctx), kind, ctx.span)
    if delta != 1:
        out = apply(Op.MUL, [out, B.const(delta.item(), kind, ctx.span)], ctx.span)
    if first != 0:
        out = apply(Op.ADD, [B.const(first.item(), kind, ctx.span), out], ctx.span)
    return out


def _arange_at_call(ctx: Ctx, start: Any, stop: Any, step: Any, dtype: Any) -> Node:
    """``np.arange(pos, pos + T)``, ``np.arange(0, d, 2)`` with ints known at the call
    (``pos``, ``d = C // n_head``): a ramp whose length the call computes (``T`` itself
    where the stop is the start plus a size), start + i * step in the result dtype."""
    for value, name in ((start, "start"), (stop, "stop")):
        if not is_call_int(value) and not isinstance(_size(value, f"arange's {name}", ctx),
                                                       int | np.integer | Dim):
            raise UserError(f"np.arange with an int known at the call takes an int {name}",
                            ctx.span, "np.arange(pos, pos + n, step) with int bounds")
    step = _size(step, "arange's step", ctx)
    length = _difference(stop, start)
    if length is None:  # max(stop - start, 0): a size the call computes
        gap = apply(Op.SUB, [to_node(stop, ctx.span), to_node(start, ctx.span)], ctx.span)
        length = run_time_int(apply(Op.MAXIMUM, [gap, to_node(0, ctx.span)], ctx.span), ctx)
    n = _count(Dim.of(length), step, ctx)
    kind = dtype_arg(dtype, ctx.span) if dtype is not None else \
        np.arange(_sample(start), _sample(stop), step).dtype.name  # np.int32 bounds: int32
    out = C.cast(ramp(n, ctx), kind, ctx.span)
    if step != 1:
        out = apply(Op.MUL, [out, B.const(int(step), kind, ctx.span)], ctx.span)
    return apply(Op.ADD, [C.cast(to_node(start, ctx.span), kind, ctx.span), out], ctx.span)


def _sample(value: Any) -> Any:
    """A number of the value's type (a weak int: Python's) for NumPy's dtype rules."""
    if isinstance(value, Node):
        return 0 if value.type.weak else np.zeros((), value.dtype)[()]
    return 0 if isinstance(value, Dim) else value


def _difference(stop: Any, start: Any) -> int | Dim | None:
    """stop - start where it is known now: both numbers or sizes, or stop is ``start + c``."""
    if not isinstance(stop, Node) and not isinstance(start, Node):
        return Dim.of(stop) - Dim.of(start)
    if isinstance(stop, Node) and stop.op is Op.ADD:
        for a, b in (stop.srcs, stop.srcs[::-1]):
            if a is start and b.op is Op.CONST and isinstance(b.attrs[0], int | Dim) \
                    and not isinstance(b.attrs[0], bool):
                return b.attrs[0]
    return None


# Triangles and diagonals ------------------------------------------------------------------

def _offsets(rows: Dim, cols: Dim, ctx: Ctx) -> Node:
    """j - i over a (rows, cols) grid: the diagonal offset of each element."""
    i = C.reshape(ramp(rows, ctx), (rows, Dim.of(1)), ctx.span)
    j = C.reshape(ramp(cols, ctx), (Dim.of(1), cols), ctx.span)
    return apply(Op.SUB, [j, i], ctx.span)


def _diagonal_k(k: Any, ctx: Ctx) -> int | Dim | Node:
    """The diagonal offset: an int, or one known at the call (a KV cache's causal mask,
    np.triu(ones, k=S - T + 1): a symbolic dimension or an int argument)."""
    k = fold(k)
    if isinstance(k, Dim):
        return k
    if isinstance(k, Node) and not k.shape and is_int(k.dtype):
        return k
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise UserError("the diagonal offset k must be an int", ctx.span)
    return int(k)


def _grid(N: Any, M: Any, ctx: Ctx) -> tuple[Dim, Dim]:
    rows = Dim.of(_size(N, "N", ctx))
    return rows, rows if M is None else Dim.of(_size(M, "M", ctx))


def eye(ctx: Ctx, N: Any, M: Any = None, k: Any = 0, dtype: Any = float,
        order: str = "C") -> Node:
    rows, cols = _grid(N, M, ctx)
    on = apply(Op.EQ, [_offsets(rows, cols, ctx), _diagonal_k(k, ctx)], ctx.span)
    return C.cast(on, dtype_arg(dtype, ctx.span), ctx.span)


def identity(ctx: Ctx, n: Any, dtype: Any = float) -> Node:
    return eye(ctx, n, dtype=dtype)


def tri(ctx: Ctx, N: Any, M: Any = None, k: Any = 0, dtype: Any = float) -> Node:
    rows, cols = _grid(N, M, ctx)
    below = apply(Op.LE, [_offsets(rows, cols, ctx), _diagonal_k(k, ctx)], ctx.span)
    return C.cast(below, dtype_arg(dtype, ctx.span), ctx.span)


def _triangle(keep: Op) -> Handler:
    """tril (keep j - i <= k) and triu (keep j - i >= k) of the last two axes; a 1-D
    array is taken as the rows of a square matrix, as NumPy does."""
    def handler(ctx: Ctx, m: Any, k: Any = 0) -> Node:
        x = to_node(m, ctx.span)
        if not x.shape:
            raise UserError("tril and triu need an array of at least 1 dimension", ctx.span)
        rows, cols = (x.shape[-1], x.shape[-1]) if x.type.ndim == 1 else x.shape[-2:]
        kept = apply(keep, [_offsets(rows, cols, ctx), _diagonal_k(k, ctx)], ctx.span)
        return apply(Op.WHERE, [kept, x, B.const(0, x.dtype, ctx.span)], ctx.span)
    return handler


# Rounding ----------------------------------------------------------------------------------

def rint(ctx: Ctx, x: Any, /) -> Any:
    if is_number(x):
        return np.rint(fold(x))
    return strong(apply(Op.RINT, [x], ctx.span))


def round_(ctx: Ctx, a: Any, decimals: Any = 0, out: Any = None) -> Any:
    """NumPy's rounding: rint(a * 10**d) / 10**d (rint(a / 10**-d) * 10**-d for d < 0),
    in a's own dtype; integers are already round for d >= 0."""
    if out is not None:
        raise UserError("round(..., out=) is not supported", ctx.span, "y = np.round(x)")
    d = fold(decimals)
    if isinstance(d, bool) or not isinstance(d, int | np.integer):
        raise UserError("decimals must be an int known at compile time", ctx.span)
    if is_number(a):
        return np.round(fold(a), int(d))
    x = strong(to_node(a, ctx.span))
    if not is_float(x.dtype):  # NumPy rounds integers to d < 0 in float64, cast back
        return x if d >= 0 else C.cast(_rounded(C.cast(x, "float64"), int(d), ctx), x.dtype)
    return _rounded(x, int(d), ctx)


def _rounded(x: Node, d: int, ctx: Ctx) -> Node:
    if d == 0:
        return apply(Op.RINT, [x], ctx.span)
    scale = 10.0 ** abs(d)
    shrink, grow = (Op.DIV, Op.MUL) if d < 0 else (Op.MUL, Op.DIV)
    return apply(grow, [apply(Op.RINT, [apply(shrink, [x, scale], ctx.span)], ctx.span),
                        scale], ctx.span)


def _type_info(info: Any) -> Handler:
    """np.finfo / np.iinfo of a dtype: NumPy's own object (its .min, .max, .eps are
    NumPy scalars, known now)."""
    def handler(ctx: Ctx, dtype: Any) -> Any:
        kind = dtype.dtype if isinstance(dtype, Node) else dtype_arg(dtype, ctx.span)
        try:
            return info(kind)
        except ValueError as exc:
            raise UserError(f"np.{info.__name__}(): {exc}", ctx.span) from None
    return handler


FUNCTIONS: dict[Any, Handler] = {
    np.finfo: _type_info(np.finfo), np.iinfo: _type_info(np.iinfo),
    np.zeros: _constant_filler(0), np.ones: _constant_filler(1), np.empty: _constant_filler(0),
    np.full: full, np.zeros_like: _like_filler(0), np.ones_like: _like_filler(1),
    np.empty_like: _like_filler(0), np.full_like: full_like,
    np.arange: arange, np.eye: eye, np.identity: identity, np.tri: tri,
    np.tril: _triangle(Op.LE), np.triu: _triangle(Op.GE),
    np.rint: rint, np.round: round_, np.around: round_,
}
METHODS: dict[str, Handler] = {"round": round_}
