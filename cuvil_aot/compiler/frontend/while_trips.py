"""The trip count of a ``while`` loop that is no count, known only at run time.

``while n > 1: x = x * 0.5; n //= 2`` runs its body a number of times that depends on
``n`` alone: the body updates ``n`` from numbers, never from array data. Such a loop is
a run-time loop (loops.py) over ``range(trips)``, its body's kernels running ``trips``
times with ``n`` a carried number as any other; ``trips`` is counted by the wrapper
once per call, before the kernels, by running the loop on the numbers the condition
reads (ir/loop.py's HostWhile, codegen/run_time_sizes.py). A condition that reads a
value the body computes from arrays (``while err > tol: x = step(x); err = ...``) is
refused: its trips would be known only as the kernels run.

Before (the body interpreted once: the condition and the updates of the stand-ins)::

    cond: gt(cast(%_loop0_n), 1)      updates: %_loop0_n -> floordiv(cast(%_loop0_n), 2)

After (the match function)::

    int64_t w0 = c->arg_n; int64_t trips = 0;
    for (;;) { if (!(w0 > 1)) break; const int64_t u0 = <w0 // 2>; w0 = u0; trips++; }
"""

from __future__ import annotations

from typing import Any

from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import run_time_origin, to_node
from cuvil_aot.compiler.ir.loop import HostWhile, RunTimeRange
from cuvil_aot.compiler.ir.node import Node, toposort
from cuvil_aot.compiler.ir.ops import ELEMENTWISE, Op
from cuvil_aot.errors import SourceSpan

HINT = ("compute its trips from int arguments and numbers (the loop's condition and what "
        "it reads updated from numbers only), or count with one int: i = 0; while i < n: "
        "...; i += 1")


def trips(cond: Any, params: tuple[Node, ...], inits: list[Node], updates: list[Node],
          span: SourceSpan) -> RunTimeRange:
    """``range(trips)`` of a while loop: ``cond`` its condition's truth and ``updates``
    the carried values after one iteration, both of the body's carried ``params``."""
    if not isinstance(cond, Node):
        raise UserError("this while loop's condition is the same at every iteration: it "
                        "would never end", span, HINT)
    index = {id(p): j for j, p in enumerate(params)}
    needed: list[int] = []
    frontier = [cond]
    while frontier:
        for node in toposort([frontier.pop()]):
            j = index.get(id(node))
            if j is not None and j not in needed:
                needed.append(j)
                frontier.append(updates[j])
    state = {id(params[j]) for j in needed}
    for node in toposort([cond, *(updates[j] for j in needed)]):
        if not _host(node, state):
            raise UserError(f"this while loop's condition depends on {run_time_origin(node)}, "
                            "which the loop computes from array data: its trip count must be "
                            "known before the kernels run", span, HINT)
    for j in needed:
        for node in toposort([inits[j]]):
            if not _host(node, set()):
                raise UserError(f"this while loop's condition starts from "
                                f"{run_time_origin(node)}: its trip count must be known "
                                "before the kernels run", span, HINT)
    host_while = HostWhile(tuple(params[j] for j in needed), tuple(inits[j] for j in needed),
                           tuple(updates[j] for j in needed), cond)
    return RunTimeRange.counting(host_while, to_node(0, span), to_node(1, span))


def _host(node: Node, state: set[int]) -> bool:
    """Whether the wrapper can compute 0-d ``node``: constants, int and float arguments,
    dimensions, the ``state`` numbers, and arithmetic of them."""
    if node.shape:
        return False
    if node.op is Op.PARAM:
        return id(node) in state or (node.type.weak and not str(node.attrs[1]).startswith("_loop"))
    return node.op is Op.CONST or node.op in ELEMENTWISE
