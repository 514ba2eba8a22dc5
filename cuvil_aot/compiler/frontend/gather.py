"""Gathers: ``table[ids]``, ``x[:, ids]``, ``logp[np.arange(b), labels]``, ``np.take``,
``np.take_along_axis``, all as NumPy's integer-array (advanced) indexing.

Each becomes one GATHER node (ir/ops.py): the table, the index arrays broadcast to
one shape, and the axis where the indexed axes were. Advanced indices that are not
adjacent (``x[ids, :, jds]``) put the broadcast axes first, as in NumPy: the table
is permuted so that they are. Ints next to index arrays are index arrays of 0
dimensions; negative indices wrap once; an index out of range raises NumPy's
IndexError at the call (the kernels report it, see codegen/kernel_emitter.py).
Boolean masks are refused: their result's shape depends on the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import apply, fold, literal_array, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, TensorType, is_int
from cuvil_aot.errors import SourceSpan

MASK_HINT = "np.where(mask, x, 0) keeps the shape; a mask's selection has a data-dependent size"


def index_node(value: Any, span: SourceSpan) -> Node:
    """An index array (or an int, as a 0-d one) of an integer dtype; a list (``x[[0, 2]]``,
    ``x[[i, j]]``) the array np.array makes of it, an empty one of no integers (NumPy's)."""
    if isinstance(value, np.ndarray):
        raise UserError("indexing with a NumPy array captured from outside the function is "
                        "not supported", span, "pass the indices as an argument")
    if isinstance(value, list | tuple):
        node = literal_array(value, "int64" if not value else None, span)
    else:
        node = to_node(value, span)
    if node.dtype == "bool":
        raise UserError("boolean mask indexing is not supported: the result's shape would "
                        "depend on the data", span, MASK_HINT)
    if not is_int(node.dtype):
        raise UserError(f"IndexError: arrays used as indices must be of integer type, got "
                        f"{node.dtype}", span)
    return node


def gather(table: Node, axes: Sequence[int], indices: Sequence[Node],
           user_axes: Sequence[int], span: SourceSpan, take: bool = False) -> Node:
    """``table`` indexed along ``axes`` by ``indices`` (broadcast together), the other axes
    whole; ``user_axes`` name the axes in the user's array for IndexError's message
    (``take``: np.take's, which says so when the axis is empty)."""
    shape = checked(B.broadcast_all, [i.shape for i in indices], span, None, True, span=span)
    idx = tuple(checked(B.broadcast_to, i, shape, span, span=span) for i in indices)
    axes = list(axes)
    if axes != list(range(axes[0], axes[0] + len(axes))):  # not adjacent: to the front
        rest = [a for a in range(table.type.ndim) if a not in axes]
        table = C.permute(table, axes + rest, span)
        axes = list(range(len(axes)))
    axis = axes[0]
    out = table.shape[:axis] + tuple(shape) + table.shape[axis + len(axes):]
    return Node(Op.GATHER, TensorType(table.dtype, out), (table, *idx),
                attrs=(axis, tuple(user_axes), take), span=span)


def advanced(x: Node, items: list[Any], span: SourceSpan) -> tuple[list[Any], Any]:
    """Split an index with arrays into its basic part (arrays and ints as whole slices)
    and a function that gathers from the result of the basic part."""
    if any(i is Ellipsis for i in items):
        at = items.index(Ellipsis)
        used = sum(1 for i in items if i is not None and i is not Ellipsis)
        items = items[:at] + [slice(None)] * (x.type.ndim - used) + items[at + 1:]
    basic: list[Any] = []
    axes: list[int] = []
    user_axes: list[int] = []
    indices: list[Node] = []
    axis = 0
    for pos, item in enumerate(items):
        if item is None or isinstance(item, slice):
            basic.append(item)
        else:
            indices.append(index_node(item, span))
            axes.append(pos)
            user_axes.append(axis)
            basic.append(slice(None))
        axis += item is not None
    return basic, lambda table: gather(table, axes, indices, user_axes, span)


def _axis(axis: Any, ndim: int, ctx: Ctx) -> int:
    axis = fold(axis)
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
        raise UserError("axis must be an int known at compile time or None", ctx.span)
    return checked(B.normalize_axes, (int(axis),), ndim, span=ctx.span)[0]


def take(ctx: Ctx, a: Any, indices: Any, axis: Any = None, out: Any = None,
         mode: str = "raise") -> Node:
    if out is not None:
        raise UserError("np.take does not support out=", ctx.span, "np.take(a, indices, axis)")
    if mode not in ("raise", "clip", "wrap"):
        raise UserError(f"ValueError: clipmode must be one of 'clip', 'raise', or 'wrap' "
                        f"(got {mode!r})", ctx.span)
    x = to_node(a, ctx.span)
    idx = index_node(indices, ctx.span)
    if axis is None:
        x = checked(C.reshape, x, (C.total(x.shape),), ctx.span, span=ctx.span)
    ax = 0 if axis is None else _axis(axis, x.type.ndim, ctx)
    return gather(x, [ax], [_in_range(idx, x.shape[ax], mode, ctx)], [ax], ctx.span, take=True)


def _in_range(idx: Node, n: Dim, mode: str, ctx: Ctx) -> Node:
    """np.take's indices as its mode makes them: clipped to [0, n - 1] (a negative one to
    0), or wrapped mod n; as they are for 'raise' (the gather's IndexError). An empty axis
    still raises, as NumPy's 'cannot do a non-empty take'."""
    if mode == "raise":
        return idx
    length = B.const(n, "int64", ctx.span)
    if mode == "wrap":
        return apply(Op.MOD, [idx, length], ctx.span)
    last = apply(Op.SUB, [length, 1], ctx.span)
    return apply(Op.MAXIMUM, [apply(Op.MINIMUM, [idx, last], ctx.span), 0], ctx.span)


def take_along_axis(ctx: Ctx, arr: Any, indices: Any, axis: Any = -1) -> Node:
    x = to_node(arr, ctx.span)
    idx = index_node(indices, ctx.span)
    if axis is None:
        if idx.type.ndim != 1:
            raise UserError("when axis=None, `indices` must have a single dimension.", ctx.span)
        flat = checked(C.reshape, x, (C.total(x.shape),), ctx.span, span=ctx.span)
        return gather(flat, [0], [idx], [0], ctx.span)
    if idx.type.ndim != x.type.ndim:
        raise UserError("`indices` and `arr` must have the same number of dimensions",
                        ctx.span)
    ax = _axis(axis, x.type.ndim, ctx)
    parts = []
    for d, n in enumerate(x.shape):
        if d == ax:
            parts.append(idx)
            continue
        ramp = Node(Op.IOTA, TensorType("int64", (n,)), span=ctx.span)
        ones = tuple(n if k == d else Dim.of(1) for k in range(x.type.ndim))
        parts.append(C.reshape(ramp, ones, ctx.span))
    return gather(x, list(range(x.type.ndim)), parts, list(range(x.type.ndim)), ctx.span)


FUNCTIONS: dict[Any, Handler] = {np.take: take, np.take_along_axis: take_along_axis}
METHODS: dict[str, Handler] = {"take": take}
