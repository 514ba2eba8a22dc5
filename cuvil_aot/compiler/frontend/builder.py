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

Shapes are NumPy's, checked where NumPy checks them: at the call. Dimensions of
different arguments that an op needs equal (``a + b`` with ``a: f32[A]``,
``b: f32[B]``; the inner dimensions of ``x @ w``; the other axes of a concatenate or
stack; a reshape's element count) are assumed equal while compiling
(``construct.unify``) and checked by the wrapper, which raises NumPy's ValueError
with NumPy's message where they differ. Only dimensions that differ for every size
(``3`` and ``4``) are compile errors.

Size-1 broadcasting of a symbolic dimension is decided at the call by signature:
compiled code broadcasts exactly the dimensions the signature makes 1, and
``frontend/size_one.py`` adds specializations of the signature with such a symbol
written as 1, which the wrapper tries after the general one. A call none of them covers
(``a`` of shape (1,) where no specialization makes A 1) raises a SignatureShapeError (a
ValueError) saying that the arrays must have equal sizes and to write a literal 1 where
the size is 1: never a wrong answer.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import call_checks, promotion
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.construct import Message, ShapeError, cast, reshape
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import COMPARE, NUMPY, Op
from cuvil_aot.compiler.ir.types import (
    Dim,
    Shape,
    TensorType,
    dtype_of,
    is_float,
    is_int,
    np_dtype,
    shape_str,
)
from cuvil_aot.errors import SourceSpan


class DtypeError(Exception):
    """Dtypes that NumPy does not define the op for."""


_WEAK_DUMMY = {"bool": True, "int64": 1, "float64": 1.0}


def _dummy(dtype: str, weak: bool) -> object:
    return _WEAK_DUMMY[dtype] if weak else np.ones((1,), dtype=np_dtype(dtype))


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


def broadcast_shapes(a: Shape, b: Shape, span: SourceSpan | None = None,
                     shown: Sequence[Shape] | None = None) -> Shape:
    """NumPy's broadcast of two shapes (``shown``: the shapes its error names)."""
    return broadcast_all((a, b), span, shown)


def broadcast_all(shapes: Sequence[Shape], span: SourceSpan | None = None,
                  shown: Sequence[Shape] | None = None, index: bool = False) -> Shape:
    """NumPy's broadcast of ``shapes``: symbolic dimensions that differ are assumed equal
    and checked at the call, where one of them being 1 is a failed match (module docstring).
    ``index``: the shapes of index arrays, whose mismatch is NumPy's IndexError."""
    shown = shapes if shown is None else shown
    numpy: list[str | Dim] = [
        "shape mismatch: indexing arrays could not be broadcast together with shapes "
        if index else "operands could not be broadcast together with shapes "]
    for shape in shown:
        numpy += [*C.numpy_shape(shape), " "]
    ndim = max((len(s) for s in shapes), default=0)
    axes = [[s[-i] for s in shapes if i <= len(s)] for i in range(1, ndim + 1)]
    fits = [(p, q, True) for dims in axes for n, p in enumerate(dims) for q in dims[n + 1:]
            if not (C.same(p, q) or C.same(p, 1) or C.same(q, 1))]
    out: list[Dim] = []
    for dims in axes:
        kept = Dim.of(1)
        for d in dims:
            if C.same(d, 1) or C.same(d, kept):
                continue
            if C.same(kept, 1):
                kept = d
                continue
            if not C.unify(kept, d, numpy, fits, _refusal(shown, kept, d, span),
                           kind="IndexError" if index else "ValueError"):
                why = "differ" if kept.is_static and d.is_static else "may differ at run time"
                raise ShapeError(f"shapes {' and '.join(shape_str(s) for s in shown)} cannot be "
                                 f"broadcast together: dimensions {kept} and {d} {why}")
        out.append(C.resolved(kept))
    return tuple(reversed(out))


def _refusal(shapes: Sequence[Shape], a: Dim, b: Dim, span: SourceSpan | None) -> Message:
    """Why a call where ``a`` or ``b`` is 1 (NumPy would broadcast) is refused."""
    parts: list[str | Dim] = ["the arrays of shapes "]
    for i, shape in enumerate(shapes):
        parts += [" " if i else "", *C.numpy_shape(shape)]
    where = ""
    if span is not None:
        expr = span.text[span.col:span.end_col] if span.end_line == span.line else span.text
        where = f" (line {span.line}: {expr.strip()})"
    parts.append(f" must have equal sizes{where}: compiled code broadcasts only dimensions "
                 f"the signature makes 1, and {a} and {b} are not; write one symbol for both, "
                 "or a literal 1 where the size is 1")
    return tuple(parts)


def broadcast_to(x: Node, shape: Shape, span: SourceSpan | None = None) -> Node:
    """``x`` broadcast to ``shape`` (a symbolic dimension of ``x`` that differs from the
    target is assumed equal to it, and checked at the call)."""
    if C.same_shape(x.shape, shape):
        return x
    if x.type.ndim > len(shape):
        raise ShapeError(f"cannot broadcast shape {shape_str(x.shape)} to {shape_str(shape)}")
    numpy = ("operands could not be broadcast together with remapped shapes "
             "[original->remapped]: ", *C.numpy_shape(x.shape), "  and requested shape ",
             *C.numpy_shape(shape))
    pairs = list(zip(reversed(x.shape), reversed(shape)))
    fits = [(d, t, False) for d, t in pairs if not (C.same(d, t) or C.same(d, 1))]
    for d, target in pairs:
        if not C.same(d, 1) and not C.unify(target, d, numpy, fits,
                                            _refusal((x.shape, shape), d, target, span)):
            raise ShapeError(f"cannot broadcast shape {shape_str(x.shape)} to "
                             f"{shape_str(shape)}")
    if C.same_shape(x.shape, shape):
        return x
    shape = tuple(C.resolved(d) for d in shape)
    if x.op is Op.CONST:
        return x.replace(type=TensorType(x.dtype, shape, x.type.weak))
    return Node(Op.BROADCAST, TensorType(x.dtype, shape, x.type.weak), (x,), span=span or x.span)


def elementwise(op: Op, args: Sequence[Node], span: SourceSpan | None = None) -> Node:
    """An elementwise op with NumPy broadcasting and promotion."""
    if op in COMPARE and (exact := _exact_int_compare(op, args[0], args[1], span)) is not None:
        return exact
    if op is Op.WHERE:
        result = compute = _where_dtype(args[1], args[2])
    else:
        result, compute = numpy_result(op, tuple((a.dtype, a.type.weak) for a in args))
    weak = all(a.type.weak for a in args)
    if weak:
        result, compute = _python_kind(result), _python_kind(compute)
    elif is_int(compute) and op not in COMPARE and op is not Op.WHERE:
        _check_python_ints(args, compute)  # (np.where casts a Python int unchecked)
    promotion.note(args, result, span)
    if op is Op.WHERE:
        operands = [cast(args[0], "bool", span), cast(args[1], compute, span),
                    cast(args[2], compute, span)]
    else:
        operands = [cast(a, compute, span) for a in args]
    shape = broadcast_all([a.shape for a in operands], span)
    operands = [broadcast_to(a, shape, span) for a in operands]
    return Node(op, TensorType(result, shape, weak), tuple(operands), span=span)


def _check_python_ints(args: Sequence[Node], compute: str) -> None:
    """NEP 50: arithmetic of an integer array with a Python int its dtype cannot hold
    (``int8 + 300``) raises, as in NumPy: now for a constant, at the call for an int known
    only then (an int argument, a size: call_checks.py)."""
    for a in args:
        value = _python_int(a)
        if value is not None and not _holds(compute, value):
            raise DtypeError(f"Python integer {value} out of bounds for {compute}")
        if value is None and a.type.weak and a.dtype == "int64" and not a.shape:
            check_python_int(a, compute)


def check_python_int(value: Node, dtype: str) -> None:
    """Where the weak int ``value`` is out of ``dtype``'s range at the call, NumPy's
    OverflowError there."""
    info, wide = np.iinfo(dtype), np.iinfo("int64")
    tests = []
    if info.min > wide.min:  # an int64 is never below int64's own range
        tests.append(elementwise(Op.LT, [value, const(int(info.min))]))
    if info.max < wide.max:
        tests.append(elementwise(Op.GT, [value, const(int(info.max))]))
    if tests:
        cond = tests[0] if len(tests) == 1 else elementwise(Op.OR, tests)
        call_checks.record(cond, "OverflowError",
                           ("Python integer ", value, f" out of bounds for {dtype}"))


# Comparisons of integers are exact in NumPy where no dtype holds both operands: against a
# Python int out of the array's range (``uint8 < -1``: all False), and uint64 against a
# signed integer (NumPy 2 compares them exactly, not in the float64 of their promotion).
_MIRRORED = {Op.LT: Op.GT, Op.LE: Op.GE, Op.GT: Op.LT, Op.GE: Op.LE, Op.EQ: Op.EQ,
             Op.NE: Op.NE}


def _apart(op: Op, above: bool) -> bool:
    """``x op y`` where x is above y (``above``) or below it, never equal."""
    return {Op.EQ: False, Op.NE: True}.get(op, (op in (Op.GT, Op.GE)) == above)


def _exact_int_compare(op: Op, a: Node, b: Node, span: SourceSpan | None) -> Node | None:
    """``a op b`` where NumPy's promotion would not compare exactly; None elsewhere."""
    for x, y, x_op in ((a, b, op), (b, a, _MIRRORED[op])):
        if x.type.weak or not is_int(x.dtype) or not is_int(y.dtype):
            continue
        value = _python_int(y)
        if value is not None and not _holds(x.dtype, value):
            return _every(x, _apart(x_op, value < 0), span)
        signed = np.dtype(y.dtype).kind == "i"
        if x.dtype == "uint64" and signed and value is None:
            return _compare_unsigned(x_op, x, y, span)
        if y.type.weak and value is None and x.dtype != "int64":
            return elementwise(x_op, [cast(x, "int64", span), y], span)  # y known at run time
    return None


def _compare_unsigned(op: Op, x: Node, y: Node, span: SourceSpan | None) -> Node:
    """``x op y`` for uint64 ``x`` and signed ``y``: where y < 0, x is above it."""
    shape = broadcast_shapes(x.shape, y.shape, span)
    srcs = (broadcast_to(x, shape, span), broadcast_to(cast(y, "uint64", span), shape, span))
    unsigned = Node(op, TensorType("bool", shape), srcs, span=span)
    if _apart(op, True):
        return elementwise(Op.OR, [elementwise(Op.LT, [y, const(0)], span), unsigned], span)
    return elementwise(Op.AND, [elementwise(Op.GE, [y, const(0)], span), unsigned], span)


def _every(x: Node, value: bool, span: SourceSpan | None) -> Node:
    """A boolean array of ``x``'s shape, all ``value`` (x == x holds for integers)."""
    return Node(Op.EQ if value else Op.NE, TensorType("bool", x.shape), (x, x), span=span)


def _python_int(node: Node) -> int | None:
    """The value of a Python int constant; None for anything else (a Python int known
    only at run time included)."""
    value = node.attrs[0] if node.op is Op.CONST and node.type.weak else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _holds(dtype: str, value: int) -> bool:
    info = np.iinfo(dtype)
    return int(info.min) <= value <= int(info.max)


def _python_kind(dtype: str) -> str:
    if is_float(dtype):  # bfloat16 included, whose NumPy kind is "V"
        return "float64"
    return {"b": "bool", "i": "int64", "u": "int64"}[np.dtype(dtype).kind]


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
    if not norm:
        return _over_no_axis(op, src, span)
    kept = tuple(d for i, d in enumerate(x.shape) if i not in norm)
    node = Node(op, TensorType(result, kept), (src,), attrs=(norm,), span=span)
    if keepdims:
        full = tuple(Dim.of(1) if i in norm else d for i, d in enumerate(x.shape))
        node = reshape(node, full, span)
    return node


def _over_no_axis(op: Op, x: Node, span: SourceSpan | None) -> Node:
    """A reduction over no axis (of a 0-d array, or ``axis=()``), elementwise as NumPy's:
    each element with the operation's identity (0 + x, so -0.0 sums to 0.0; 1 * x), the
    element itself for max and min, index 0 for argmax and argmin."""
    if op in (Op.ARGMAX, Op.ARGMIN):
        return broadcast_to(const(0, "int64", span), x.shape, span)
    if op in (Op.SUM, Op.PROD):
        return elementwise(Op.ADD if op is Op.SUM else Op.MUL,
                           [x, const(0 if op is Op.SUM else 1, x.dtype, span)], span)
    return elementwise(Op.MAXIMUM if op is Op.MAX else Op.MINIMUM, [x, x], span)


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


def inner_dims_match(k_a: Dim, k_b: Dim) -> bool:
    """Whether the inner dimensions of a matmul match, or are now assumed to (NumPy's
    error where they differ at the call)."""
    numpy = ("matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
             "signature (n?,k),(k,m?)->(n?,m?) (size ", k_b, " is different from ", k_a, ")")
    return C.unify(k_a, k_b, numpy)


def matmul(a: Node, b: Node, span: SourceSpan | None = None) -> Node:
    """``a @ b`` for 2-D and batched 3-D operands (1-D ones are handled by the caller)."""
    if a.type.ndim not in (2, 3) or b.type.ndim not in (2, 3):
        raise ShapeError("matmul supports 1-D, 2-D and 3-D operands")
    if not inner_dims_match(a.shape[-1], b.shape[-2]):
        raise ShapeError(f"inner dimensions differ: {shape_str(a.shape)} @ {shape_str(b.shape)} "
                         f"({a.shape[-1]} != {b.shape[-2]})")
    if "bool" in (a.dtype, b.dtype):
        raise DtypeError("matmul of boolean arrays is not supported")
    result, _ = numpy_result(Op.MATMUL, ((a.dtype, False), (b.dtype, False)))
    batch: Shape = ()
    if a.type.ndim == 3 or b.type.ndim == 3:
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2], span, (a.shape, b.shape))
    shape = batch + (C.resolved(a.shape[-2]), C.resolved(b.shape[-1]))
    return Node(Op.MATMUL, TensorType(result, shape), (cast(a, result), cast(b, result)), span=span)


def slice_axes(x: Node, starts: Sequence[Dim], steps: Sequence[Dim], sizes: Sequence[Dim],
               span: SourceSpan | None = None) -> Node:
    if all(s == Dim.of(0) for s in starts) and all(s == Dim.of(1) for s in steps) \
            and C.same_shape(tuple(sizes), x.shape):
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
    dtype = dtype_of(np.result_type(*[np.empty(0, np_dtype(p.dtype)) for p in parts]))
    size = Dim.of(0)
    for index, p in enumerate(parts):
        if p.type.ndim != ndim:
            raise ShapeError("all the input arrays must have the same number of dimensions")
        for i in range(ndim):
            numpy = ("all the input array dimensions except for the concatenation axis must "
                     f"match exactly, but along dimension {i}, the array at index 0 has size ",
                     parts[0].shape[i], f" and the array at index {index} has size ", p.shape[i])
            if i != axis and not C.unify(parts[0].shape[i], p.shape[i], numpy):
                raise ShapeError(f"all the input array dimensions except for the concatenation "
                                 f"axis must match: {shape_str(parts[0].shape)} vs "
                                 f"{shape_str(p.shape)}")
        size = size + p.shape[axis]
    shape = tuple(C.resolved(size if i == axis else d)
                  for i, d in enumerate(parts[0].shape))
    srcs = tuple(cast(p, dtype, span) for p in parts)
    return Node(Op.CONCAT, TensorType(dtype, shape), srcs, attrs=(axis,), span=span)


def stack(parts: Sequence[Node], axis: int, span: SourceSpan | None = None) -> Node:
    """``np.stack``: arrays of one shape (dimensions that may differ are assumed equal and
    checked at the call) joined along a new axis."""
    if not parts:
        raise ShapeError("need at least one array to stack")
    first = parts[0].shape
    for p in parts[1:]:
        numpy = ("all input arrays must have the same shape",)
        if len(p.shape) != len(first) or \
                not all(C.unify(a, b, numpy) for a, b in zip(first, p.shape)):
            raise ShapeError("all input arrays must have the same shape")
    axis = normalize_axes((axis,), len(first) + 1)[0]
    expanded = [reshape(p, p.shape[:axis] + (Dim.of(1),) + p.shape[axis:], span) for p in parts]
    return concat(expanded, axis, span)
