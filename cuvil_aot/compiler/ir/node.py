"""The one IR node type and the function that holds a graph of them.

Nodes are immutable. They compare by identity (``eq=False``): a structural
``__eq__``/``__hash__`` would re-walk shared subgraphs on every dict lookup;
CSE hash-conses explicitly instead (passes/cse.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import TensorType
from cuvil_aot.errors import SourceSpan


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    op: Op
    type: TensorType
    srcs: tuple[Node, ...] = ()
    attrs: tuple[Any, ...] = ()
    span: SourceSpan | None = field(default=None, repr=False)

    @property
    def shape(self) -> tuple[Any, ...]:
        return self.type.shape

    @property
    def dtype(self) -> str:
        return self.type.dtype

    def replace(self, **changes: Any) -> Node:
        return dataclasses.replace(self, **changes)

    def __bool__(self) -> bool:
        """A value of the compiled code has no truth at compile time: Python's ``any``,
        ``all``, ``sorted`` or ``if`` run by the compiler on one (a comparison of a dimension
        known only at the call) would see every node as true, a silent wrong answer."""
        raise TypeError("the truth value of an array or number known only at run time is "
                        "not known when the function is compiled")


@dataclass(frozen=True, slots=True)
class Param:
    """A parameter of a compiled function: an array or a Python scalar."""

    name: str  # a C identifier: generated code names the parameter's fields after it
    type: TensorType
    is_scalar: bool  # a Python float/int/bool, not an array
    label: str = ""  # how messages name it where that differs: "p['wq']", an item of a dict

    @property
    def shown(self) -> str:
        return self.label or self.name

    @property
    def symbols(self) -> frozenset[str]:
        return frozenset(s for d in self.type.shape for s in d.symbols)


@dataclass(frozen=True, slots=True)
class Function:
    """One compiled signature of a user function: parameters and output nodes.

    ``groups`` is empty until the fusion pass partitions the graph into kernels.
    """

    name: str
    params: tuple[Param, ...]
    param_nodes: tuple[Node, ...]
    outputs: tuple[Node, ...]
    # how the outputs are returned: None (the function returns None), k (output k), or a
    # tuple of these, nested as the code returns them (`codegen/results.py`)
    returns: Any
    groups: tuple[Any, ...] = ()
    # for each group, the earlier groups it must follow (it reads what they write, or
    # writes what they read or write): what a GPU call's graph of launches waits on
    after: tuple[frozenset[int], ...] = ()
    refused: tuple[str, ...] = ()  # fusions refused, with reasons
    requirements: tuple[tuple[Any, Any], ...] = ()  # construct.Requirement: checked at the call
    derived: tuple[tuple[str, Any, Any], ...] = ()  # (symbol, length, step): ceil(length/step)
    assumptions: tuple[Any, ...] = ()  # construct.Assumption: dims assumed equal, checked
    # assignment into arguments (frontend/assign.py): (output, parameter) pairs, each output
    # stored in that argument's own array; the last `hidden` outputs are not returned; and
    # (symbol, 0-d int node, size, axis): a run-time int index, wrapped and checked at the call
    inplace: tuple[tuple[int, int], ...] = ()
    hidden: int = 0
    indices: tuple[tuple[str, Any, Any, int], ...] = ()
    run_time: tuple[Any, ...] = ()  # run_time.RunTimeSlice: symbols from run-time ints
    precision: str = "fp32"  # what the matmuls read (marks.PRECISIONS; passes/precision.py)
    closed: tuple[str, ...] = ()  # dict arguments whose keys the code saw: exactly those
    # (instance argument's label, name, hideable) read from its class: a subclass must not
    # override it, the instance's __dict__ not hide it (where hideable); "": isinstance asked
    from_class: tuple[tuple[str, str, bool], ...] = ()
    exact_bools: tuple[int, ...] = ()  # bool parameters the call takes only as True or False

    def replace(self, **changes: Any) -> Function:
        fields = {f: getattr(self, f) for f in ("name", "params", "param_nodes", "outputs",
                                                "returns", "groups", "after", "refused",
                                                "requirements", "derived", "assumptions",
                                                "run_time", "inplace", "hidden", "indices",
                                                "precision", "closed", "from_class",
                                                "exact_bools")}
        fields.update(changes)
        return Function(**fields)


def toposort(roots: Iterable[Node]) -> list[Node]:
    """Every node reachable from ``roots``, sources before users (iterative DFS)."""
    order: list[Node] = []
    seen: set[int] = set()
    for root in roots:
        stack: list[tuple[Node, Iterator[Node]]] = []
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack.append((root, iter(root.srcs)))
        while stack:
            node, it = stack[-1]
            for src in it:
                if id(src) not in seen:
                    seen.add(id(src))
                    stack.append((src, iter(src.srcs)))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def users(nodes: Iterable[Node]) -> dict[int, list[Node]]:
    """For each node id, the nodes that use it (once per use)."""
    result: dict[int, list[Node]] = {}
    for node in nodes:
        for src in node.srcs:
            result.setdefault(id(src), []).append(node)
    return result


def rewrite(roots: tuple[Node, ...], fn: Any) -> tuple[Node, ...]:
    """Rebuild the graph bottom-up: ``fn(node_with_new_srcs)`` returns its replacement."""
    new: dict[int, Node] = {}
    for node in toposort(roots):
        srcs = tuple(new[id(s)] for s in node.srcs)
        rebuilt = node if all(a is b for a, b in zip(srcs, node.srcs)) else node.replace(srcs=srcs)
        new[id(node)] = fn(rebuilt)
    return tuple(new[id(r)] for r in roots)
