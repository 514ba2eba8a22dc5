"""Sliding windows and what NumPy builds from them.

np.lib.stride_tricks.sliding_window_view, the way NumPy users write convolutions and
unfolds (a 1-D convolution: ``np.einsum("ctk,ock->ot", sliding_window_view(xp, 3, axis=1),
w)``), is a view as NumPy's is: Op.WINDOW per windowed axis in turn, read at index
``i + j`` by whatever consumes it (ir/indexing.through), so nothing is copied or
bounds-checked (as stacked shifted slices, then as a gather, a 3 x 3 im2col convolution at
64 x 32 x 32 took 14.9 and 7.8 ms, as the view 4.35, all on a busy machine). NumPy's
checks are NumPy's errors: window lengths known at compile time and not negative, one per
axis, none longer than its axis (at the call where the axis is symbolic). As NumPy's
read-only view, it cannot be assigned into (assign.py refuses views).

np.convolve and np.correlate of 1-D operands (0-d ones as one element in convolve, as
NumPy's), modes full, same and valid: the full correlation of the longer operand, padded,
with the shorter, c[k] = sum_n long[k + n - (S - 1)] * short[n], as the shorter's windows
times it, summed in NumPy's result dtype (int8 wraps as NumPy's does). Convolve reverses
the shorter first; same and valid are slices of the full result; correlate with the
second operand the longer reverses its result, as NumPy's swap does. The shorter length
must be known at compile time; the other may be symbolic and is assumed the longer
(checked at the call where the mode's length depends on which is).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import composed, shapes
from cuvil_aot.compiler.frontend.handlers import REDUCTIONS, Ctx, Handler
from cuvil_aot.compiler.frontend.shapes import axis_of, piece
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import apply, fold, strong, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, np_dtype


def _ints(value: Any, what: str, ctx: Ctx) -> tuple[int, ...]:
    values = fold(value)
    values = tuple(values) if isinstance(values, tuple | list) else (values,)
    out = []
    for v in map(fold, values):
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise UserError(f"sliding_window_view's {what} must be ints known at compile time",
                            ctx.span, "a Python int or a tuple of them")
        out.append(int(v))
    return tuple(out)


def _window(x: Node, axis: int, length: int, ctx: Ctx) -> Node:
    """x's windows of ``length`` along ``axis``, as a new last axis."""
    n = x.shape[axis]
    if n.is_static and n.value < length:
        raise UserError("ValueError: window shape cannot be larger than input array shape",
                        ctx.span)
    if not n.is_static:
        ctx.requirements.append((n - length, C.Raises("ValueError", (
            "window shape cannot be larger than input array shape",))))
    return C.window(x, axis, length, ctx.span)


def sliding_window_view(ctx: Ctx, x: Any, window_shape: Any, axis: Any = None, *,
                        subok: Any = False, writeable: Any = False) -> Node:
    a = to_node(x, ctx.span)
    if fold(writeable):
        raise UserError("sliding_window_view(..., writeable=True) is not supported: its "
                        "windows share elements", ctx.span, "writeable=False (the default)")
    windows = _ints(window_shape, "window_shape", ctx)
    if any(w < 0 for w in windows):
        raise UserError("ValueError: `window_shape` cannot contain negative values", ctx.span)
    if axis is None:
        if len(windows) != a.type.ndim:
            raise UserError(f"ValueError: Since axis is `None`, must provide window_shape for "
                            f"all dimensions of `x`; got {len(windows)} window_shape elements "
                            f"and `x.ndim` is {a.type.ndim}.", ctx.span)
        axes = tuple(range(a.type.ndim))
    else:
        axes = tuple(axis_of(a, ax, ctx) for ax in _ints(axis, "axis", ctx))
        if len(axes) != len(windows):
            raise UserError(f"ValueError: Must provide matching length window_shape and axis; "
                            f"got {len(windows)} window_shape elements and {len(axes)} axes "
                            "elements.", ctx.span)
    out = a
    for ax, w in zip(axes, windows):
        out = _window(out, ax, w, ctx)
    return out


# np.convolve and np.correlate ------------------------------------------------------------

def _operand(x: Any, ctx: Ctx, ndmin: bool) -> Node:
    """A 1-D operand, a Python number as a NumPy one; 0-d: one element where ``ndmin``
    (np.convolve's array(x, ndmin=1)), else NumPy's ValueError (np.correlate's)."""
    a = strong(to_node(x, ctx.span))
    if a.type.ndim > 1:
        raise UserError("ValueError: object too deep for desired array", ctx.span)
    if a.type.ndim == 0 and not ndmin:
        raise UserError("ValueError: object of too small depth for desired array", ctx.span)
    return C.reshape(a, (Dim.of(1),), ctx.span) if a.type.ndim == 0 else a


def _not_empty(n: Dim, message: str, ctx: Ctx) -> None:
    if n.is_static and n.value == 0:
        raise UserError(f"ValueError: {message}", ctx.span)
    if not n.is_static:
        ctx.requirements.append((n - 1, C.Raises("ValueError", (message,))))


def _second_is_longer(m: Dim, n: Dim, mode: str, ctx: Ctx) -> bool:
    """Whether NumPy swaps the operands (the second longer), known at compile time: from the
    lengths, or assumed of the symbolic one where only the other is known, and then checked
    at the call where the mode's length depends on it."""
    if m.is_static and n.is_static:
        return n.value > m.value
    if not m.is_static and not n.is_static:
        raise UserError("the shorter operand's length must be known at compile time",
                        ctx.span, "an operand of a constant length")
    swap = not n.is_static  # the symbolic one the longer
    if mode != "full":  # its length: the longer's (same) or the difference (valid)
        need = n - m - 1 if swap else m - n
        ctx.requirements.append((need, f"mode={mode!r} built for the operand of a symbolic "
                                       "length being the longer"))
    return swap


def _full(long_: Node, short: Node, ctx: Ctx) -> Node:
    """c[k] = sum_n long_[k + n - (S - 1)] * short[n], k < L + S - 1, in NumPy's dtype."""
    width = short.shape[0].value
    padded = shapes.pad(ctx, long_, (width - 1, width - 1))
    products = apply(Op.MUL, [_window(padded, 0, width, ctx), short], ctx.span)
    summed: Node = REDUCTIONS[np.sum](ctx, products, axis=-1, dtype=np_dtype(products.dtype))
    return summed


def _mode_of(mode: Any, ctx: Ctx) -> str:
    mode = fold(mode)
    if mode not in ("full", "same", "valid"):
        raise UserError(f"ValueError: mode must be one of 'valid', 'same', or 'full' (got "
                        f"{mode!r})", ctx.span)
    return str(mode)


def _cut(full: Node, long_: Dim, short: int, mode: str, ctx: Ctx) -> Node:
    if mode == "full":
        return full
    start = Dim.of((short - 1) // 2 if mode == "same" else short - 1)
    stop = start + long_ if mode == "same" else long_
    return piece(full, 0, start, stop, ctx)


def convolve(ctx: Ctx, a: Any, v: Any, mode: Any = "full") -> Node:
    x, y, kind = _operand(a, ctx, True), _operand(v, ctx, True), _mode_of(mode, ctx)
    _not_empty(x.shape[0], "a cannot be empty", ctx)
    _not_empty(y.shape[0], "v cannot be empty", ctx)
    if _second_is_longer(x.shape[0], y.shape[0], kind, ctx):
        x, y = y, x
    flipped = composed.flip(ctx, y)
    return _cut(_full(x, flipped, ctx), x.shape[0], y.shape[0].value, kind, ctx)


def correlate(ctx: Ctx, a: Any, v: Any, mode: Any = "valid") -> Node:
    x, y, kind = _operand(a, ctx, False), _operand(v, ctx, False), _mode_of(mode, ctx)
    _not_empty(x.shape[0], "first array argument cannot be empty", ctx)
    _not_empty(y.shape[0], "second array argument cannot be empty", ctx)
    if not _second_is_longer(x.shape[0], y.shape[0], kind, ctx):
        return _cut(_full(x, y, ctx), x.shape[0], y.shape[0].value, kind, ctx)
    return composed.flip(ctx, _cut(_full(y, x, ctx), y.shape[0], x.shape[0].value, kind, ctx))


FUNCTIONS: dict[Any, Handler] = {
    np.lib.stride_tricks.sliding_window_view: sliding_window_view,
    np.convolve: convolve, np.correlate: correlate}
