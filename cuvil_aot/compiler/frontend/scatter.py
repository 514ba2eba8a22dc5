"""Scatter assignment: ``x[ids] = v``, ``x[:, ids] = v``, ``logits[rows, prev_ids] = score``
and ``x[ids] += v``, as NumPy's ``__setitem__`` with integer-array (advanced) indices.

Each becomes one SCATTER node (ir/ops.py): the old array with the positions the index
arrays name replaced by the value. As in a gather (gather.py), the index arrays broadcast
together to one shape S, ints beside them are index arrays of 0 dimensions, and S takes
the place of the indexed axes where they are adjacent, else the front. The other axes
may be sliced (``x[1:, ids] = v``). The value is cast as ``__setitem__`` casts (by
assign.py) and broadcast to the indexed shape. Negative indices wrap once; an index out
of range raises NumPy's IndexError at the call (codegen/scatter_store.py): on the CPU
before anything is written where the index arrays are arguments, as NumPy; an index the
function computes, and every index on the GPU, is checked as the kernel stores, so a
written argument may hold the writes of the good indices when IndexError is raised.

Duplicate indices: NumPy's result is the last write in C order of the indexed shape. The
CPU writes in that order (one thread), so the last write wins there too; on the GPU one
of the writes wins, any one, unless their values are equal. ``x[ids] += v`` is NumPy's:
the sum is computed from the old values (a gather) and then scattered, so a duplicate
index adds once, not once per occurrence (np.add.at accumulates; it is not supported).

Before (``x[ids] = v`` with x f32[N, D], ids i64[K], v f32[K, D])::

    %2 = scatter(%x, %v, %ids, (0,), 0, (0, 0), (1, 1))  # axes, at, starts, steps

Refused, with what to write instead: ``None`` among the indices, a boolean mask beside
other indices, indices in a constant list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.gather import index_node
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, TensorType
from cuvil_aot.errors import SourceSpan

# What basic items (slices) select of the old array: (the view, the slice of the old
# array under it, its starts, its steps), as assign._region gives it.
Region = Callable[[list[Any]], tuple[Node, Node, tuple[Dim, ...], tuple[Dim, ...]]]


def has_arrays(items: list[Any]) -> bool:
    """Whether an assignment's index holds an integer array (a scatter, not a slice)."""
    return any(isinstance(i, list | np.ndarray) or (isinstance(i, Node) and i.shape)
               for i in items)


def update(old: Node, items: list[Any], value: Node, span: SourceSpan,
           region: Region) -> Node:
    """``old`` with ``old[items]`` replaced by ``value`` (already of old's dtype);
    ``region`` gives the view that the slices among ``items`` select."""
    items = _expanded(old, items, span)
    basic: list[Any] = []
    axes: list[int] = []
    indices: list[Node] = []
    for axis, item in enumerate(items):
        if isinstance(item, slice):
            basic.append(item)
            continue
        if isinstance(item, Node) and item.dtype == "bool" and item.shape:
            raise UserError("assignment through a boolean mask beside other indices is not "
                            "supported", span,
                            "np.where(mask, v, x) with a mask of x's shape")
        node = index_node(item, span)
        _check_int(node, old.shape[axis], axis, span)
        indices.append(node)
        axes.append(axis)
        basic.append(slice(None))
    view, _, starts, steps = region(basic)
    shape = checked(B.broadcast_all, [i.shape for i in indices], span, None, True, span=span)
    idx = tuple(checked(B.broadcast_to, i, shape, span, span=span) for i in indices)
    at = axes[0] if axes == list(range(axes[0], axes[0] + len(axes))) else 0
    rest = [d for a, d in enumerate(view.shape) if a not in axes]
    target = tuple(rest[:at]) + tuple(shape) + tuple(rest[at:])
    while value.type.ndim > len(target) and C.same(value.shape[0], 1):
        value = C.reshape(value, value.shape[1:], span)  # NumPy drops leading 1s
    placed = checked(B.broadcast_to, value, target, span, span=span)
    return Node(Op.SCATTER, TensorType(old.dtype, old.shape), (old, placed, *idx),
                attrs=(tuple(axes), at, tuple(starts), tuple(steps)), span=span)


def _expanded(old: Node, items: list[Any], span: SourceSpan) -> list[Any]:
    """The items with ``...`` made slices, one per axis of ``old``."""
    if any(i is None for i in items):
        raise UserError("assignment with integer-array indices and None (np.newaxis) is not "
                        "supported", span, "index without None: x[ids] = v")
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise UserError("an index can only have a single ellipsis ('...')", span)
    used = sum(1 for i in items if i is not Ellipsis)
    if used > old.type.ndim:
        raise UserError(f"IndexError: too many indices for array: array is "
                        f"{old.type.ndim}-dimensional, but {used} were indexed", span)
    at = next((k for k, i in enumerate(items) if i is Ellipsis), len(items))
    return items[:at] + [slice(None)] * (old.type.ndim - used) + items[at + 1:]


def _check_int(node: Node, size: Dim, axis: int, span: SourceSpan) -> None:
    """An int known now against an axis of known size: NumPy's IndexError now (as
    subscript.py does for a basic index); every other index is checked at the call."""
    if node.op is not Op.CONST or node.shape or not size.is_static:
        return
    value = node.attrs[0]
    if isinstance(value, Dim):
        if not value.is_static:
            return
        value = value.value
    if not -size.value <= int(value) < size.value:
        raise UserError(f"IndexError: index {int(value)} is out of bounds for axis {axis} "
                        f"with size {size.value}", span)
