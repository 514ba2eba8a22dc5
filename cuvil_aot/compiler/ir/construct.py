"""Constructors of IR nodes that need no NumPy type rule: casts, reshapes, permutations.

Shared by the frontend's builders and by the passes that rewrite nodes. Each
returns its input unchanged where the op would do nothing (a cast to the same
dtype, a reshape to the same shape, the identity permutation), so graphs built
or rewritten with them hold no no-op nodes.

They raise ``ShapeError`` with a plain message; the frontend attaches spans.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, Shape, TensorType, shape_str
from cuvil_aot.errors import SourceSpan


class ShapeError(Exception):
    """Shapes that no op of this kind accepts."""


def total(shape: Shape) -> Dim:
    """The element count of ``shape``."""
    n = Dim.of(1)
    for d in shape:
        n = n * d
    return n


def cast(x: Node, dtype: str, span: SourceSpan | None = None) -> Node:
    """``x`` as ``dtype``; a constant is converted now, as NumPy would."""
    if x.dtype == dtype:
        return x
    if x.op is Op.CONST:
        value = x.attrs[0]
        if not isinstance(value, Dim):
            with np.errstate(all="ignore"):  # NumPy casts out-of-range Python floats to inf
                value = np.asarray(value).astype(dtype).item()
        return Node(Op.CONST, TensorType(dtype, x.shape), attrs=(value,), span=x.span)
    return Node(Op.CAST, TensorType(dtype, x.shape), (x,), span=span or x.span)


def reshape(x: Node, shape: Sequence[Dim | int], span: SourceSpan | None = None) -> Node:
    """Reshape with at most one -1, checked against the element count."""
    dims = [Dim.of(d) for d in shape]
    unknown = [i for i, d in enumerate(dims) if d == Dim.of(-1)]
    if len(unknown) > 1:
        raise ShapeError("can only specify one unknown dimension (-1)")
    size = total(x.shape)
    if unknown:
        known = total(tuple(d for i, d in enumerate(dims) if i != unknown[0]))
        inferred = size.exact_div(known)
        if inferred is None:
            raise ShapeError(f"cannot reshape {shape_str(x.shape)} into {shape_str(tuple(dims))}")
        dims[unknown[0]] = inferred
    new = tuple(dims)
    if total(new) != size:
        raise ShapeError(f"cannot reshape array of shape {shape_str(x.shape)} into "
                         f"shape {shape_str(new)}")
    if new == x.shape:
        return x
    if x.op is Op.RESHAPE:
        x = x.srcs[0]
        if x.shape == new:
            return x
    return Node(Op.RESHAPE, TensorType(x.dtype, new, x.type.weak), (x,), span=span)


def permute(x: Node, perm: Sequence[int], span: SourceSpan | None = None) -> Node:
    """Axes of ``x`` reordered: axis ``i`` of the result is axis ``perm[i]`` of ``x``."""
    perm = tuple(p % x.type.ndim if x.type.ndim else p for p in perm)
    if sorted(perm) != list(range(x.type.ndim)):
        raise ShapeError(f"axes {tuple(perm)} are not a permutation of {x.type.ndim} axes")
    if perm == tuple(range(x.type.ndim)):
        return x
    shape = tuple(x.shape[p] for p in perm)
    return Node(Op.PERMUTE, TensorType(x.dtype, shape, x.type.weak), (x,), attrs=(perm,), span=span)
