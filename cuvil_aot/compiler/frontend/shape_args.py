"""Shapes made of sizes known only at the call: ``x.reshape(T, n_head, C // n_head)`` and
``np.zeros((n, d))`` with int arguments. Each such size is a symbol the wrapper computes
before any kernel runs (the start of a one-trip run-time range, ir/loop.py's record), so
the kernels read it as any symbolic size; NumPy's checks on it (a negative size, a reshape
of another element count) are made at the call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cuvil_aot.compiler.frontend.call_checks import known_before_the_kernels
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import apply, run_time_origin, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.loop import RunTimeRange
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, TensorType, is_int

if TYPE_CHECKING:
    from cuvil_aot.compiler.frontend.handlers import Ctx


def shape_arg(shape: Any, ctx: Ctx,
              negative: str = "negative dimensions are not allowed") -> tuple[Any, ...]:
    """A shape's sizes: ints, dimensions, and ints known at the call (``n_head``, ``C //
    n_head``) as symbols the call computes, which raise ``negative`` where they are < 0."""
    dims = tuple(shape) if isinstance(shape, tuple | list) else (shape,)
    out = []
    for d in dims:
        if is_call_int(d):
            d = run_time_int(d, ctx)
            ctx.requirements.append((d, C.Raises("ValueError", (negative,))))
        elif isinstance(d, Node) and not d.shape:
            raise UserError(f"a shape must be made of ints and dimensions; this one has a "
                            f"number computed at run time from {run_time_origin(d)}, so "
                            "it would depend on data",
                            ctx.span, "ints: +, -, *, // and % of int arguments, dimensions "
                            "and constants")
        if not isinstance(d, int | Dim):
            raise UserError("a shape must be a tuple of ints or dimensions", ctx.span)
        out.append(d)
    return tuple(out)


def is_call_int(value: Any) -> bool:
    """An int the call knows before the kernels run (from int arguments and sizes, not
    array data): a size it can compute."""
    return isinstance(value, Node) and not value.shape and is_int(value.dtype) \
        and value.dtype != "bool" and known_before_the_kernels(value)


def run_time_int(k: Node, ctx: Ctx) -> Dim:
    """An int known only at the call as a symbol the wrapper computes (the start of
    ``range(k, k + 1)``, ir/loop.py's record of a run-time range)."""
    one = to_node(1, ctx.span)
    k64 = k if k.dtype == "int64" else Node(Op.CAST, TensorType("int64", ()), (k,), span=k.span)
    record = RunTimeRange.of(k64, apply(Op.ADD, [k64, one], ctx.span), one)
    ctx.run_time.append(record)
    return Dim.of(record.start_symbol)
