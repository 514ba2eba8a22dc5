"""Common subexpression elimination by hash-consing.

Before::

    %1 = exp(%0)
    %2 = exp(%0)
    %3 = add(%1, %2)

After::

    %1 = exp(%0)
    %3 = add(%1, %1)
"""

from __future__ import annotations

from typing import Any

from cuvil_aot.compiler.ir.node import Function, Node, rewrite


def run(fn: Function) -> Function:
    table: dict[tuple[Any, ...], Node] = {}

    def intern(node: Node) -> Node:
        key = (node.op, node.type, tuple(id(s) for s in node.srcs), node.attrs)
        try:
            return table.setdefault(key, node)
        except TypeError:  # unhashable attrs: keep the node as it is
            return node

    return fn.replace(outputs=rewrite(fn.outputs, intern))
