"""NumPy functions that are exact compositions of the IR's own operations, giving NumPy's
values, dtypes and edge cases (NaN, ±inf, -0.0, empty axes):

- float classification: np.isnan (x != x), np.isinf, np.isfinite, np.nan_to_num,
  np.signbit (of copysign(1, x), which sees the sign of -0.0 and of a NaN);
- np.reciprocal of floats (1 / x), np.trunc and np.fix (toward zero), np.positive;
- np.deg2rad/np.radians and np.rad2deg/np.degrees (NumPy's constants, in its loop's type);
- np.isin (each element against every test element);
- np.fmax, np.fmin (NaN-ignoring maximum and minimum);
- np.any, np.all, np.count_nonzero and the .any/.all methods (counts of nonzero values),
  np.ptp (max - min), np.nansum;
- np.flip, np.roll (slices, or a gather where the axis length is symbolic), np.ravel,
  np.diff, np.rot90, np.atleast_1d/2d, np.hstack, np.vstack, np.column_stack, np.dstack, np.block,
  np.broadcast_arrays, np.meshgrid.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend import subscript
from cuvil_aot.compiler.frontend.gather import gather
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler, axes_arg, copy, flatten, now
from cuvil_aot.compiler.frontend.shapes import axis_of, piece
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import (
    apply,
    fold,
    is_number,
    python_value,
    strong,
    to_node,
)
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, TensorType, dtype_of, is_float, np_dtype

INF = float("inf")


def _elementwise(fn: Any, build: Any) -> Handler:
    """A one-argument function: NumPy's own on a number known now, else ``build(x, ctx)``."""
    def handler(ctx: Ctx, x: Any, /) -> Any:
        if is_number(x):
            return now(fn, [x], ctx)
        return strong(build(to_node(x, ctx.span), ctx))
    return handler


def _isnan(x: Node, ctx: Ctx) -> Node:
    return apply(Op.NE, [x, x], ctx.span)  # never true of an integer


def isinf_of(x: Node, ctx: Ctx) -> Node:
    if not is_float(x.dtype):
        return apply(Op.NE, [x, x], ctx.span)  # False
    return apply(Op.EQ, [apply(Op.ABS, [x], ctx.span), INF], ctx.span)


def _isfinite(x: Node, ctx: Ctx) -> Node:
    if not is_float(x.dtype):
        return apply(Op.EQ, [x, x], ctx.span)  # True
    return apply(Op.LT, [apply(Op.ABS, [x], ctx.span), INF], ctx.span)  # NaN: False


def _signbit(x: Node, ctx: Ctx) -> Node:
    """The sign bit, of -0.0 and of a NaN too (copysign copies it; a comparison cannot
    see it); an integer's is its sign."""
    if not is_float(x.dtype):
        return apply(Op.LT, [x, 0], ctx.span)
    return apply(Op.LT, [apply(Op.COPYSIGN, [1.0, x], ctx.span), 0.0], ctx.span)


def _finfo(dtype: str) -> Any:
    if dtype == "bfloat16":
        import ml_dtypes

        return ml_dtypes.finfo(ml_dtypes.bfloat16)  # type: ignore[no-untyped-call]
    return np.finfo(dtype)


def nan_to_num(ctx: Ctx, x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None,
               neginf: Any = None) -> Any:
    if not copy:  # NumPy then writes into x; a compiled function's arguments stay as given
        raise UserError("np.nan_to_num(copy=False) is not supported", ctx.span,
                        "x = np.nan_to_num(x)")
    if is_number(x):
        return now(lambda v: np.nan_to_num(v, nan=nan, posinf=posinf, neginf=neginf), [x], ctx)
    a = to_node(x, ctx.span)
    if not is_float(a.dtype):
        return _copy(a, ctx)
    info = _finfo(a.dtype)
    big = float(info.max) if posinf is None else posinf
    small = float(info.min) if neginf is None else neginf
    out = apply(Op.WHERE, [apply(Op.EQ, [a, -INF], ctx.span), small, a], ctx.span)
    out = apply(Op.WHERE, [apply(Op.EQ, [a, INF], ctx.span), big, out], ctx.span)
    out = apply(Op.WHERE, [_isnan(a, ctx), nan, out], ctx.span)
    return C.cast(out, a.dtype, ctx.span)  # the replacements take x's dtype, as NumPy's


def _nan_aware(op: Op) -> Handler:
    """np.fmax (``op`` GT) and np.fmin (LT): the other value where one is NaN, else the
    maximum (minimum); of equal values the second, as NumPy's (fmax(0.0, -0.0) is -0.0)."""
    def handler(ctx: Ctx, x1: Any, x2: Any, /) -> Any:
        fn = np.fmax if op is Op.GT else np.fmin
        if is_number(x1) and is_number(x2):
            return now(fn, [x1, x2], ctx)
        a, b = to_node(x1, ctx.span), to_node(x2, ctx.span)
        first = apply(Op.OR, [apply(op, [a, b], ctx.span), _isnan(b, ctx)], ctx.span)
        return strong(apply(Op.WHERE, [first, a, b], ctx.span))
    return handler


def ptp(ctx: Ctx, a: Any, axis: Any = None, keepdims: bool = False) -> Node:
    x = to_node(a, ctx.span)
    top, bottom = (checked(B.reduce, op, x, axes_arg(axis, ctx), bool(keepdims), ctx.span,
                           span=ctx.span) for op in (Op.MAX, Op.MIN))
    return apply(Op.SUB, [top, bottom], ctx.span)  # in x's dtype: int8 wraps, as NumPy's


def nansum(ctx: Ctx, a: Any, axis: Any = None, keepdims: bool = False) -> Node:
    x = to_node(a, ctx.span)
    if is_float(x.dtype):
        x = apply(Op.WHERE, [_isnan(x, ctx), 0.0, x], ctx.span)
    return checked(B.reduce, Op.SUM, x, axes_arg(axis, ctx), bool(keepdims), ctx.span,
                   span=ctx.span)


def _reciprocal(x: Node, ctx: Ctx) -> Node:
    if not is_float(x.dtype):
        raise UserError("np.reciprocal of integers (an integer division) is not supported",
                        ctx.span, "1 / x, which is float")
    return apply(Op.DIV, [1.0, x], ctx.span)


def toward_zero(x: Node, ctx: Ctx) -> Node:
    if not is_float(x.dtype):
        return _copy(x, ctx)
    negative = apply(Op.LT, [x, 0.0], ctx.span)
    return apply(Op.WHERE, [negative, apply(Op.CEIL, [x], ctx.span),
                            apply(Op.FLOOR, [x], ctx.span)], ctx.span)


def _copy(x: Node, ctx: Ctx) -> Node:
    return copy(ctx, x)


def _angle(fn: Any) -> Any:
    """np.deg2rad or np.rad2deg as NumPy's loops compute them: x times the factor NumPy's
    C code writes (float32: NPY_PIf / 180.0f, 180.0f / NPY_PIf, which is not the float32
    nearest 180 / pi), in float32 for float16 and float32, else float64; the result in the
    dtype NumPy's own call gives (float16 of bool and int8, float64 of int64)."""
    to_rad = fn in (np.deg2rad, np.radians)

    def build(x: Node, ctx: Ctx) -> Node:
        out = dtype_of(fn(np.zeros(1, np_dtype(x.dtype))).dtype)
        work = "float64" if out == "float64" else "float32"
        pi, half_turn = (np.float64(np.pi), np.float64(180)) if work == "float64" else \
            (np.float32(np.pi), np.float32(180))
        factor = pi / half_turn if to_rad else half_turn / pi
        y = apply(Op.MUL, [C.cast(x, work, ctx.span), B.const(factor.item(), work, ctx.span)],
                  ctx.span)
        return C.cast(y, out, ctx.span)
    return build


def _nonzero_count(x: Node, axis: Any, keepdims: bool, ctx: Ctx) -> Node:
    flags = C.cast(C.cast(x, "bool", ctx.span), "int64", ctx.span)
    return checked(B.reduce, Op.SUM, flags, axes_arg(axis, ctx), bool(keepdims), ctx.span,
                   span=ctx.span)


def count_nonzero(ctx: Ctx, a: Any, axis: Any = None, *, keepdims: bool = False) -> Node:
    return _nonzero_count(to_node(a, ctx.span), axis, keepdims, ctx)


def any_(ctx: Ctx, a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Node:
    _no_out(out, "any", ctx)
    return apply(Op.GT, [_nonzero_count(to_node(a, ctx.span), axis, keepdims, ctx), 0],
                 ctx.span)


def all_(ctx: Ctx, a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Node:
    _no_out(out, "all", ctx)
    x = to_node(a, ctx.span)
    zeros = C.cast(apply(Op.EQ, [C.cast(x, "bool", ctx.span), False], ctx.span), "int64",
                   ctx.span)
    count = checked(B.reduce, Op.SUM, zeros, axes_arg(axis, ctx), bool(keepdims), ctx.span,
                    span=ctx.span)
    return apply(Op.EQ, [count, 0], ctx.span)


def _no_out(out: Any, name: str, ctx: Ctx) -> None:
    if out is not None:
        raise UserError(f"np.{name} with out= is not supported", ctx.span,
                        f"y = np.{name}(x, axis)")


def sliced(x: Node, slices: dict[int, slice], ctx: Ctx) -> Node:
    """``x[...]`` with ``slices`` on their axes, as Python clamps them (subscript.py; what
    the call must compute or check recorded in ``ctx``)."""
    node, needs = subscript.index(x, tuple(slices.get(a, slice(None))
                                           for a in range(x.type.ndim)), ctx.span)
    subscript.record(needs, ctx)
    return node


def item(ctx: Ctx, a: Node, *args: Any) -> Any:
    """``a.item()``: the one element of a size-1 array (NumPy's ValueError otherwise, at
    the call where the size is symbolic), ``a.item(k)`` the k-th of the flattened array,
    ``a.item(i, j)`` that element; a Python scalar (a weak float, int or bool)."""
    x = to_node(a, ctx.span)
    if not args:
        total = C.total(x.shape)
        message = "can only convert an array of size 1 to a Python scalar"
        if total.is_static and total.value != 1:
            raise UserError(f"ValueError: {message}", ctx.span)
        if not total.is_static:
            for need in (total - 1, 1 - total):
                ctx.requirements.append((need, C.Raises("ValueError", (message,))))
        index: Any = (0,) * x.type.ndim
    elif len(args) == 1 and not isinstance(fold(args[0]), tuple):
        x, index = flatten(ctx, x), args[0]
    else:
        index = tuple(args[0]) if len(args) == 1 else args
    node, needs = subscript.index(x, index, ctx.span)
    subscript.record(needs, ctx)
    if node.shape:
        raise UserError("ValueError: incorrect number of indices for array", ctx.span)
    kind = float if is_float(node.dtype) else bool if node.dtype == "bool" else int
    return python_value(node, kind, ctx.span)


def flip(ctx: Ctx, m: Any, axis: Any = None) -> Node:
    x = to_node(m, ctx.span)
    axes = checked(B.normalize_axes, axes_arg(axis, ctx), x.type.ndim, span=ctx.span)
    return sliced(x, {a: slice(None, None, -1) for a in axes}, ctx)


def rot90(ctx: Ctx, m: Any, k: Any = 1, axes: Any = (0, 1)) -> Node:
    """NumPy's: k (known at compile time) quarter turns from the first of ``axes`` toward
    the second, as flips and a transpose; its errors for bad axes."""
    x = to_node(m, ctx.span)
    turns = fold(k)
    if isinstance(turns, bool) or not isinstance(turns, int | np.integer):
        raise UserError("np.rot90's k must be an int known at compile time", ctx.span)
    pair = tuple(fold(a) for a in axes) if isinstance(axes, tuple | list) else ()
    if len(pair) != 2:
        raise UserError("ValueError: len(axes) must be 2.", ctx.span)
    ndim = x.type.ndim
    if pair[0] == pair[1] or abs(pair[0] - pair[1]) == ndim:
        raise UserError("ValueError: Axes must be different.", ctx.span)
    if not all(-ndim <= a < ndim for a in pair):
        raise UserError(f"ValueError: Axes={pair} out of range for array of ndim={ndim}.",
                        ctx.span)
    first, second = (a % ndim for a in pair)
    turns = int(turns) % 4
    if turns == 0:
        return x
    if turns == 2:
        return flip(ctx, flip(ctx, x, first), second)
    order = list(range(ndim))
    order[first], order[second] = order[second], order[first]
    if turns == 1:
        return C.permute(flip(ctx, x, second), order, ctx.span)
    return flip(ctx, C.permute(x, order, ctx.span), second)


def isin(ctx: Ctx, element: Any, test_elements: Any, assume_unique: bool = False,
         invert: bool = False, *, kind: Any = None) -> Node:
    """Whether each element equals some test element (NaN none), of element's shape; the
    test elements all compared (``kind`` picks NumPy's algorithm, not its answer)."""
    if kind not in (None, "sort", "table"):
        raise UserError(f"ValueError: Invalid kind: '{kind}'. Please use None, 'sort' or "
                        "'table'.", ctx.span)
    x, tests = to_node(element, ctx.span), flatten(ctx, to_node(test_elements, ctx.span))
    pairs = apply(Op.EQ, [C.reshape(x, (*x.shape, Dim.of(1)), ctx.span), tests], ctx.span)
    found = checked(B.reduce, Op.MAX, C.cast(pairs, "int64", ctx.span), (x.type.ndim,), False,
                    ctx.span, span=ctx.span)
    hit = apply(Op.NE, [found, 0], ctx.span)
    return apply(Op.EQ, [hit, False], ctx.span) if fold(invert) else hit


def roll(ctx: Ctx, a: Any, shift: Any, axis: Any = None) -> Node:
    x = to_node(a, ctx.span)
    if axis is None:
        flat = C.reshape(x, (C.total(x.shape),), ctx.span)
        return C.reshape(roll(ctx, flat, shift, 0), x.shape, ctx.span)
    shifts, axes = fold(shift), axis
    shifts = list(shifts) if isinstance(shifts, tuple | list) else [shifts]
    axes = list(axes) if isinstance(axes, tuple | list) else [axes]
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise UserError("'shift' and 'axis' should be scalars or 1D sequences", ctx.span)
    out = x
    for s, ax in zip(shifts, axes):
        if isinstance(s, bool) or not isinstance(s, int | np.integer):
            raise UserError("np.roll's shift must be an int known at compile time", ctx.span)
        out = _roll_axis(out, int(s), axis_of(out, ax, ctx), ctx)
    return out if out is not x else _copy(x, ctx)


def _roll_axis(x: Node, shift: int, axis: int, ctx: Ctx) -> Node:
    """out[i] = x[(i - shift) mod n] along ``axis``: two slices where n is known now, else
    a gather at the ramp's positions."""
    n = x.shape[axis]
    if n.is_static:
        k = shift % n.value if n.value else 0
        if k == 0:
            return x
        cut = Dim.of(n.value - k)
        tail, head = piece(x, axis, cut, n, ctx), piece(x, axis, Dim.of(0), cut, ctx)
        return checked(B.concat, [tail, head], axis, ctx.span, span=ctx.span)
    ramp = Node(Op.IOTA, TensorType("int64", (n,)), span=ctx.span)
    length = apply(Op.MAXIMUM, [to_node(n, ctx.span), 1], ctx.span)  # an empty axis: no read
    where = apply(Op.MOD, [apply(Op.SUB, [ramp, shift], ctx.span), length], ctx.span)
    return gather(x, [axis], [where], [axis], ctx.span, take=True)


def ravel(ctx: Ctx, a: Any, order: str = "C") -> Node:
    return flatten(ctx, to_node(a, ctx.span), order)


def diff(ctx: Ctx, a: Any, n: int = 1, axis: int = -1) -> Node:
    x = to_node(a, ctx.span)
    count = fold(n)
    if isinstance(count, bool) or not isinstance(count, int | np.integer) or count < 0:
        raise UserError(f"order must be non-negative but got {count!r}", ctx.span)
    ax = axis_of(x, axis, ctx)
    for _ in range(int(count)):  # a[1:] - a[:-1], clamped as NumPy's slices are
        later, earlier = sliced(x, {ax: slice(1, None)}, ctx), \
            sliced(x, {ax: slice(None, -1)}, ctx)
        op = Op.NE if x.dtype == "bool" else Op.SUB  # NumPy's diff of booleans
        x = apply(op, [later, earlier], ctx.span)
    return x


def atleast_1d(ctx: Ctx, *arys: Any) -> Any:
    out = [_at_least(to_node(a, ctx.span), 1, ctx) for a in arys]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_2d(ctx: Ctx, *arys: Any) -> Any:
    out = [_at_least(to_node(a, ctx.span), 2, ctx) for a in arys]
    return out[0] if len(out) == 1 else tuple(out)


def _at_least(x: Node, ndim: int, ctx: Ctx) -> Node:
    if x.type.ndim >= ndim:
        return x
    return C.reshape(x, (Dim.of(1),) * (ndim - x.type.ndim) + x.shape, ctx.span)


def broadcast_arrays(ctx: Ctx, *args: Any, subok: bool = False) -> tuple[Node, ...]:
    """Each argument broadcast to their common shape (NumPy's ValueError where they do not
    broadcast, at the call for symbolic dimensions), a tuple as NumPy 2's."""
    nodes = [to_node(a, ctx.span) for a in args]
    shape = checked(B.broadcast_all, [n.shape for n in nodes], ctx.span, span=ctx.span)
    return tuple(checked(B.broadcast_to, n, shape, ctx.span, span=ctx.span) for n in nodes)


def meshgrid(ctx: Ctx, *xi: Any, copy: bool = True, sparse: bool = False,
             indexing: str = "xy") -> tuple[Node, ...]:
    """NumPy's: input i flattened along axis i of len(xi) axes (the first two swapped for
    indexing 'xy'), then broadcast together unless ``sparse``; copies (new arrays) always."""
    if indexing not in ("xy", "ij"):
        raise UserError("ValueError: Valid values for `indexing` are 'xy' and 'ij'.", ctx.span)
    flat = [flatten(ctx, to_node(x, ctx.span)) for x in xi]
    ndim = len(flat)
    axes = list(range(ndim))
    if indexing == "xy" and ndim > 1:
        axes[0], axes[1] = 1, 0
    grids = [C.reshape(x, tuple(x.shape[0] if d == axes[i] else Dim.of(1) for d in range(ndim)),
                       ctx.span) for i, x in enumerate(flat)]
    return tuple(grids) if sparse else broadcast_arrays(ctx, *grids)


def _arrays(tup: Any, ctx: Ctx) -> list[Node]:
    if not isinstance(tup, tuple | list):
        raise UserError("arrays to stack must be passed as a sequence", ctx.span)
    return [to_node(a, ctx.span) for a in tup]


def hstack(ctx: Ctx, tup: Any) -> Node:
    parts = [_at_least(a, 1, ctx) for a in _arrays(tup, ctx)]
    axis = 0 if parts and parts[0].type.ndim == 1 else 1
    return checked(B.concat, parts, axis, ctx.span, span=ctx.span)


def column_stack(ctx: Ctx, tup: Any) -> Node:
    parts = [C.reshape(a, (*a.shape, Dim.of(1)), ctx.span) if a.type.ndim < 2 else a
             for a in (_at_least(a, 1, ctx) for a in _arrays(tup, ctx))]
    return checked(B.concat, parts, 1, ctx.span, span=ctx.span)


def vstack(ctx: Ctx, tup: Any) -> Node:
    parts = [_at_least(a, 2, ctx) for a in _arrays(tup, ctx)]
    return checked(B.concat, parts, 0, ctx.span, span=ctx.span)


def dstack(ctx: Ctx, tup: Any) -> Node:
    """Along a third axis; as np.atleast_3d makes them, (N,) is (1, N, 1), (M, N) (M, N, 1)."""
    parts = [_at_least_3d(a, ctx) for a in _arrays(tup, ctx)]
    return checked(B.concat, parts, 2, ctx.span, span=ctx.span)


def _at_least_3d(x: Node, ctx: Ctx) -> Node:
    if x.type.ndim == 1:
        return C.reshape(x, (Dim.of(1), x.shape[0], Dim.of(1)), ctx.span)
    if x.type.ndim == 2:
        return C.reshape(x, (*x.shape, Dim.of(1)), ctx.span)
    return _at_least(x, 3, ctx)  # (1, 1, 1) of a 0-d one; 3 or more axes as they are


def block(ctx: Ctx, arrays: Any) -> Node:
    """NumPy's: nested lists of depth d arrange their leaves (arrays, or numbers as NumPy
    scalars) in blocks, each promoted to the larger of d and the leaves' most axes (1s in
    front), the innermost lists joined along the last axis, the next along the one before;
    NumPy's errors for tuples, empty lists and mismatched depths, and concatenate's."""
    if isinstance(arrays, tuple):
        raise UserError("TypeError: arrays is a tuple. Only lists can be used to arrange "
                        "blocks, and np.block does not allow implicit conversion from tuple "
                        "to ndarray.", ctx.span)
    leaves: list[tuple[str, int]] = []  # (where, depth)
    _block_leaves(arrays, "arrays", 0, leaves, ctx)
    depth = leaves[0][1]
    for where, d in leaves:
        if d != depth:
            raise UserError(f"ValueError: List depths are mismatched. First element was at "
                            f"depth {depth}, but there is an element at depth {d} ({where})",
                            ctx.span)
    nodes = _block_nodes(arrays, ctx)
    ndim = max([depth] + [n.type.ndim for n in _flat(nodes)])

    def join(x: Any, level: int) -> Node:
        if level == depth:
            return _at_least(x, ndim, ctx)
        parts = [join(e, level + 1) for e in x]
        return checked(B.concat, parts, ndim - (depth - level), ctx.span, span=ctx.span)

    out = join(nodes, 0)
    return copy(ctx, out) if depth == 0 else out  # a new array, as NumPy's


def _block_leaves(x: Any, where: str, depth: int, out: list[tuple[str, int]],
                  ctx: Ctx) -> None:
    """Each leaf of np.block's nested lists with its depth, NumPy's error for an empty list."""
    if isinstance(x, tuple):
        raise UserError(f"TypeError: {where} is a tuple. Only lists can be used to arrange "
                        "blocks, and np.block does not allow implicit conversion from tuple "
                        "to ndarray.", ctx.span)
    if not isinstance(x, list):
        out.append((where, depth))
        return
    if not x:
        raise UserError(f"ValueError: List at {where} cannot be empty", ctx.span)
    for i, e in enumerate(x):
        _block_leaves(e, f"{where}[{i}]", depth + 1, out, ctx)


def _block_nodes(x: Any, ctx: Ctx) -> Any:
    """np.block's lists with each leaf a node (numbers as NumPy scalars: np.asarray's)."""
    if isinstance(x, list):
        return [_block_nodes(e, ctx) for e in x]
    return strong(to_node(x, ctx.span))


def _flat(x: Any) -> list[Node]:
    return [n for e in x for n in _flat(e)] if isinstance(x, list) else [x]


FUNCTIONS: dict[Any, Handler] = {
    np.isnan: _elementwise(np.isnan, _isnan), np.isinf: _elementwise(np.isinf, isinf_of),
    np.isfinite: _elementwise(np.isfinite, _isfinite), np.nan_to_num: nan_to_num,
    np.signbit: _elementwise(np.signbit, _signbit),
    np.reciprocal: _elementwise(np.reciprocal, _reciprocal),
    np.trunc: _elementwise(np.trunc, toward_zero), np.fix: _elementwise(np.fix, toward_zero),
    np.positive: _elementwise(np.positive, _copy),
    **{fn: _elementwise(fn, _angle(fn)) for fn in (np.deg2rad, np.radians, np.rad2deg,
                                                   np.degrees)},
    np.rot90: rot90, np.isin: isin,
    np.any: any_, np.all: all_, np.count_nonzero: count_nonzero,
    np.flip: flip, np.roll: roll, np.ravel: ravel, np.diff: diff,
    np.atleast_1d: atleast_1d, np.atleast_2d: atleast_2d, np.hstack: hstack, np.vstack: vstack,
    np.column_stack: column_stack, np.broadcast_arrays: broadcast_arrays,
    np.meshgrid: meshgrid, np.dstack: dstack, np.block: block, np.fmax: _nan_aware(Op.GT),
    np.fmin: _nan_aware(Op.LT), np.ptp: ptp, np.nansum: nansum,
}
METHODS: dict[str, Handler] = {"any": any_, "all": all_, "item": item}
