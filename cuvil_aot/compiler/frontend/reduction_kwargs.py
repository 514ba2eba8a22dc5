"""The keyword arguments of NumPy's reductions (handlers.py's np.sum, np.prod, np.max,
np.min, np.mean and their methods), as NumPy's ufunc.reduce and _methods._mean apply them:

- ``dtype=``: the input cast to it, reduced in it, the result of it;
- ``initial=``: converted to the result dtype as NumPy converts it (its OverflowError for
  a Python int out of range), and part of the reduction: an extremum of an empty axis
  is the initial value, not NumPy's ValueError;
- ``where=``: a mask broadcast to the input's shape; masked-out elements are the identity
  of a sum or product, the initial value of an extremum (which NumPy requires), and not
  counted by a mean.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import apply, fold, is_number, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, is_float, np_dtype
from cuvil_aot.errors import SourceSpan

UFUNCS = {Op.SUM: np.add, Op.PROD: np.multiply, Op.MAX: np.maximum, Op.MIN: np.minimum}
IDENTITIES = {Op.SUM: 0, Op.PROD: 1}
COMBINE = {Op.SUM: Op.ADD, Op.PROD: Op.MUL}


def reduce(op: Op, x: Node, axes: tuple[int, ...] | None, keepdims: bool, dtype: str | None,
           initial: Any, where: Any, span: SourceSpan) -> Node:
    """``op`` over ``axes`` of ``x`` with NumPy's ``dtype``, ``initial`` and ``where``
    (None, None and True where not given)."""
    if dtype is not None:
        x = C.cast(x, dtype, span)
    mask = _mask(where, x, span)
    if op in IDENTITIES:
        if mask is not None:
            x = apply(Op.WHERE, [mask, x, IDENTITIES[op]], span)
        out = checked(B.reduce, op, x, axes, keepdims, span, span=span)
        if dtype is not None:
            out = C.cast(out, dtype, span)  # summed wider, wrapped as NumPy's sum in dtype
        if initial is None:
            return out
        start = _initial(op, x.dtype, out.dtype, initial, span)
        return apply(COMBINE[op], [out, B.const(start, out.dtype, span)], span)
    if initial is None:
        if mask is not None:
            name = UFUNCS[op].__name__
            raise UserError(f"ValueError: reduction operation '{name}' does not have an "
                            "identity, so to use a where mask one has to specify 'initial'",
                            span, f"np.{op.name.lower()}(x, where=mask, initial=...)")
        return checked(B.reduce, op, x, axes, keepdims, span, span=span)
    start = _initial(op, x.dtype, x.dtype, initial, span)
    if mask is not None:
        x = apply(Op.WHERE, [mask, x, B.const(start, x.dtype, span)], span)
    return _extremum_from(op, x, axes, keepdims, start, span)


def _mask(where: Any, x: Node, span: SourceSpan) -> Node | None:
    """``where`` as a bool array of ``x``'s shape (NumPy's error where it does not
    broadcast to it); None for NumPy's default, True."""
    if fold(where) is True:
        return None
    flags = C.cast(to_node(where, span), "bool", span)
    return checked(B.broadcast_to, flags, x.shape, span, span=span)


def _initial(op: Op, source: str, result: str, initial: Any, span: SourceSpan) -> Any:
    """``initial`` converted as NumPy's reduce of ``source`` into ``result`` converts it."""
    if not is_number(initial):
        raise UserError("a reduction's initial= must be a number known at compile time",
                        span, "initial=0.0")
    try:
        with np.errstate(all="ignore"):
            value = UFUNCS[op].reduce(np.empty((0,), np_dtype(source)),
                                      dtype=np_dtype(result), initial=fold(initial))
    except (OverflowError, ValueError, TypeError) as exc:
        raise UserError(f"{type(exc).__name__}: {exc}", span) from None
    return value.item()


def _extremum_from(op: Op, x: Node, axes: tuple[int, ...] | None, keepdims: bool,
                   start: Any, span: SourceSpan) -> Node:
    """The extremum over ``axes`` of ``x`` and ``start``: each reduced axis gets ``start``
    in front before it is reduced, so that no axis is empty (NumPy's result there)."""
    norm = checked(B.normalize_axes, axes, x.type.ndim, span=span)
    shape = tuple(Dim.of(1) if i in norm else d for i, d in enumerate(x.shape)) if keepdims \
        else tuple(d for i, d in enumerate(x.shape) if i not in norm)
    if not x.shape:  # a 0-d array: one element along an axis of its own
        x, norm = C.reshape(x, (Dim.of(1),), span), (0,)
    out = x
    for axis in norm:
        slab = tuple(Dim.of(1) if i == axis else d for i, d in enumerate(out.shape))
        front = B.broadcast_to(B.const(start, x.dtype, span), slab, span)
        joined = checked(B.concat, [front, out], axis, span, span=span)
        out = checked(B.reduce, op, joined, (axis,), True, span, span=span)
    return C.reshape(out, shape, span)


def mean(x: Node, axes: tuple[int, ...], keepdims: bool, dtype: str | None, where: Any,
         span: SourceSpan) -> Node:
    """NumPy's _mean with ``dtype`` or a ``where`` mask: the sum in ``dtype`` (float64 for
    integers, float32 for float16, else x's), divided in float64 by the count of elements
    (of the mask where given), rounded to the sum's dtype, then float16's to float16."""
    if dtype is not None and not is_float(dtype):
        raise UserError(f"np.mean with dtype={dtype} (a float64 mean truncated to it) is not "
                        "supported", span, "np.mean(x).astype(dtype)")
    source = x.dtype
    narrow = source in ("float16", "bfloat16") and dtype is None
    accumulate = dtype or ("float32" if narrow else source if is_float(source) else "float64")
    mask = _mask(where, x, span)
    x = C.cast(x, accumulate, span)
    if mask is not None:
        x = apply(Op.WHERE, [mask, x, 0], span)
        count: Any = checked(B.reduce, Op.SUM, C.cast(mask, "int64", span), axes, keepdims,
                             span, span=span)
    else:
        count = fold(B.count(x, axes))
    total = checked(B.reduce, Op.SUM, x, axes, keepdims, span, span=span)
    quotient = C.cast(apply(Op.DIV, [C.cast(total, "float64", span), count], span),
                      accumulate, span)
    return C.cast(quotient, source, span) if narrow else quotient
