"""More shape functions: np.split/array_split (and the hsplit/vsplit spellings),
np.swapaxes and np.moveaxis (views of their argument), np.pad (constant mode), np.repeat
and np.tile (one count per axis: a broadcast of a new axis, merged into its neighbour)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.handlers import Ctx, Handler
from cuvil_aot.compiler.frontend.shape_args import is_call_int, shape_arg
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import fold, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.types import Dim


def axis_of(x: Node, axis: Any, ctx: Ctx) -> int:
    axis = fold(axis)
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
        raise UserError("axis must be an int known at compile time", ctx.span)
    return checked(B.normalize_axes, (int(axis),), x.type.ndim, span=ctx.span)[0]


def piece(x: Node, axis: int, start: Dim, stop: Dim, ctx: Ctx) -> Node:
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
    if step is None and length.is_static:
        raise UserError("array split does not result in an equal division", ctx.span)
    if step is None and not exact:
        raise UserError(f"np.array_split of an axis of length {length}, which may not divide "
                        f"into {sections} equal sections", ctx.span, f"np.split, or declare "
                        f"that axis as a multiple of {sections} in the signature")
    if step is None:  # floor(length / sections), a size the call computes; NumPy's check
        name = C.derived_symbol(length - (sections - 1), sections)
        ctx.derived.append((name, length - (sections - 1), sections))
        step = Dim.of(name)
        ctx.requirements.append((step * sections - length, C.Raises(
            "ValueError", ("array split does not result in an equal division",))))
    return [(step * k, step * (k + 1)) for k in range(sections)]


def _splitter(exact: bool, default_axis: int | None = 0) -> Handler:
    """np.split (exact: equal sections or an error) and np.array_split; hsplit and vsplit
    fix the axis (``default_axis`` None: the second one, as hsplit does for 2-D and up)."""
    def handler(ctx: Ctx, ary: Any, indices_or_sections: Any,
                axis: Any = default_axis) -> list[Node]:
        x = to_node(ary, ctx.span)
        if axis is None:
            axis = 1 if x.type.ndim > 1 else 0
        a = axis_of(x, axis, ctx)
        how = fold(indices_or_sections)
        if isinstance(how, tuple | list):
            bounds = _bounds(how, x.shape[a], ctx)
        elif isinstance(how, int | np.integer) and not isinstance(how, bool):
            bounds = _even_bounds(int(how), x.shape[a], exact, ctx)
        else:
            raise UserError("indices_or_sections must be an int or a list of ints known at "
                            "compile time", ctx.span)
        return [piece(x, a, lo, hi, ctx) for lo, hi in bounds]
    return handler


def swapaxes(ctx: Ctx, a: Any, axis1: Any, axis2: Any) -> Node:
    x = to_node(a, ctx.span)
    i, j = axis_of(x, axis1, ctx), axis_of(x, axis2, ctx)
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
    src = [axis_of(x, s, ctx) for s in sources]
    dst = [axis_of(x, d, ctx) for d in destinations]
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
        constant_values: Any = 0, reflect_type: str = "even") -> Node:
    """np.pad: constant mode as filled blocks, concatenated along each axis; 'edge',
    'wrap', 'reflect' and 'symmetric' as gathers of the array's own elements (pad_modes)."""
    from cuvil_aot.compiler.frontend import pad_modes
    from cuvil_aot.compiler.frontend.creation import filled

    if mode in pad_modes.MODES:
        if reflect_type != "even":
            raise UserError(f"np.pad reflect_type={reflect_type!r} is not supported", ctx.span,
                            "reflect_type='even'")
        x = to_node(array, ctx.span)
        return pad_modes.padded(x, _widths(pad_width, x.type.ndim, ctx), mode, ctx)
    if mode != "constant":
        raise UserError(f"np.pad mode {mode!r} is not supported", ctx.span,
                        "mode='constant', 'edge', 'wrap', 'reflect' or 'symmetric'")
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


def _count(value: Any, what: str, ctx: Ctx) -> Dim:
    """A repetition count: an int, a dimension of the signature, or an int the call knows
    before the kernels (``n_heads // n_kv_heads`` of int arguments), a size it computes."""
    v = fold(value)
    if isinstance(v, Dim):
        return v
    if is_call_int(v):
        return Dim.of(shape_arg(v, ctx)[0])
    if isinstance(v, bool) or not isinstance(v, int | np.integer):
        raise UserError(f"{what} must be ints known before the kernels run (constants, "
                        "dimensions, int arguments)", ctx.span,
                        "an int, or a size from an array's shape")
    if v < 0:
        raise UserError("negative dimensions are not allowed", ctx.span)
    return Dim.of(int(v))


def _replicate(x: Node, axis: int, count: Dim, each: bool, ctx: Ctx) -> Node:
    """``x`` with axis ``axis`` taken ``count`` times: each element in turn (``each``,
    np.repeat: a new axis after it) or the whole axis in turn (np.tile: before it)."""
    shape = x.shape
    new = axis + 1 if each else axis
    spread = C.reshape(x, (*shape[:new], Dim.of(1), *shape[new:]), ctx.span)
    spread = checked(B.broadcast_to, spread, (*shape[:new], count, *shape[new:]), ctx.span,
                     span=ctx.span)
    return C.reshape(spread, (*shape[:axis], shape[axis] * count, *shape[axis + 1:]), ctx.span)


def repeat(ctx: Ctx, a: Any, repeats: Any, axis: Any = None) -> Node:
    """np.repeat with one count for every element (a count per element is refused)."""
    from cuvil_aot.compiler.frontend.handlers import copy

    counts = fold(repeats)
    if isinstance(counts, tuple | list | np.ndarray) or (isinstance(counts, Node) and
                                                           counts.shape):
        raise UserError("np.repeat with a count per element is not supported", ctx.span,
                        "one count for all (np.repeat(a, 2, axis=1)), or np.take with an "
                        "index array")
    x = to_node(a, ctx.span)
    if axis is None:
        x, axis = C.reshape(x, (C.total(x.shape),), ctx.span), 0
    count = _count(repeats, "repeats", ctx)
    out = _replicate(x, axis_of(x, axis, ctx), count, True, ctx)
    return copy(ctx, out) if count == Dim.of(1) else out  # a new array, as NumPy's


def tile(ctx: Ctx, A: Any, reps: Any) -> Node:
    """np.tile: ``A`` given as many leading axes as ``reps`` has more, each axis taken its
    count of times in turn."""
    from cuvil_aot.compiler.frontend.handlers import copy

    x = to_node(A, ctx.span)
    value = fold(reps)
    counts = [_count(r, "reps", ctx) for r in (value if isinstance(value, tuple | list)
                                               else (value,))]
    ndim = max(len(counts), x.type.ndim)
    x = C.reshape(x, (Dim.of(1),) * (ndim - x.type.ndim) + x.shape, ctx.span)
    counts = [Dim.of(1)] * (ndim - len(counts)) + counts
    for axis, count in enumerate(counts):
        if count != Dim.of(1):
            x = _replicate(x, axis, count, False, ctx)
    return copy(ctx, x)  # a new array, as NumPy's (fusion drops the copy)


def method_repeat(ctx: Ctx, a: Node, repeats: Any, axis: Any = None) -> Node:
    return repeat(ctx, a, repeats, axis)


FUNCTIONS: dict[Any, Handler] = {
    np.pad: pad, np.repeat: repeat, np.tile: tile,
    np.split: _splitter(True), np.array_split: _splitter(False),
    np.hsplit: _splitter(True, None), np.vsplit: _splitter(True, 0),
    np.swapaxes: swapaxes, np.moveaxis: moveaxis,
}
METHODS: dict[str, Handler] = {"swapaxes": swapaxes, "repeat": method_repeat}
