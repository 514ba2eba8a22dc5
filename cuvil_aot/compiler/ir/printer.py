"""Text form of the IR: one SSA line per node, then the fusion groups.

The text depends on nothing but the graph: nodes are numbered ``%0, %1, ...``
in topological order (parameters go by their names), never by object ids, so
the same function prints the same text in every run (tests/data/passes.test).
"""

from __future__ import annotations

from cuvil_aot.compiler.ir.group import Group
from cuvil_aot.compiler.ir.node import Function, Node, toposort
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import shape_str


def _attr(value: object) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_attr(v) for v in value) + ")"
    return str(value)


def format_function(fn: Function) -> str:
    names: dict[int, str] = {}
    lines = [f"func {fn.name}(" + ", ".join(f"{p.shown}: {p.type}" for p in fn.params) + ")"]
    lines += [f"  # requires {expr} >= 0" for expr, _ in fn.requirements]
    lines += [f"  # {name} = ceil(({length}) / {step})" for name, length, step in fn.derived]
    lines += [f"  # assumes {a.left} == {a.right}" for a in fn.assumptions]
    lines += [f"  # {r}" for r in fn.run_time]
    count = 0
    for node in toposort(fn.outputs):
        if node.op is Op.PARAM:
            names[id(node)] = "%" + node.attrs[1]
            continue
        names[id(node)] = f"%{count}"
        count += 1
        args = [names[id(s)] for s in node.srcs] + [_attr(a) for a in node.attrs]
        where = f"  # line {node.span.line}" if node.span else ""
        lines.append(f"  {names[id(node)]} = {node.op.name.lower()}({', '.join(args)}) "
                      f": {node.type}{where}")
    lines.append("  return " + ", ".join(names[id(o)] for o in fn.outputs))
    for i, group in enumerate(fn.groups):
        lines.append(format_group(i, group, names))
        if group.loop is not None:  # a run-time loop (ir/loop.py): its body, indented
            lines += ["    " + line for line in format_function(group.loop.fn).splitlines()]
    for reason in fn.refused:
        lines.append(f"  # refused: {reason}")
    return "\n".join(lines)


def format_group(index: int, group: Group, names: dict[int, str]) -> str:
    def name(n: Node) -> str:
        return names.get(id(n), "?")

    parts = [f"  kernel {index}: {group.kind.value} over {shape_str(group.space.shape)}"]
    if group.space.reduce_axes:
        parts.append(f"reducing axes {group.space.reduce_axes}")
    if group.stages:
        parts.append("stages [" + ", ".join(name(s) for s in group.stages) + "]")
    if group.terms:
        parts.append("terms [" + ", ".join(name(t) for t in group.terms) + "]")
    stores = []
    for root, dest in zip(group.roots, group.dests):
        target = "" if dest.buffer is root else f" -> {name(dest.buffer)}[axis {dest.axis} " \
                                                 f"+{dest.offset}]"
        if dest.region is not None:  # an assignment's region: starts, steps
            target = f" -> {name(dest.buffer)}[{_attr(dest.region[0])} by {_attr(dest.region[1])}]"
        if dest.scatter is not None:  # positions from index arrays: the scatter's srcs
            target = f" -> {name(dest.buffer)}[at {name(dest.scatter)}]"
        stores.append(name(root) + target)
    parts.append("stores " + ", ".join(stores))
    return ", ".join(parts)
