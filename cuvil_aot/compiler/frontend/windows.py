"""np.lib.stride_tricks.sliding_window_view, the way NumPy users write convolutions and
unfolds (a 1-D convolution: ``np.einsum("ctk,ock->ot", sliding_window_view(xp, 3, axis=1),
w)``), as a composition: per windowed axis in turn, the window's ``w`` shifted slices of
length ``n - w + 1`` stacked along a new last axis. Element ``[..., i, ..., j]`` is
``x[..., i + j, ...]``, so fusion reads x through the offsets and nothing is copied where
a consumer fuses. NumPy's checks are NumPy's errors: window lengths known at compile time
and not negative, one per axis, none longer than its axis (at the call where the axis is
symbolic).

NumPy returns a read-only view; this is a fresh array. A program that runs under NumPy
never writes into it (NumPy raises), so the difference cannot change a result.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.handlers import Ctx
from cuvil_aot.compiler.frontend.shapes import axis_of, piece
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import fold, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.types import Dim

# Each window is that many slices stacked: longer windows compile to long concatenations
MAX_WINDOW = 64


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
    count = n - length + 1
    parts = [piece(x, axis, Dim.of(j), count + j, ctx) for j in range(length)]
    return checked(B.stack, parts, -1, ctx.span, span=ctx.span)


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
    if any(w == 0 or w > MAX_WINDOW for w in windows):
        raise UserError(f"windows of 1 to {MAX_WINDOW} elements are supported (each is that "
                        "many slices stacked)", ctx.span,
                        "a longer window as a product with a banded matrix")
    out = a
    for ax, w in zip(axes, windows):
        out = _window(out, ax, w, ctx)
    return out


FUNCTIONS = {np.lib.stride_tricks.sliding_window_view: sliding_window_view}
