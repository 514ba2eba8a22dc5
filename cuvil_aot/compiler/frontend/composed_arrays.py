"""NumPy's array products and comparisons as compositions of the IR's operations, with
NumPy's values, result dtypes and errors:

- np.kron: the outer product of a and b (ranks padded with leading 1s), its axes
  interleaved, each pair merged (NumPy's own definition);
- np.cross along the last axis (or axisa/axisb/axisc/axis): vectors of 3 or 2 components,
  NumPy's multiplications and subtractions one by one, each rounded in the result dtype
  (float16 too, whose intermediates are otherwise computed in float32);
- np.diag: of a vector, the square matrix with it on diagonal k (a mask of two ramps);
  of a matrix, np.diagonal;
- np.array_equal: False where the shapes differ (known at compile time), else whether
  every element is equal (NaNs equal to NaNs with equal_nan), a Python bool.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.composed import all_
from cuvil_aot.compiler.frontend.composed_math import diagonal
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler, now
from cuvil_aot.compiler.frontend.rounded import rounded_op, stored
from cuvil_aot.compiler.frontend.shapes import axis_of, moveaxis, piece
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import apply, fold, is_number, python_value, strong, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, TensorType, dtype_of, is_float, np_dtype

# np.kron --------------------------------------------------------------------------------

def kron(ctx: Ctx, a: Any, b: Any) -> Any:
    """a's and b's shapes padded to one rank, a[i0, None, i1, None, ...] * b[None, j0, None,
    j1, ...], axis pairs merged: out[i0 * B0 + j0, ...] = a[i0, ...] * b[j0, ...]. Python
    scalars become arrays first (int64, float64), as NumPy's asarray makes them."""
    if is_number(a) and is_number(b):
        return now(np.kron, [a, b], ctx)
    x, y = (strong(to_node(v, ctx.span)) for v in (a, b))
    if x.type.ndim == 0 or y.type.ndim == 0:
        return apply(Op.MUL, [x, y], ctx.span)
    rank = max(x.type.ndim, y.type.ndim)
    xs, ys = (((Dim.of(1),) * (rank - v.type.ndim)) + v.shape for v in (x, y))
    one = Dim.of(1)
    left = C.reshape(x, tuple(d for s in xs for d in (s, one)), ctx.span)
    right = C.reshape(y, tuple(d for s in ys for d in (one, s)), ctx.span)
    product = apply(Op.MUL, [left, right], ctx.span)
    return C.reshape(product, tuple(p * q for p, q in zip(xs, ys)), ctx.span)


# np.cross -------------------------------------------------------------------------------

CROSS_SIZES = "incompatible dimensions for cross product\n(dimension must be 2 or 3)"


def cross(ctx: Ctx, a: Any, b: Any, axisa: Any = -1, axisb: Any = -1, axisc: Any = -1,
          axis: Any = None) -> Node:
    """NumPy's: the vector axes moved last, both cast to promote_types of their dtypes,
    each component a product minus a product (a missing third component zero), the result's
    vector axis moved to axisc; of two 2-vectors the z component alone."""
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = to_node(a, ctx.span), to_node(b, ctx.span)
    if x.type.ndim < 1 or y.type.ndim < 1:
        raise UserError("ValueError: At least one array has zero dimension", ctx.span)
    x = moveaxis(ctx, x, axis_of(x, axisa, ctx), -1)
    y = moveaxis(ctx, y, axis_of(y, axisb, ctx), -1)
    n, m = (_components(v, ctx) for v in (x, y))
    dtype = dtype_of(np.promote_types(np_dtype(x.dtype), np_dtype(y.dtype)))
    if dtype == "bool":
        raise UserError("TypeError: numpy boolean subtract, the `-` operator, is not "
                        "supported, use the bitwise_xor, the `^` operator, or the "
                        "logical_xor function instead.", ctx.span, "x.astype(np.int64)")
    xs, ys = (_split(v, k, dtype, ctx) for v, k in ((x, n), (y, m)))
    shape = checked(B.broadcast_shapes, x.shape[:-1], y.shape[:-1], ctx.span, span=ctx.span)
    parts = _cross_parts(xs, ys, dtype, shape, ctx)
    if len(parts) == 1:
        return parts[0]
    stacked = checked(B.stack, parts, len(shape), ctx.span, span=ctx.span)
    return moveaxis(ctx, stacked, -1, axis_of(stacked, axisc, ctx))


def _components(v: Node, ctx: Ctx) -> int:
    count = v.shape[-1]
    if not count.is_static:
        raise UserError(f"np.cross of vectors of {count} components: the count must be known "
                        "at compile time", ctx.span, "vectors of a constant 2 or 3 components")
    if count.value not in (2, 3):
        raise UserError(f"ValueError: {CROSS_SIZES}", ctx.span)
    return int(count.value)


def _split(v: Node, count: int, dtype: str, ctx: Ctx) -> list[Node]:
    """v[..., 0], v[..., 1] (and v[..., 2]) cast to ``dtype``."""
    last = v.type.ndim - 1
    return [C.cast(C.reshape(piece(v, last, Dim.of(i), Dim.of(i + 1), ctx), v.shape[:-1],
                             ctx.span), dtype, ctx.span) for i in range(count)]


Pair = tuple[int, int] | None
# Each component of a x b as (i, j) and (k, l): a[i] * b[j] - a[k] * b[l], for each pair
# of vector lengths; None is a zero (a missing third component): NumPy's own formulas.
CROSS_FORMULAS: dict[tuple[int, int], tuple[tuple[Pair, Pair], ...]] = {
    (2, 2): (((0, 1), (1, 0)),),
    (2, 3): (((1, 2), None), (None, (0, 2)), ((0, 1), (1, 0))),
    (3, 2): ((None, (2, 1)), ((2, 0), None), ((0, 1), (1, 0))),
    (3, 3): (((1, 2), (2, 1)), ((2, 0), (0, 2)), ((0, 1), (1, 0))),
}


def _cross_parts(a: list[Node], b: list[Node], dtype: str, shape: tuple[Dim, ...],
                 ctx: Ctx) -> list[Node]:
    """Each product rounded to ``dtype`` and stored (rounded.stored: all in one kernel) before
    a subtraction reads it, as NumPy's multiply(..., out=) and -= do."""
    formulas = CROSS_FORMULAS[len(a), len(b)]
    pairs = sorted({p for parts in formulas for p in parts if p is not None})
    products = [B.broadcast_to(rounded_op(Op.MUL, [a[i], b[j]], dtype, ctx), shape, ctx.span)
                for i, j in pairs]
    together = stored(checked(B.stack, products, len(shape), ctx.span, span=ctx.span), ctx)
    last = len(shape)
    found = {p: C.reshape(piece(together, last, Dim.of(n), Dim.of(n + 1), ctx), shape,
                          ctx.span) for n, p in enumerate(pairs)}
    out = []
    for plus, minus in formulas:
        if plus is None:
            out.append(apply(Op.NEG, [found[minus]], ctx.span))  # type: ignore[index]
        elif minus is None:
            out.append(found[plus])
        else:
            out.append(rounded_op(Op.SUB, [found[plus], found[minus]], dtype, ctx))
    return out


# np.diag --------------------------------------------------------------------------------

def diag(ctx: Ctx, v: Any, k: Any = 0) -> Node:
    """Of a vector of length m, the (m + |k|)-square matrix holding it on diagonal k:
    out[r, c] = v[r] where c - r == k >= 0, v[c] where r - c == -k > 0, else 0 (v padded
    with |k| zeros to the matrix's side); of a matrix, its diagonal k."""
    x = to_node(v, ctx.span)
    offset = _offset(k, ctx)
    if x.type.ndim == 2:
        return diagonal(ctx, x, offset)
    if x.type.ndim != 1:
        raise UserError("ValueError: Input must be 1- or 2-d.", ctx.span)
    zero = np.zeros((), np_dtype(x.dtype)).item()
    side = x.shape[0] + abs(offset)
    if offset:
        pad = B.broadcast_to(B.const(zero, x.dtype, ctx.span), (Dim.of(abs(offset)),), ctx.span)
        x = checked(B.concat, [x, pad], 0, ctx.span, span=ctx.span)
    ramp = Node(Op.IOTA, TensorType("int64", (side,)), span=ctx.span)
    rows, cols = C.reshape(ramp, (side, Dim.of(1)), ctx.span), \
        C.reshape(ramp, (Dim.of(1), side), ctx.span)
    along = (side, Dim.of(1)) if offset >= 0 else (Dim.of(1), side)
    on = apply(Op.EQ, [apply(Op.SUB, [cols, rows], ctx.span), offset], ctx.span)
    return apply(Op.WHERE, [on, C.reshape(x, along, ctx.span), B.const(zero, x.dtype)],
                 ctx.span)


def _offset(k: Any, ctx: Ctx) -> int:
    value = fold(k)
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise UserError("np.diag's k must be an int known at compile time", ctx.span, "k=1")
    return int(value)


# np.array_equal -------------------------------------------------------------------------

def array_equal(ctx: Ctx, a1: Any, a2: Any, equal_nan: Any = False) -> Any:
    """NumPy's: False for shapes that differ, else all(a1 == a2); with ``equal_nan`` NaNs
    in the same places equal and the rest compared. A Python bool, as NumPy's."""
    flag = fold(equal_nan)
    if not isinstance(flag, bool | np.bool_ | int):
        raise UserError("np.array_equal's equal_nan must be known at compile time", ctx.span,
                        "equal_nan=True or equal_nan=False")
    if is_number(a1) and is_number(a2):
        return now(lambda p, q: np.array_equal(p, q, equal_nan=bool(flag)), [a1, a2], ctx)
    x, y = (strong(to_node(v, ctx.span)) for v in (a1, a2))
    if not _same_shape(x.shape, y.shape, ctx):
        return False
    same = apply(Op.EQ, [x, y], ctx.span)
    if flag and (is_float(x.dtype) or is_float(y.dtype)):
        nan_x, nan_y = (apply(Op.NE, [v, v], ctx.span) for v in (x, y))
        same = apply(Op.AND, [apply(Op.EQ, [nan_x, nan_y], ctx.span),
                              apply(Op.OR, [nan_x, same], ctx.span)], ctx.span)
    everywhere = all_(ctx, same) if same.shape else same  # (no reduction of no axes)
    return python_value(everywhere, bool, ctx.span)


def _same_shape(a: tuple[Dim, ...], b: tuple[Dim, ...], ctx: Ctx) -> bool:
    """Whether two shapes are equal, known at compile time; refused where only the call
    knows (symbols that may or may not be equal)."""
    if len(a) != len(b):
        return False
    for p, q in zip(a, b):
        if p.is_static and q.is_static:
            if p.value != q.value:
                return False
        elif not C.same(p, q):
            raise UserError(f"np.array_equal of arrays whose lengths {p} and {q} may differ: "
                            "whether the shapes are equal is known only at the call", ctx.span,
                            "arrays whose shapes share their symbols (or constant lengths)")
    return True


FUNCTIONS: dict[Any, Handler] = {
    np.kron: kron, np.cross: cross, np.diag: diag, np.array_equal: array_equal,
}
