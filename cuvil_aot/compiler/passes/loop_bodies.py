"""Loop bodies: each run-time loop's body (ir/loop.py) through the passes on its own,
first thing in fusion (fusion.run passes itself in: no import cycle).

A body is a Function, so canonicalize, CSE and fusion run on it as on any; the
function's own fusion then makes the loop one group (Kind.LOOP) whose kernels are the
body's (codegen/run_time_loops.py runs them n times).

Before::

    %0 = loop_out(%h0, %xs, %w, (loop0, 0))     # loop0: body not fused

After::

    %0 = loop_out(%h0, %xs, %w, (loop0, 0))     # loop0.fn.groups: the body's kernels
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from cuvil_aot.compiler.ir.loop import LoopBody, body_of
from cuvil_aot.compiler.ir.node import Function, Node, rewrite
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.passes import canonicalize, cse


def run(fn: Function, fuse_fn: Callable[[Function], Function]) -> Function:
    done: dict[int, LoopBody] = {}

    def fuse(node: Node) -> Node:
        if node.op is not Op.LOOP_OUT:
            return node
        body = body_of(node)
        if id(body) not in done:
            inner = fuse_fn(cse.run(canonicalize.run(body.fn)))
            done[id(body)] = dataclasses.replace(body, fn=inner)
        return node.replace(attrs=(done[id(body)], *node.attrs[1:]))

    return fn.replace(outputs=rewrite(fn.outputs, fuse))
