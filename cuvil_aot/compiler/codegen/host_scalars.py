"""Numbers computed once per call by the wrapper, not once per element by the kernels.

A 0-d value computed only from dimensions, scalar parameters and constants (the
attention scale ``1.0 / D ** 0.5``, ``alpha * 2``) is the same for every element. The
match function computes it after it binds the symbols, into a field of the call struct
(``c->host_0``), and the kernels read it as they read a scalar parameter: the emitter
(kernel_emitter.py) stops at it. Only the largest such values are hoisted: those some
array operation uses, or that are returned.

Before (in a GEMM epilogue, per element)::

    const double v0 = pow((double)(a->sym_D), 0.5); ... acc_row[i1] * (float)(1.0 / v0)

After::

    c->host_0 = (float)(1.0 / pow((double)S_D, 0.5));     /* match, once per call */
    ... acc_row[i1] * (float)(a->host_0)                   /* the kernel */
"""

from __future__ import annotations

from cuvil_aot.compiler.codegen import ops_c
from cuvil_aot.compiler.codegen.kernel_emitter import scalar_dtype
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.node import Function, Node, toposort, users
from cuvil_aot.compiler.ir.ops import ELEMENTWISE, Op
from cuvil_aot.compiler.ir.types import Dim


def find(fn: Function) -> dict[int, str]:
    """The hoisted values of ``fn``: field name by node id, numbered in graph order."""
    nodes = toposort(fn.outputs)
    scalar: set[int] = set()  # computed from constants and scalar parameters only
    worth: set[int] = set()  # and with more in it than casts
    for node in nodes:
        if node.shape:
            continue
        if node.op is Op.CONST or (node.op is Op.PARAM and node.type.weak):
            scalar.add(id(node))
        elif node.op in ELEMENTWISE and all(id(s) in scalar for s in node.srcs):
            scalar.add(id(node))
            if node.op is not Op.CAST or any(id(s) in worth for s in node.srcs):
                worth.add(id(node))
    uses = users(nodes)
    outputs = {id(o) for o in fn.outputs}
    hoisted: dict[int, str] = {}
    for node in nodes:
        if id(node) in worth and (id(node) in outputs or any(
                id(u) not in scalar for u in uses.get(id(node), []))):
            hoisted[id(node)] = f"host_{len(hoisted)}"
    return hoisted


def fields(w: Writer, fn: Function, hoisted: dict[int, str]) -> None:
    """The call struct's fields of the hoisted values."""
    for node in _roots(fn, hoisted):
        w.line(f"{ops_c.CTYPE[scalar_dtype(node)]} {hoisted[id(node)]};")


def compute(w: Writer, fn: Function, hoisted: dict[int, str]) -> None:
    """Fills the hoisted fields of ``c`` (in the match function, once ``S_*`` are bound)."""
    roots = _roots(fn, hoisted)
    if not roots:
        return
    with w.block(""):
        names: dict[int, str] = {}
        for node in toposort(roots):
            names[id(node)] = _value(w, node, names)
        for node in roots:
            value = ops_c.cast(names[id(node)], node.dtype, scalar_dtype(node))
            w.line(f"c->{hoisted[id(node)]} = {value};")


def _roots(fn: Function, hoisted: dict[int, str]) -> list[Node]:
    return [n for n in toposort(fn.outputs) if id(n) in hoisted]


def _value(w: Writer, node: Node, names: dict[int, str]) -> str:
    """``node``'s value as the kernels would compute it (with the host's math), in a local."""
    if node.op is Op.CONST:
        value = node.attrs[0]
        if isinstance(value, Dim):
            return ops_c.cast(value.c_expr("S_{}"), "int64", node.dtype)
        return ops_c.literal(value, node.dtype)
    if node.op is Op.PARAM:
        return ops_c.cast(f"c->arg_{node.attrs[1]}", scalar_dtype(node), node.dtype)
    args = [names[id(s)] for s in node.srcs]
    if node.op is Op.CAST:
        value = ops_c.cast(args[0], node.srcs[0].dtype, node.dtype)
    else:
        compute = node.srcs[0 if node.op is not Op.WHERE else 1].dtype
        value = ops_c.HOST.render(node.op, compute, args)
    name = f"h{len(names)}"
    w.line(f"const {ops_c.CTYPE[node.dtype]} {name} = {value};")
    return name


def locals_of(w: Writer, roots: list[Node], known: dict[int, str] | None = None
              ) -> dict[int, str]:
    """C locals of ``roots`` and what they are computed from, by node id, as the kernels
    would compute them (in the match function, once ``S_*`` and ``c->arg_*`` are set;
    run_time_sizes.py's slice bounds); ``known``: nodes already in C variables."""
    names: dict[int, str] = dict(known or {})
    for node in toposort(roots):
        if id(node) not in names:
            names[id(node)] = _value(w, node, names)
    return names
