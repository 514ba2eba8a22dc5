"""More shape functions: np.split/array_split (and the hsplit/vsplit spellings),
np.swapaxes and np.moveaxis (views of their argument), np.pad (constant mode)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import fold, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.types import Dim


def _axis(x: Node, axis: Any, ctx: Ctx) -> int:
    axis = fold(axis)
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
        raise UserError("axis must be an int known at compile time", ctx.span)
    return checked(B.normalize_axes, (int(axis),), x.type.ndim, span=ctx.span)[0]


def _piece(x: Node, axis: int, start: Dim, stop: Dim, ctx: Ctx) -> Node:
    starts = tuple(start if a == axis else Dim.of(0) for a in range(x.type.ndim))
    sizes = tuple(stop - start if a == axis else d for a, d in enumerate(x.shape))
    return B.slice_axes(x, starts, (Dim.of(1),) * x.type.ndim, sizes, ctx.span)


def _bounds(indices: Any, length: Dim, ctx: Ctx) -> list[tuple[Dim, Dim]]:
    """Split points as NumPy takes them: clipped to [0, length], a later one before an
    earlier one giving an empty piece."""
    points = [fold(i) for i in indices]
    if not all(isinstance(p, int | np.integer) and not isinstance(p, bool) for p in points):
        raise UserError("split indices must be ints known at compile time", ctx.span)
    if not length.is_static and any(p < 0 for p in points):
        raise UserError("negative split indices along a symbolic axis are not supported",
                        ctx.span, "indices from the start")
    n = length.value if length.is_static else None

    def clip(p: int) -> Dim:
        if n is None:
            return Dim.of(p)
        return Dim.of(min(max(p + n if p < 0 else p, 0), n))

    edges = [Dim.of(0), *(clip(int(p)) for p in points), length]
    out = []
    for lo, hi in zip(edges, edges[1:]):
        if lo.is_static and hi.is_static and hi.value < lo.value:
            hi = lo
        out.append((lo, hi))
    return out


def _even_bounds(sections: int, length: Dim, exact: bool, ctx: Ctx) -> list[tuple[Dim, Dim]]:
    if sections <= 0:
        raise UserError("number sections must be larger than 0.", ctx.span)
    step = length.exact_div(sections)
    if step is None and length.is_static and not exact:  # array_split: the first ones longer
        big, extra = divmod(length.value, sections)
        sizes = [big + 1] * extra + [big] * (sections - extra)
        edges = [sum(sizes[:k]) for k in range(sections + 1)]
        return [(Dim.of(a), Dim.of(b)) for a, b in zip(edges, edges[1:])]
    if step is None:
        if length.is_static:
            raise UserError("array split does not result in an equal division", ctx.span)
        raise UserError(f"the axis of length {length} may not divide into {sections} equal "
                        "sections", ctx.span, f"declare that axis as a multiple of {sections} "
                        f"in the signature (\"{sections}{length}\")")
    return [(step * k, step * (k + 1)) for k in range(sections)]


def _splitter(exact: bool, default_axis: int | None = 0) -> Handler:
    """np.split (exact: equal sections or an error) and np.array_split; hsplit and vsplit
    fix the axis (``default_axis`` None: the second one, as hsplit does for 2-D and up)."""
    def handler(ctx: Ctx, ary: Any, indices_or_sections: Any,
                axis: Any = default_axis) -> list[Node]:
        x = to_node(ary, ctx.span)
        if axis is None:
            axis = 1 if x.type.ndim > 1 else 0
        a = _axis(x, axis, ctx)
        how = fold(indices_or_sections)
        if isinstance(how, tuple | list):
            bounds = _bounds(how, x.shape[a], ctx)
        elif isinstance(how, int | np.integer) and not isinstance(how, bool):
            bounds = _even_bounds(int(how), x.shape[a], exact, ctx)
        else:
            raise UserError("indices_or_sections must be an int or a list of ints known at "
                            "compile time", ctx.span)
        return [_piece(x, a, lo, hi, ctx) for lo, hi in bounds]
    return handler


def swapaxes(ctx: Ctx, a: Any, axis1: Any, axis2: Any) -> Node:
    x = to_node(a, ctx.span)
    i, j = _axis(x, axis1, ctx), _axis(x, axis2, ctx)
    perm = list(range(x.type.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return C.permute(x, tuple(perm), ctx.span)


def moveaxis(ctx: Ctx, a: Any, source: Any, destination: Any) -> Node:
    x = to_node(a, ctx.span)
    sources = source if isinstance(source, tuple | list) else (source,)
    destinations = destination if isinstance(destination, tuple | list) else (destination,)
    if len(sources) != len(destinations):
        raise UserError("`source` and `destination` arguments must have the same number of "
                        "elements", ctx.span)
    src = [_axis(x, s, ctx) for s in sources]
    dst = [_axis(x, d, ctx) for d in destinations]
    order = [n for n in range(x.type.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return C.permute(x, tuple(order), ctx.span)


def _widths(pad_width: Any, ndim: int, ctx: Ctx) -> list[tuple[int, int]]:
    """pad_width as NumPy takes it: n, (n,), (before, after) or one pair per axis."""
    value = fold(pad_width)
    pairs = np.asarray(value, dtype=object)
    if pairs.ndim == 0 or pairs.shape in ((1,), (2,), (1, 2)):
        pairs = np.broadcast_to(pairs.reshape(-1)[:2] if pairs.ndim else pairs, (ndim, 2))
    if pairs.shape != (ndim, 2) or not all(
            isinstance(fold(v), int | np.integer) and not isinstance(v, bool) and fold(v) >= 0
            for v in pairs.flat):
        raise UserError("pad_width must be non-negative ints known at compile time, one "
                        "(before, after) pair per axis", ctx.span)
    return [(int(fold(a)), int(fold(b))) for a, b in pairs]


def pad(ctx: Ctx, array: Any, pad_width: Any, mode: str = "constant",
        constant_values: Any = 0) -> Node:
    """np.pad in its constant mode: each axis grown by filled blocks, concatenated."""
    from cuvil_aot.compiler.frontend.creation import filled

    if mode != "constant":
        raise UserError(f"np.pad mode {mode!r} is not supported", ctx.span, "mode='constant'")
    x = to_node(array, ctx.span)
    for axis, (before, after) in enumerate(_widths(pad_width, x.type.ndim, ctx)):
        blocks = []
        for width in (before, after):
            shape = tuple(Dim.of(width) if a == axis else d for a, d in enumerate(x.shape))
            blocks.append(filled(shape, constant_values, x.dtype, ctx) if width else None)
        parts = [p for p in (blocks[0], x, blocks[1]) if p is not None]
        if len(parts) > 1:
            x = checked(B.concat, parts, axis, ctx.span, span=ctx.span)
    return x


FUNCTIONS: dict[Any, Handler] = {
    np.pad: pad,
    np.split: _splitter(True), np.array_split: _splitter(False),
    np.hsplit: _splitter(True, None), np.vsplit: _splitter(True, 0),
    np.swapaxes: swapaxes, np.moveaxis: moveaxis,
}
METHODS: dict[str, Handler] = {"swapaxes": swapaxes}
