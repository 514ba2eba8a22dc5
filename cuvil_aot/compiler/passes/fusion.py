"""Fusion: partition a function's graph into kernels (groups).

Before::

    t0 = matmul(x, w)                      # f32[B,64]
    t1 = add(t0, broadcast(b))
    t2 = maximum(broadcast(0), t1)         # output

After: one GEMM group whose epilogue computes ``maximum(0, acc + b)`` and
stores t2; no buffer exists for t0 or t1.

The rules, in order:

1. Materialized (buffers): outputs, concatenations, index ramps (np.arange: a
   1-D kernel of its own, read by its users through views), matmul operands that are
   computed values (not int8 weights times their scales, ``ir/quantized.py``: the GEMM
   reads those as they are), sources of reshapes that regroup elements, computed tables
   of gathers (``np.eye(C)[labels]``: read at positions the data decides; the
   gather itself and its index arrays run inline in its consumer), the value a
   precision policy rounds for a matmul where something else reads it too (as under
   fp32; its rounding runs in its kernel), the root of every GEMM group, and
   reductions that cannot run inside their consumer.
2. A matmul absorbs its single-user elementwise consumers of the same shape
   into its epilogue; ``x @ a + y @ b`` becomes one GEMM of two terms.
3. Every other buffer is the root of a loop nest. Its loop space is its own
   shape, or, when it consumes a reduction broadcast back along the reduced
   axes (softmax, layernorm), the reduction's input shape with those axes
   reduced per row: the reductions run as stages of the same kernel.
4. A root merges with a buffer it reads at the same index in the same loop
   space (``h2 = o * tanh(c2)`` with ``c2`` also returned: one loop).

Every other node is recomputed inline where it is used. Each refused fusion
is logged on the ``cuvil_aot.fusion`` logger with its reason.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field

from cuvil_aot.compiler.ir import quantized
from cuvil_aot.compiler.ir.group import Dest, Group, Kind, LoopSpace
from cuvil_aot.compiler.ir.indexing import (
    IndexMap,
    gather_map,
    identity,
    through,
    unit_free,
    var_map,
)
from cuvil_aot.compiler.ir.node import Function, Node, toposort, users
from cuvil_aot.compiler.ir.ops import ELEMENTWISE, MOVEMENT, REDUCE, SCANS, WRITES, Op
from cuvil_aot.compiler.ir.types import Dim, shape_str
from cuvil_aot.compiler.passes import inplace, loop_bodies, precision

log = logging.getLogger("cuvil_aot.fusion")


@dataclass
class Plan:
    fn: Function
    nodes: list[Node]
    uses: dict[int, list[Node]]
    buffers: dict[int, Node] = field(default_factory=dict)
    # per GEMM: (roots, matmul terms, nodes whose value is the accumulator)
    gemms: list[tuple[tuple[Node, ...], tuple[Node, ...], tuple[Node, ...]]] = field(
        default_factory=list)
    gemm_of: dict[int, int] = field(default_factory=dict)  # root id -> index in gemms
    refused: list[str] = field(default_factory=list)

    def add_buffer(self, node: Node, why: str) -> bool:
        if id(node) in self.buffers or node.op in (Op.PARAM, Op.CONST):
            return False
        self.buffers[id(node)] = node
        log.debug("materialize %s: %s", describe(node), why)
        return True

    def refuse(self, message: str) -> None:
        self.refused.append(message)
        log.info("fusion refused: %s", message)


def describe(node: Node) -> str:
    where = f" at line {node.span.line}" if node.span else ""
    return f"{node.op.name.lower()} {node.type}{where}"


def run(fn: Function) -> Function:
    fn = loop_bodies.run(fn, run)  # each run-time loop's body, fused on its own
    fn, copies = inplace.prepare(fn)  # assignments: written in place (inplace.py)
    fn = _distinct_outputs(fn)
    plan = Plan(fn, toposort(fn.outputs), {})
    plan.uses = users(plan.nodes)
    for out in fn.outputs:
        plan.add_buffer(out, "function output")
    for copy in copies:
        plan.add_buffer(copy, "an argument's value before an assignment into it")
    _required_buffers(plan)
    _gemm_groups(plan)
    walks = _settle_loop_spaces(plan)
    groups = _merge(plan, walks)
    after = inplace.order_after(plan, groups)
    ordered, needs = _order(groups, after)
    return fn.replace(groups=tuple(ordered), after=tuple(needs), refused=tuple(plan.refused))


def _distinct_outputs(fn: Function) -> Function:
    """A value returned twice (``return y, y``, or two returns CSE made one) is two arrays,
    as in NumPy: each later return of it is a copy, with its own buffer."""
    seen: set[int] = set()
    outputs = []
    for out in fn.outputs:
        if id(out) in seen:
            out = Node(Op.CAST, out.type, (out,), span=out.span)
        seen.add(id(out))
        outputs.append(out)
    return fn.replace(outputs=tuple(outputs))


def strip_views(node: Node) -> tuple[Node, bool]:
    """The node under a chain of movement ops, and whether a regrouping reshape was crossed."""
    regroups = False
    while node.op in MOVEMENT:
        if node.op is Op.RESHAPE and through(node, identity(len(node.shape)), len(node.shape)) \
                is None:
            regroups = True
        node = node.srcs[0]
    return node, regroups


def _required_buffers(plan: Plan) -> None:
    for node in plan.nodes:
        if node.op is Op.CONCAT:
            plan.add_buffer(node, "concatenation")
        elif node.op in WRITES and not inplace.is_link(plan, node):
            plan.add_buffer(node, "assignment (its kernels write in place)")
        elif node.op is Op.LOOP_OUT:  # a run-time loop's result; what it reads: buffers
            plan.add_buffer(node, "a run-time loop's carried value")
            for src in node.srcs:
                if src.op is not Op.PARAM:
                    plan.add_buffer(src, "read by a run-time loop")
        elif node.op in SCANS:  # its kernel owns whole rows; its users read its buffer
            plan.add_buffer(node, "scan or sort (a kernel of whole rows)")
        elif node.op is Op.GATHER and not gathers_in_place(node.srcs[0]):
            plan.add_buffer(node.srcs[0], "gathered table (read at data-dependent positions)")
        elif node.op is Op.MATMUL:
            for side, operand in enumerate(node.srcs):
                if quantized.match(node, side) is not None:
                    continue  # int8 weights: the GEMM reads them and their scales
                base, regroups = strip_views(operand)
                if regroups and _views_a_buffer(operand):
                    continue  # the regrouped source is a buffer (the rule below): a view
                if base.op is not Op.PARAM or regroups:  # a constant is stored as viewed
                    plan.add_buffer(operand if regroups or base.op is Op.CONST else base,
                                    "matmul operand")
                source = precision.rounded_source(base)
                if source is not None and len(plan.uses[id(source)]) > 1:
                    plan.add_buffer(source, "read unrounded too, besides a matmul's rounding")
        elif node.op is Op.RESHAPE and through(node, identity(len(node.shape)),
                                               len(node.shape)) is None:
            src = node.srcs[0]
            if quantized.regroups_unstored(node, plan.uses):
                continue  # a per-group int8 weight: the GEMM reads q and its scales
            if src.op is not Op.PARAM:
                plan.add_buffer(src, "source of a reshape that regroups elements")


def _views_a_buffer(operand: Node) -> bool:
    """Whether a matmul operand is strided views (permutes, slices, splits) of a regrouping
    reshape of a computed value or a parameter: the value is a contiguous buffer (the
    reshape rule), the parameter is made C-contiguous by the call (a copy only where the
    caller's array is not), so the GEMM reads it in place (``(q @ k).reshape(B * H, T, T)``
    costs no copy)."""
    node = operand
    while node.op in MOVEMENT:
        if node.op is Op.RESHAPE and through(node, identity(len(node.shape)),
                                              len(node.shape)) is None:
            return node.srcs[0].op is not Op.CONST
        node = node.srcs[0]
    return False


def gathers_in_place(table: Node) -> bool:
    """A gather reads a parameter as it is, or flattened (np.take(a, ids), read as a
    C-contiguous array); any other table is a buffer."""
    return table.op is Op.PARAM or (table.op is Op.RESHAPE and table.srcs[0].op is Op.PARAM)


def _gemm_groups(plan: Plan) -> None:
    """Each matmul absorbs the elementwise nodes of its shape fed only from it and its terms."""
    absorbed: set[int] = set()
    for pos, node in enumerate(plan.nodes):
        if node.op is not Op.MATMUL or id(node) in absorbed:
            continue
        region, terms, accumulators = [node], [node], [node]
        inside = {id(node)}
        downstream = {id(node)}
        for later in plan.nodes[pos + 1:]:
            fed = [s for s in later.srcs if id(s) in downstream]
            if not fed:
                continue
            downstream.add(id(later))
            if later.op not in ELEMENTWISE or later.shape != node.shape \
                    or id(later) in absorbed or any(id(s) not in inside for s in fed):
                continue
            other = [s for s in later.srcs if id(s) not in inside]
            if later.op is Op.ADD and accumulators[-1] in later.srcs and len(other) == 1 \
                    and _is_term(plan, other[0], node, absorbed):
                terms.append(other[0])  # acc + (y @ b): one more product in the same GEMM
                accumulators.append(later)
                inside.add(id(other[0]))
                absorbed.add(id(other[0]))
            region.append(later)
            inside.add(id(later))
        absorbed.update(inside)
        roots = tuple(n for n in region if n not in terms[1:] and (
            id(n) in plan.buffers or any(id(u) not in inside for u in plan.uses.get(id(n), []))))
        for r in roots:
            plan.add_buffer(r, "GEMM epilogue output")
            plan.gemm_of[id(r)] = len(plan.gemms)
        plan.gemms.append((roots, tuple(terms), tuple(accumulators)))


def _is_term(plan: Plan, other: Node, first: Node, absorbed: set[int]) -> bool:
    if quantized.reads_int8(first) or quantized.reads_int8(other):  # the int8 GEMM takes one term
        return False
    return (other.op is Op.MATMUL and id(other) not in absorbed and other.shape == first.shape
            and other.dtype == first.dtype and other.srcs[0].dtype == first.srcs[0].dtype
            and len(plan.uses.get(id(other), [])) == 1)  # one GEMM reads one operand type


@dataclass
class Walk:
    """What a root's inline region touches, in a given loop space."""

    space: LoopSpace
    stages: list[Node] = field(default_factory=list)
    loads: list[tuple[Node, IndexMap]] = field(default_factory=list)


def _settle_loop_spaces(plan: Plan) -> dict[int, Walk]:
    """Pick each root's loop space; reductions that do not fit become buffers. Fixpoint."""
    while True:
        walks: dict[int, Walk] = {}
        changed = False
        for root in [n for n in plan.nodes if id(n) in plan.buffers]:
            if id(root) in plan.gemm_of:
                roots, _, accumulators = plan.gemms[plan.gemm_of[id(root)]]
                walk = Walk(LoopSpace(root.shape))
                changed |= _walk(plan, root, walk, gemm=accumulators, inline=roots)
            elif root.op is Op.LOOP_OUT:  # its loop's body has groups of its own
                walk = Walk(LoopSpace(root.shape))
            elif root.op in (Op.CONCAT, Op.SETITEM, Op.SCATTER):
                walk = Walk(LoopSpace(root.shape))
                changed |= _settle_parts(plan, root.srcs if root.op is Op.CONCAT
                                         else inplace.parts(plan, root))
            else:
                walk = Walk(_loop_space(plan, root))
                changed |= _walk(plan, root, walk)
            walks[id(root)] = walk
        if not changed:
            return walks


def _settle_parts(plan: Plan, parts: tuple[Node, ...]) -> bool:
    """Each part of a concatenation is computed in a loop over its own shape, straight
    into its slice of the result: one that cannot be (a matmul, a reduction) gets a
    buffer of its own, copied in; what a part reads that cannot run inline does too."""
    changed = False
    for part in parts:
        if part.op not in ELEMENTWISE and part.op not in MOVEMENT and part.op is not Op.GATHER:
            changed |= plan.add_buffer(part, "a part of a concatenation computed apart")
        elif id(part) not in plan.buffers:
            changed |= _walk(plan, part, Walk(LoopSpace(part.shape)))
    return changed


def _loop_space(plan: Plan, root: Node) -> LoopSpace:
    if root.op in REDUCE:
        return LoopSpace(root.srcs[0].shape, root.attrs[0])
    if root.op in SCANS:  # rows along its axis, its source computed inline
        return LoopSpace(root.shape, (root.attrs[0],))
    source = precision.rounded_source(root)
    if source is not None and id(source) in plan.buffers and source.shape == root.shape:
        return _loop_space(plan, source)  # rounded in the kernel that computes it
    for red in _reductions_reached(plan, root):
        space = LoopSpace(red.srcs[0].shape, red.attrs[0])
        if space.natural_map(root) is not None and _reaches_per_row(plan, root, red, space):
            return space
    return LoopSpace(root.shape)


def _reductions_reached(plan: Plan, root: Node) -> list[Node]:
    """Reductions in root's inline region, nearest first."""
    found: list[Node] = []
    seen: set[int] = set()
    queue = deque(root.srcs if root.op not in REDUCE else ())
    while queue:
        node = queue.popleft()
        if id(node) in seen or id(node) in plan.buffers:
            continue
        seen.add(id(node))
        if node.op in REDUCE:
            found.append(node)
            continue
        queue.extend(node.srcs)
    return found


def _reaches_per_row(plan: Plan, root: Node, red: Node, space: LoopSpace) -> bool:
    probe = Walk(space)
    _walk(plan, root, probe, dry=True)
    return any(s is red for s in probe.stages)


def _walk(plan: Plan, root: Node, walk: Walk, gemm: tuple[Node, ...] = (),
          inline: tuple[Node, ...] = (), dry: bool = False) -> bool:
    """Visit root's inline region in walk.space; returns whether a buffer was added."""
    space = walk.space
    nloops = len(space.shape)
    natural = space.natural_map(root)
    if natural is None:
        natural = identity(nloops)
    per_row = var_map(nloops, space.kept_axes)
    changed = False
    seen: set[tuple[int, IndexMap]] = set()
    stack: list[tuple[Node, IndexMap, bool]] = [(root, natural, True)]
    while stack:
        node, m, is_root = stack.pop()
        if (id(node), m) in seen:
            continue
        seen.add((id(node), m))
        own = is_root or any(node is r for r in inline)
        if not own and id(node) in plan.buffers or node.op is Op.PARAM:
            walk.loads.append((node, m))
        elif node.op in (Op.CONST, Op.IOTA) or any(node is t for t in gemm):
            continue  # an index ramp is its loop variables' value (KernelEmitter.ramp)
        elif node.op is Op.GATHER:  # the table is loaded; the index arrays run inline
            table, axis, n = node.srcs[0], node.attrs[0], len(node.srcs[1].shape)
            walk.loads.append((table, gather_map(node, m, nloops)))
            stack.extend((s, m[axis:axis + n], False) for s in node.srcs[1:])
        elif node.op in REDUCE:
            fits = (space.reduce_axes and node.attrs[0] == space.reduce_axes
                    and node.srcs[0].shape == space.shape
                    and unit_free(m, space.shape) == unit_free(per_row, space.shape)
                    and root.op not in SCANS)  # a scan kernel runs no reduction stages
            if fits:
                if not any(s is node for s in walk.stages):
                    walk.stages.append(node)
                stack.append((node.srcs[0], identity(nloops), False))
            elif not dry:
                plan.refuse(f"{describe(node)} cannot run inside the kernel of {describe(root)}: "
                            f"loop space {shape_str(space.shape)} reduced over "
                            f"{space.reduce_axes or 'nothing'}")
                changed |= plan.add_buffer(node, "reduction outside its consumer's rows")
        elif node.op in MOVEMENT:
            sub = through(node, m, nloops)
            if sub is None:  # regrouping reshape of a buffer or parameter: a load
                walk.loads.append((node, m))
            else:
                stack.append((node.srcs[0], sub, False))
        elif node.op in ELEMENTWISE or own:
            stack.extend((s, m, False) for s in node.srcs)
        elif not dry:
            changed |= plan.add_buffer(node, "computed by its own kernel")
    walk.stages.sort(key=lambda n: plan.nodes.index(n))
    return changed


def _merge(plan: Plan, walks: dict[int, Walk]) -> list[Group]:
    """One group per root, then fold a root into the group of a root that reads it in place."""
    roots = [n for n in plan.nodes if id(n) in plan.buffers]
    owner = {id(r): i for i, r in enumerate(roots)}
    parent = list(range(len(roots)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, root in enumerate(roots):
        walk = walks[id(root)]
        if id(root) in plan.gemm_of:
            for other_root in plan.gemms[plan.gemm_of[id(root)]][0]:
                parent[find(owner[id(other_root)])] = find(i)
            continue
        if root.op is Op.LOOP_OUT:  # one group per loop, of all its results
            first = next(r for r in roots if r.op is Op.LOOP_OUT and r.attrs[0] is root.attrs[0])
            parent[find(i)] = find(owner[id(first)])
            continue
        if root.op in (Op.CONCAT, Op.SETITEM, Op.SCATTER) or root.op in SCANS:
            continue
        for leaf, m in walk.loads:
            j = owner.get(id(leaf))
            if j is None or id(leaf) in plan.gemm_of or leaf.op in (Op.CONCAT, Op.IOTA) \
                    or leaf.op in SCANS or leaf.op in WRITES or leaf.op is Op.LOOP_OUT:
                continue
            other = walks[id(leaf)]
            if other.space == walk.space and walk.space.natural_map(leaf) == m \
                    and not _depends_elsewhere(plan, walk, leaf):
                parent[find(j)] = find(i)
    members: dict[int, list[Node]] = {}
    for i, root in enumerate(roots):
        members.setdefault(find(i), []).append(root)
    groups = []
    for rs in members.values():
        groups.extend(_make_groups(plan, rs, walks))
    return groups


def _depends_elsewhere(plan: Plan, walk: Walk, leaf: Node) -> bool:
    """Would reading ``leaf`` in place create a cycle through another buffer?"""
    for other, _ in walk.loads:
        if other is not leaf and other.op is not Op.PARAM and _reaches(other, leaf):
            return True
    return False


def _reaches(start: Node, target: Node) -> bool:
    stack, seen = [start], set()
    while stack:
        node = stack.pop()
        if node is target:
            return True
        if id(node) not in seen:
            seen.add(id(node))
            stack.extend(node.srcs)
    return False


def _make_groups(plan: Plan, roots: list[Node], walks: dict[int, Walk]) -> list[Group]:
    first = roots[0]
    if id(first) in plan.gemm_of:
        gemm_roots, terms, accumulators = plan.gemms[plan.gemm_of[id(first)]]
        return [Group(Kind.GEMM, walks[id(first)].space, gemm_roots,
                      tuple(Dest(r) for r in gemm_roots), terms=terms,
                      accumulators=accumulators)]
    if first.op is Op.LOOP_OUT:
        return [Group(Kind.LOOP, LoopSpace(()), tuple(roots), tuple(Dest(r) for r in roots),
                      loop=first.attrs[0])]
    if first.op is Op.CONCAT:
        return _concat_groups(plan, first)
    if first.op in WRITES:
        return inplace.groups(plan, first)
    space = walks[id(first)].space
    stages: list[Node] = []
    for r in roots:
        for s in walks[id(r)].stages + ([r] if r.op in REDUCE else []):
            if not any(s is t for t in stages):
                stages.append(s)
    stages.sort(key=lambda n: plan.nodes.index(n))
    kind = Kind.ROW if space.reduce_axes else Kind.ELEMENTWISE
    if first.op in SCANS:
        kind = Kind.SCAN
    return [Group(kind, space, tuple(roots), tuple(Dest(r) for r in roots), tuple(stages))]


def _concat_groups(plan: Plan, node: Node) -> list[Group]:
    axis = node.attrs[0]
    offset = Dim.of(0)
    groups = []
    for part in node.srcs:
        if id(part) in plan.buffers:  # computed by its own kernel: copied in
            part = Node(Op.CAST, part.type, (part,), span=part.span)
        groups.append(Group(Kind.ELEMENTWISE, LoopSpace(part.shape), (part,),
                            (Dest(node, axis, offset),)))
        offset = offset + part.shape[axis]
    return groups


def _order(groups: list[Group], after: dict[int, set[int]]
           ) -> tuple[list[Group], list[frozenset[int]]]:
    """Groups sorted so that every buffer is written before it is read (and each after the
    groups ``after`` names), and for each the sorted groups it must follow."""
    writer: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        for d in g.dests:
            writer.setdefault(id(d.buffer), []).append(i)
    deps: list[set[int]] = []
    for i, g in enumerate(groups):
        needed: set[int] = set(after.get(i, ()))
        for node in toposort(g.roots + g.terms + inplace.index_arrays(g)):
            for j in writer.get(id(node), []):
                if j != i and not any(node is r for r in g.roots):
                    needed.add(j)
        deps.append(needed)
    done: list[int] = []
    placed: set[int] = set()
    while len(done) < len(groups):
        ready = [i for i in range(len(groups)) if i not in placed and deps[i] <= placed]
        if not ready:
            raise RuntimeError("fusion produced a cycle between groups")
        done.append(ready[0])
        placed.add(ready[0])
    position = {i: p for p, i in enumerate(done)}
    return [groups[i] for i in done], [frozenset(position[j] for j in deps[i]) for i in done]
