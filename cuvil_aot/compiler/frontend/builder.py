"""Builders of IR nodes: each op's shape rule and dtype rule, in one place.

Dtype rules are NumPy's own: the result dtype of an op is what NumPy returns
for the same op on tiny dummy arrays of the operand dtypes, with Python
scalars standing in for weakly typed values, so NEP 50 promotion (a float32
array times a Python float stays float32) holds by construction. Operands are
cast explicitly (``CAST`` nodes) to the dtype the op computes in, so codegen
never promotes implicitly.

Casts, reshapes and permutations need no dtype rule and live in
``cuvil_aot.compiler.ir.construct``, shared with the passes.

Builders raise ``ShapeError``/``DtypeError`` with a plain message; the
interpreter attaches source spans.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_aot.compiler.ir.construct import ShapeError, cast, reshape
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import COMPARE, NUMPY, Op
from cuvil_aot.compiler.ir.types import Dim, Shape, TensorType, dtype_of, shape_str
from cuvil_aot.errors import SourceSpan


class DtypeError(Exception):
    """Dtypes that NumPy does not define the op for."""


_WEAK_DUMMY = {"bool": True, "int64": 1, "float64": 1.0}


def _dummy(dtype: str, weak: bool) -> object:
    return _WEAK_DUMMY[dtype] if weak else np.ones((1,), dtype=dtype)


@functools.cache
def numpy_result(op: Op, operands: tuple[tuple[str, bool], ...]) -> tuple[str, str]:
    """(result dtype, compute dtype) of ``op`` on operands given as (dtype, weak)."""
    args: list[Any] = [_dummy(d, w) for d, w in operands]
    try:
        with np.errstate(all="ignore"):
            out = NUMPY[op](*args)
            result = dtype_of(np.asarray(out).dtype)
            compute = dtype_of(np.result_type(*args)) if op in COMPARE else result
    except (TypeError, ValueError) as exc:
        kinds = ", ".join(d for d, _ in operands)
        raise DtypeError(f"{NUMPY[op].__name__} is not defined for {kinds}: {exc}") from None
    return result, compute


def const(value: bool | int | float | Dim, dtype: str | None = None,
          span: SourceSpan | None = None) -> Node:
    """A 0-d constant; without ``dtype`` it is a weak Python scalar."""
    if dtype is not None:
        return Node(Op.CONST, TensorType(dtype, ()), attrs=(value,), span=span)
    kind = "bool" if isinstance(value, bool) else "float64" if isinstance(value, float) else "int64"
    return Node(Op.CONST, TensorType(kind, (), weak=True), attrs=(value,), span=span)


def broadcast_shapes(a: Shape, b: Shape) -> Shape:
    out: list[Dim] = []
    for i in range(1, max(len(a), len(b)) + 1):
        da = a[-i] if i <= len(a) else Dim.of(1)
        db = b[-i] if i <= len(b) else Dim.of(1)
        if da == db or db == Dim.of(1):
            out.append(da)
        elif da == Dim.of(1):
            out.append(db)
        else:
            why = "differ" if da.is_static and db.is_static else "may differ at run time"
            raise ShapeError(f"shapes {shape_str(a)} and {shape_str(b)} cannot be broadcast "
                             f"together: dimensions {da} and {db} {why}")
    return tuple(reversed(out))


def broadcast_to(x: Node, shape: Shape, span: SourceSpan | None = None) -> Node:
    if x.shape == shape:
        return x
    if broadcast_shapes(x.shape, shape) != shape:
        raise ShapeError(f"cannot broadcast shape {shape_str(x.shape)} to {shape_str(shape)}")
    if x.op is Op.CONST:
        return x.replace(type=TensorType(x.dtype, shape, x.type.weak))
    return Node(Op.BROADCAST, TensorType(x.dtype, shape, x.type.weak), (x,), span=span or x.span)


def elementwise(op: Op, args: Sequence[Node], span: SourceSpan | None = None) -> Node:
    """An elementwise op with NumPy broadcasting and promotion."""
    if op is Op.WHERE:
        result = compute = _where_dtype(args[1], args[2])
    else:
        result, compute = numpy_result(op, tuple((a.dtype, a.type.weak) for a in args))
    weak = all(a.type.weak for a in args)
    if weak:
        result, compute = _python_kind(result), _python_kind(compute)
    if op is Op.WHERE:
        operands = [cast(args[0], "bool", span), cast(args[1], compute, span),
                    cast(args[2], compute, span)]
    else:
        operands = [cast(a, compute, span) for a in args]
    shape: Shape = ()
    for a in operands:
        shape = broadcast_shapes(shape, a.shape)
    operands = [broadcast_to(a, shape, span) for a in operands]
    return Node(op, TensorType(result, shape, weak), tuple(operands), span=span)


def _python_kind(dtype: str) -> str:
    return {"b": "bool", "i": "int64", "u": "int64", "f": "float64"}[np.dtype(dtype).kind]


def _where_dtype(a: Node, b: Node) -> str:
    args: list[Any] = [_dummy(n.dtype, n.type.weak) for n in (a, b)]
    return dtype_of(np.result_type(*args))


def reduce(op: Op, x: Node, axes: Sequence[int] | None, keepdims: bool,
           span: SourceSpan | None = None) -> Node:
    """A reduction over ``axes`` (None: all), NumPy's result dtype."""
    norm = normalize_axes(axes, x.type.ndim)
    if op in (Op.ARGMAX, Op.ARGMIN):
        result = "int64"
        src = x
    else:
        result, _ = numpy_result(op, ((x.dtype, False),))
        src = cast(x, result, span) if result != x.dtype else x
    kept = tuple(d for i, d in enumerate(x.shape) if i not in norm)
    node = Node(op, TensorType(result, kept), (src,), attrs=(norm,), span=span)
    if keepdims:
        full = tuple(Dim.of(1) if i in norm else d for i, d in enumerate(x.shape))
        node = reshape(node, full, span)
    return node


def normalize_axes(axes: Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(ndim))
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ShapeError(f"axis {a} is out of bounds for an array of dimension {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ShapeError(f"repeated axis in {tuple(axes)}")
    return tuple(sorted(out))


def count(x: Node, axes: tuple[int, ...]) -> Dim:
    n = Dim.of(1)
    for a in axes:
        n = n * x.shape[a]
    return n


def matmul(a: Node, b: Node, span: SourceSpan | None = None) -> Node:
    """``a @ b`` for 2-D and batched 3-D operands (1-D ones are handled by the caller)."""
    if a.type.ndim not in (2, 3) or b.type.ndim not in (2, 3):
        raise ShapeError("matmul supports 1-D, 2-D and 3-D operands")
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError(f"inner dimensions differ: {shape_str(a.shape)} @ {shape_str(b.shape)} "
                         f"({a.shape[-1]} != {b.shape[-2]})")
    if "bool" in (a.dtype, b.dtype):
        raise DtypeError("matmul of boolean arrays is not supported")
    result, _ = numpy_result(Op.MATMUL, ((a.dtype, False), (b.dtype, False)))
    batch: Shape = ()
    if a.type.ndim == 3 or b.type.ndim == 3:
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    shape = batch + (a.shape[-2], b.shape[-1])
    return Node(Op.MATMUL, TensorType(result, shape), (cast(a, result), cast(b, result)), span=span)


def slice_axes(x: Node, starts: Sequence[Dim], steps: Sequence[Dim], sizes: Sequence[Dim],
               span: SourceSpan | None = None) -> Node:
    if all(s == Dim.of(0) for s in starts) and all(s == Dim.of(1) for s in steps) \
            and tuple(sizes) == x.shape:
        return x
    return Node(Op.SLICE, TensorType(x.dtype, tuple(sizes), x.type.weak), (x,),
                attrs=(tuple(starts), tuple(steps)), span=span)


def concat(parts: Sequence[Node], axis: int, span: SourceSpan | None = None) -> Node:
    if not parts:
        raise ShapeError("need at least one array to concatenate")
    ndim = parts[0].type.ndim
    if ndim == 0:
        raise ShapeError("zero-dimensional arrays cannot be concatenated")
    axis = normalize_axes((axis,), ndim)[0]
    dtype = dtype_of(np.result_type(*[np.empty(0, p.dtype) for p in parts]))
    size = Dim.of(0)
    for p in parts:
        if p.type.ndim != ndim:
            raise ShapeError("all the input arrays must have the same number of dimensions")
        for i in range(ndim):
            if i != axis and p.shape[i] != parts[0].shape[i]:
                raise ShapeError(f"all the input array dimensions except for the concatenation "
                                 f"axis must match: {shape_str(parts[0].shape)} vs "
                                 f"{shape_str(p.shape)}")
        size = size + p.shape[axis]
    shape = tuple(size if i == axis else d for i, d in enumerate(parts[0].shape))
    srcs = tuple(cast(p, dtype, span) for p in parts)
    return Node(Op.CONCAT, TensorType(dtype, shape), srcs, attrs=(axis,), span=span)

