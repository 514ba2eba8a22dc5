"""Assignments (Op.SETITEM, Op.SCATTER) written in place: the part of fusion that stores
them.

A chain of assignments ``s1 = setitem(old, v1); s2 = setitem(s1, v2)`` whose inner links
have no other user is one buffer, the top's: a kernel computes ``old`` into it (none where
it is a written argument's own array, which holds it already), then one kernel per link
computes its value straight into its region, in program order. A link read elsewhere is a
buffer of its own (copied into the next one's).

Before (``pe = np.zeros((T, D)); pe[:, 0::2] = s; pe[:, 1::2] = c``)::

    %2 = setitem(broadcast(0), %s, (0, 0), (1, 2))
    %3 = setitem(%2, %c, (0, 1), (1, 2))

After: three kernels storing to %3: ``0`` over (T, D), ``%s`` over (T, ceil(D/2)) into
``%3[i0, 2*i1]``, ``%c`` into ``%3[i0, 2*i1 + 1]``. A scatter's kernel loops over its
value's shape and stores at the positions its index arrays name (``Dest.scatter``,
codegen/scatter_store.py); the index arrays are parts computed inline, like the value.

A written argument (Function.inplace) is stored in the caller's array (codegen/
inplace_args.py): every kernel that reads the argument's old value must run before the
first write (``order_after``), so ``prepare`` gives such a read a copy of its own, made
first, and drops the copies ``x.copy()`` made in the frontend where nothing writes them.
"""

from __future__ import annotations

from typing import Any

from cuvil_aot.compiler.ir.group import Dest, Group, Kind, LoopSpace
from cuvil_aot.compiler.ir.node import Function, Node, toposort
from cuvil_aot.compiler.ir.ops import WRITES, Op
from cuvil_aot.compiler.ir.types import TensorType


def prepare(fn: Function) -> tuple[Function, list[Node]]:
    """``fn`` without same-type copies inside, each written argument's old value read
    through a copy (the copies to store first, as buffers)."""
    outputs = tuple(_strip(fn.outputs))
    snaps: list[Node] = []
    for k, p in fn.inplace:
        param = fn.param_nodes[p]
        link = outputs[k]
        while link.op in WRITES and link.srcs[0] is not param \
                and link.srcs[0].op in WRITES:
            link = link.srcs[0]
        keep = (link, 0) if link.op in WRITES and link.srcs[0] is param else None
        if link.op is Op.LOOP_OUT and link.srcs[link.attrs[1]] is param:
            keep = (link, link.attrs[1])  # a run-time loop writes it: its initial value
        outputs, copies = _snapshot(outputs, param, keep)
        snaps.extend(copies)
    return fn.replace(outputs=outputs), snaps


def _is_copy(node: Node) -> bool:
    return node.op is Op.CAST and node.srcs[0].type == node.type


def _strip(outputs: tuple[Node, ...]) -> list[Node]:
    new: dict[int, Node] = {}
    for node in toposort(outputs):
        srcs = tuple(new[id(s)] for s in node.srcs)
        rebuilt = node if all(a is b for a, b in zip(srcs, node.srcs)) else node.replace(srcs=srcs)
        new[id(node)] = rebuilt.srcs[0] if _is_copy(rebuilt) else rebuilt
    out = []
    for o in outputs:  # an output keeps its copy: it is an array of its own
        if _is_copy(o):
            src = new[id(o.srcs[0])]
            out.append(o if src is o.srcs[0] else o.replace(srcs=(src,)))
        else:
            out.append(new[id(o)])
    return out


def _snapshot(outputs: tuple[Node, ...], param: Node,
              keep: tuple[Node, int] | None) -> tuple[tuple[Node, ...], list[Node]]:
    """Every read of ``param`` but the first writer's (``keep``: it and the position of
    its source that is the old value) through a copy: of the whole
    array, or, where a gather reads as many positions as a scatter writes (``x[ids] =
    f(x[ids])``), of what the gather reads (not the whole array: repetition penalties)."""
    snap = Node(Op.CAST, TensorType(param.dtype, param.shape), (param,), span=param.span)
    new: dict[int, Node] = {}
    copies: list[Node] = []
    used = False
    for node in toposort(outputs):
        if _gathers_as_written(node, param, keep[0] if keep else None):
            new[id(node)] = Node(Op.CAST, node.type, (node,), span=node.span)
            copies.append(new[id(node)])
            continue
        srcs = []
        for pos, s in enumerate(node.srcs):
            if s is param and not (keep is not None and _same_writer(node, keep[0])
                                   and pos == keep[1]):
                srcs.append(snap)
                used = True
            else:
                srcs.append(new[id(s)])
        same = all(a is b for a, b in zip(srcs, node.srcs))
        new[id(node)] = node if same else node.replace(srcs=tuple(srcs))
    return tuple(new[id(o)] for o in outputs), ([snap] if used else []) + copies


def _same_writer(node: Node, writer: Node) -> bool:
    """``node`` is ``writer``, or another result of the same run-time loop (each has the
    loop's sources)."""
    return node is writer or (node.op is Op.LOOP_OUT and writer.op is Op.LOOP_OUT
                              and node.attrs[0] is writer.attrs[0])


def _gathers_as_written(node: Node, param: Node, keep: Node | None) -> bool:
    """A gather from ``param`` of the shape of the scatter's value, with index arrays that
    do not read ``param``: its copy is no larger than the writes."""
    return (keep is not None and keep.op is Op.SCATTER and node.op is Op.GATHER
            and node.srcs[0] is param and node.shape == keep.srcs[1].shape
            and not any(n is param for n in toposort(node.srcs[1:])))


def is_link(plan: Any, node: Node) -> bool:
    """An assignment whose only user is the next assignment to the same array: written
    in that one's buffer."""
    uses = plan.uses.get(id(node), [])
    return (node.op in WRITES and len(uses) == 1 and uses[0].op in WRITES
            and uses[0].srcs[0] is node and not any(s is node for s in uses[0].srcs[1:])
            and not any(node is o for o in plan.fn.outputs))


def _chain(plan: Any, top: Node) -> tuple[list[Node], Node]:
    """The assignments stored in ``top``'s buffer, first first, and the value under them."""
    links = [top]
    while is_link(plan, links[-1].srcs[0]):
        links.append(links[-1].srcs[0])
    return links[::-1], links[-1].srcs[0]


def _argument(plan: Any, top: Node) -> Node | None:
    """The parameter whose array ``top`` is stored in, if any."""
    fn = plan.fn
    for k, p in fn.inplace:
        if fn.outputs[k] is top:
            return fn.param_nodes[p]  # type: ignore[no-any-return]
    return None


def parts(plan: Any, top: Node) -> tuple[Node, ...]:
    """What the kernels of ``top``'s buffer compute: the old value (unless the buffer is
    the argument that holds it), each assigned value and each scatter's index arrays."""
    links, base = _chain(plan, top)
    fill = () if base is _argument(plan, top) else (base,)
    return fill + tuple(p for s in links for p in s.srcs[1:])


def groups(plan: Any, top: Node) -> list[Group]:
    """The kernels storing ``top``, in program order."""
    links, base = _chain(plan, top)
    out = []
    if base is not _argument(plan, top):
        out.append(Group(Kind.ELEMENTWISE, LoopSpace(base.shape), (_root(plan, base),),
                         (Dest(top),)))
    for s in links:
        value = s.srcs[1]
        dest = Dest(top, scatter=s) if s.op is Op.SCATTER else Dest(top, region=s.attrs)
        out.append(Group(Kind.ELEMENTWISE, LoopSpace(value.shape), (_root(plan, value),),
                         (dest,)))
    return out


def _root(plan: Any, part: Node) -> Node:
    """A part computed inline, or a copy of one that is stored or read as it is."""
    if id(part) in plan.buffers or part.op in (Op.PARAM, Op.CONST, Op.IOTA):
        return Node(Op.CAST, TensorType(part.dtype, part.shape), (part,), span=part.span)
    return part


def order_after(plan: Any, groups: list[Group]) -> dict[int, set[int]]:
    """For each group, the groups it must follow besides the buffers it reads: the earlier
    kernels of the same assignment buffer, and (for an argument's array) every kernel
    that reads the argument's old value."""
    deps: dict[int, set[int]] = {}
    writers: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        for d in g.dests:
            if d.buffer.op in WRITES or d.buffer.op is Op.LOOP_OUT:
                deps.setdefault(i, set()).update(writers.get(id(d.buffer), []))
                writers.setdefault(id(d.buffer), []).append(i)
    fn = plan.fn
    for k, p in fn.inplace:
        mine = writers.get(id(fn.outputs[k]), [])
        readers = [i for i, g in enumerate(groups)
                   if i not in mine and _reads(plan, g, fn.param_nodes[p])]
        for i in mine:
            deps.setdefault(i, set()).update(readers)
    return deps


def _reads(plan: Any, group: Group, param: Node) -> bool:
    """Whether the kernel loads ``param`` itself (not through a buffer)."""
    stack = list(group.roots) + list(group.terms) + list(index_arrays(group))
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if node is param:
            return True
        if id(node) in seen:
            continue
        seen.add(id(node))
        if id(node) in plan.buffers and not any(node is r for r in group.roots):
            continue
        stack.extend(node.srcs)
    return False


def index_arrays(group: Group) -> tuple[Node, ...]:
    """The index arrays a scatter's kernel computes besides its roots (it reads what they
    read: ordering and fusion count them as its inputs)."""
    return tuple(i for d in group.dests if d.scatter is not None for i in d.scatter.srcs[2:])
