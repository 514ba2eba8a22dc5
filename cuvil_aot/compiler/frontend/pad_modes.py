"""np.pad's modes that repeat the array's own elements: 'edge', 'wrap', 'reflect' and
'symmetric', each axis one gather at the positions NumPy's padding reads. Output position
p (from -before to n + after) reads element

- edge: p clamped to [0, n - 1];
- wrap: p mod n;
- reflect: i = p mod 2(n - 1), then 2(n - 1) - i where i >= n (a one-element axis: 0);
- symmetric: i = p mod 2n, then 2n - 1 - i where i >= n;

which is what NumPy's repeated reflections give for pads of any width (checked against
np.pad for axes of 1 to 8 elements and pads of 0 to 19). Python's sign rule of % on int64
gives the negative positions. An empty axis with a pad is NumPy's ValueError (at the call
where its length is symbolic); reflect_type='odd' is refused."""

from __future__ import annotations

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.creation import ramp
from cuvil_aot.compiler.frontend.gather import gather
from cuvil_aot.compiler.frontend.handlers import Ctx
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import apply
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim

MODES = ("edge", "wrap", "reflect", "symmetric")


def padded(x: Node, widths: list[tuple[int, int]], mode: str, ctx: Ctx) -> Node:
    """``x`` padded by ``widths`` (one (before, after) pair per axis) in ``mode``."""
    for axis, (before, after) in enumerate(widths):
        if before == 0 and after == 0:
            continue
        n = x.shape[axis]
        message = (f"can't extend empty axis {axis} using modes other than 'constant' or "
                   "'empty'")
        if n.is_static and n.value == 0:
            raise UserError(f"ValueError: {message}", ctx.span)
        if not n.is_static:
            ctx.requirements.append((n - 1, C.Raises("ValueError", (message,))))
        positions = apply(Op.SUB, [ramp(n + (before + after), ctx), before], ctx.span)
        x = gather(x, [axis], [_source(mode, positions, n, ctx)], [axis], ctx.span)
    return x


def _source(mode: str, p: Node, n: Dim, ctx: Ctx) -> Node:
    """The element of an axis of length n that output position p reads."""
    length = B.const(n, "int64", ctx.span)
    if mode == "edge":
        last = apply(Op.SUB, [length, 1], ctx.span)
        return apply(Op.MAXIMUM, [apply(Op.MINIMUM, [p, last], ctx.span), 0], ctx.span)
    if mode == "wrap":
        return apply(Op.MOD, [p, length], ctx.span)
    if mode == "reflect":  # a period of 2(n - 1), at least 1 (one element: always 0)
        period = apply(Op.MAXIMUM, [apply(Op.MUL, [apply(Op.SUB, [length, 1], ctx.span), 2],
                                          ctx.span), 1], ctx.span)
        back = period
    else:  # symmetric: a period of 2n, the edge element repeated
        period = apply(Op.MUL, [length, 2], ctx.span)
        back = apply(Op.SUB, [period, 1], ctx.span)
    i = apply(Op.MOD, [p, period], ctx.span)
    beyond = apply(Op.GE, [i, length], ctx.span)
    return apply(Op.WHERE, [beyond, apply(Op.SUB, [back, i], ctx.span), i], ctx.span)
