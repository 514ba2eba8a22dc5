"""Attention on the GPU: which three fusion groups of a signature one fused kernel
(cuda_attention.py) replaces. The CPU keeps the groups as they are.

The groups, as fusion leaves ``softmax(q @ k.T * c + mask) @ v``::

    g1: gemm over (Z, T, S), terms [matmul(q, kT)], stores %s (its epilogue: any)
    g2: row over (..., T, S), reducing (last,), stages [max(x), sum(e)], stores e / sum
        where x is any elementwise expression of reshape(%s) (same element) and
        broadcast operands, e = exp(x - max)
    g3: gemm over (Z, T, D), terms [%o = matmul(reshape(e / sum), v)]

Q, K and V are float32, or bfloat16/float16 as the bf16 policy leaves them (rounded below
their heads views: precision.round_operand, the GEMMs reading the narrow values:
canonicalize.py), the probabilities then rounded by g2's root ``cast(e / sum, bfloat16)``:
the fused kernel rounds them to TF32 instead (cuda_attention_tc.h), finer than the policy
asks. V's head copy may hold its matrices transposed (canonicalize._k_major_heads).

Matched only where %s is read by g2 alone, the probabilities by g3 alone (as its A
operand), neither is returned, and the call has no run-time loops; anything else stays as
three kernels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cuvil_aot.compiler.ir.group import Group, Kind
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import ELEMENTWISE, MOVEMENT, Op

# Q, K and V's elements the kernel reads (converting the narrow ones to float as it loads)
ELEMENTS = ("float32", "bfloat16", "float16")
NARROW = ("bfloat16", "float16")


@dataclass(frozen=True)
class Match:
    """Group indices: ``scores`` (g1), ``softmax`` (g2), ``out`` (g3); ``score_buffer``: g1's
    root (its epilogue's value), whose every read in g2 becomes the fused kernel's score
    after that epilogue; ``x``: the score expression g2 reduces."""

    scores: int
    softmax: int
    out: int
    score_buffer: Node = field(repr=False)
    x: Node = field(repr=False)
    # per operand (0: Q, 1: K, 2: V), the index of the ELEMENTWISE group that copies it
    # from an argument's heads view (``x.reshape(b, t, h, d).transpose(0, 2, 1, 3)``), or
    # None: the kernel reads the argument through that group's strides instead
    copies: tuple[int | None, ...] = (None, None, None)
    # the ELEMENTWISE group that merges the heads of the output (``o.transpose(0, 2, 1, 3)``
    # of its (B, H, T, D) view), where the kernel stores into that group's buffer instead
    merge: int | None = None
    # per operand, whether its copy holds the operand's matrices transposed (columns,
    # rows): the kernel then reads the argument's rows along the copy's last axis
    transposed: tuple[bool, ...] = (False, False, False)
    # the matmuls stack each K/V head's query heads as rows (passes/grouped_query.py): their
    # (Z, R, ·) matrices are the softmax's (B·H, T, ·) ones regrouped, R = n·T, and the
    # kernel runs over B·H heads of T rows, reading K and V at head z / n
    grouped: bool = False


def find(groups: list[Group], buffers: list[Node], outputs: tuple[Node, ...]) -> list[Match]:
    """Every attention among ``groups`` (one signature's), disjoint."""
    buffer_ids = {id(b) for b in buffers}
    returned = {id(o) for o in outputs}
    readers: dict[int, list[int]] = {}
    for g, group in enumerate(groups):
        for b in _reads(group, buffer_ids):
            readers.setdefault(b, []).append(g)
    found: list[Match] = []
    for g3 in range(len(groups)):
        m = _match_at(groups, g3, readers, returned)
        if m is not None:
            found.append(m)
    return found


def _reads(group: Group, buffers: set[int]) -> set[int]:
    """The buffers ``group`` reads (not its own roots)."""
    own = {id(d.buffer) for d in group.dests} | {id(r) for r in group.roots}
    seen: set[int] = set()
    out: set[int] = set()
    todo = list(group.roots + group.stages + group.terms)
    while todo:
        n = todo.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if id(n) in buffers and id(n) not in own:
            out.add(id(n))
            continue
        todo.extend(n.srcs)
    return out


def _under_views(node: Node) -> Node:
    while node.op in MOVEMENT:
        node = node.srcs[0]
    return node


def _regrouped(view: Node, base: Node) -> bool:
    """``view`` is ``base`` through reshapes that keep its last axis: the same rows in the
    same order, grouped into matrices and batches anyhow."""
    node = view
    while node is not base:
        if node.op is not Op.RESHAPE:
            return False
        node = node.srcs[0]
    return view.shape[-1] == base.shape[-1] and len(base.shape) >= 2


def _leading_merge(view: Node, base: Node) -> bool:
    """``view`` is ``base`` through reshapes that only merge or split leading (batch) axes:
    the same (rows, columns) matrix per batch, batches in the same order."""
    node = view
    while node is not base:
        if node.op is not Op.RESHAPE:
            return False
        node = node.srcs[0]
    return view.shape[-2:] == base.shape[-2:] and len(base.shape) >= 2


def _match_at(groups: list[Group], g3: int, readers: dict[int, list[int]],
              returned: set[int]) -> Match | None:
    out = groups[g3]
    if out.kind is not Kind.GEMM or len(out.terms) != 1 or out.terms[0].dtype != "float32":
        return None
    a, v = out.terms[0].srcs
    probs = _under_views(a)
    if not _regrouped(a, probs) or len(v.shape) != len(a.shape):
        return None
    grouped = not _leading_merge(a, probs)
    if grouped and len(a.shape) != 3:
        return None
    g2 = next((g for g, grp in enumerate(groups) if any(r is probs for r in grp.roots)), None)
    if g2 is None or readers.get(id(probs)) != [g3] or id(probs) in returned:
        return None
    if id(v) == id(probs) or _under_views(v) is probs:
        return None
    row = groups[g2]
    softmax = _softmax(row)
    if softmax is None or len(row.roots) != 1 or row.dests[0].buffer is not probs \
            or row.roots[0].shape != row.space.shape:
        return None
    x = softmax
    scores = _score_buffer(x, groups, g2, readers, returned)
    if scores is None:
        return None
    g1, s = scores
    first = groups[g1]
    if len(first.terms) != 1 or first.roots != (s,) or first.accumulators != first.terms \
            or first.dests[0].buffer is not s or s.dtype != "float32" \
            or first.terms[0].shape != s.shape:
        return None  # one matmul; its epilogue (a scale, a mask) is the score's first part
    if s.shape[:-1] != a.shape[:-1] or s.shape[-1] != a.shape[-1]:
        return None  # the same batches, query rows and keys as the second matmul's A
    if v.shape[-1] != out.terms[0].shape[-1] or len(s.shape) not in (2, 3):
        return None
    if any(n.dtype not in ELEMENTS for n in (v, *first.terms[0].srcs)):
        return None  # the elements the kernel reads
    q, kt = first.terms[0].srcs
    k = _transposed(kt)
    vt = _transposed(v)  # V's copy holding its matrices transposed
    copies = (_head_copy(q, groups, g1, readers, returned),
              None if k is None else _head_copy(k, groups, g1, readers, returned),
              _head_copy(v, groups, g3, readers, returned))
    transposed = (False, False, False)
    if copies[2] is None and vt is not None:
        copies = (*copies[:2], _head_copy(vt, groups, g3, readers, returned))
        transposed = (False, False, copies[2] is not None)
    if grouped:  # K and V read as the matmuls' terms, at head z / n (no (B, H) strides)
        copies = (copies[0], None, None)
        transposed = (False, False, False)
    return Match(g1, g2, g3, s, x, copies, _head_merge(groups, g3, readers, returned),
                 transposed, grouped)


def _transposed(node: Node) -> Node | None:
    """What ``node`` transposes the (Z, rows, columns) matrices of, if it does."""
    return node.srcs[0] if node.op is Op.PERMUTE and node.attrs[0] == (0, 2, 1) else None


def _unrounded(node: Node) -> Node:
    """``node`` without the bf16/fp16 policy's rounding of a float32 value, if it is one."""
    if node.op is Op.CAST and node.dtype in NARROW and node.srcs[0].dtype == "float32":
        return node.srcs[0]
    return node


def _head_merge(groups: list[Group], g3: int, readers: dict[int, list[int]],
                returned: set[int]) -> int | None:
    """The group that stores the second matmul's plain (Z, T, D) result, Z = B·H (or its
    rounding to bfloat16/float16), as a permutation of its (B, H, T, D) view into its own
    buffer, the only reader of it."""
    out = groups[g3]
    o = out.roots[0]
    if len(out.roots) != 1 or _unrounded(o) is not out.terms[0] or out.dests[0].buffer is not o \
            or id(o) in returned or len(o.shape) != 3 or len(readers.get(id(o), [])) != 1:
        return None
    gm = readers[id(o)][0]
    group = groups[gm]
    if group.kind is not Kind.ELEMENTWISE or len(group.roots) != 1:
        return None
    m, dest = group.roots[0], group.dests[0]
    if dest.buffer is not m or dest.region is not None or dest.scatter is not None \
            or dest.axis != -1 or m.op is not Op.PERMUTE or len(m.shape) != 4:
        return None
    view = m.srcs[0]
    return gm if view.op is Op.RESHAPE and view.srcs[0] is o and _leading_merge(view, o) \
        else None


def _head_copy(operand: Node, groups: list[Group], user: int, readers: dict[int, list[int]],
               returned: set[int]) -> int | None:
    """The group that copies ``operand``'s (Z, rows, columns) matrices, Z = B·H, from an
    argument's or buffer's (B, H, rows, columns) view, where group ``user`` alone reads the
    copy: fusion materializes it because the merge of B and H regroups a permuted view."""
    if operand.op is not Op.RESHAPE or len(operand.shape) != 3:
        return None
    heads = operand.srcs[0]
    if len(heads.shape) != 4 or not _leading_merge(operand, heads) or id(heads) in returned \
            or readers.get(id(heads)) != [user]:
        return None
    g = next((g for g, grp in enumerate(groups) if grp.roots == (heads,)), None)
    if g is None or groups[g].kind is not Kind.ELEMENTWISE \
            or groups[g].dests[0].buffer is not heads:
        return None
    node = _under_views(heads)  # an argument, or a buffer (a linear layer's output)
    stored = node.op is Op.PARAM or any(node is r for grp in groups for r in grp.roots)
    return g if stored and node.dtype in ELEMENTS else None


def _softmax(row: Group) -> Node | None:
    """The expression x of a ROW group that is exactly ``exp(x - max(x)) / sum(exp(...))``
    along its last axis (or that rounded by the bf16/fp16 policy), else None."""
    last = len(row.space.shape) - 1
    if row.kind is not Kind.ROW or row.space.reduce_axes != (last,) or len(row.stages) != 2:
        return None
    mx, total = row.stages
    if mx.op is not Op.MAX or total.op is not Op.SUM or mx.attrs[0] != (last,) \
            or total.attrs[0] != (last,):
        return None
    x, e, root = mx.srcs[0], total.srcs[0], _unrounded(row.roots[0])
    if root.op is not Op.DIV or root.srcs[0] is not e or _under_views(root.srcs[1]) is not total:
        return None
    if e.op is not Op.EXP or e.srcs[0].op is not Op.SUB:
        return None
    centred = e.srcs[0]
    if centred.srcs[0] is not x or _under_views(centred.srcs[1]) is not mx:
        return None
    if not (_per_row(centred.srcs[1], mx) and _per_row(root.srcs[1], total)):
        return None
    if x.shape != row.space.shape or x.dtype != "float32":
        return None
    return x


def _per_row(view: Node, stage: Node) -> bool:
    """``view`` is ``stage`` (one value per row) reshaped with a trailing 1 and broadcast
    back along the row: the keepdims form NumPy users write."""
    if view.op is not Op.BROADCAST:
        return False
    node = view.srcs[0]
    while node.op is Op.RESHAPE:
        node = node.srcs[0]
    return node is stage and view.srcs[0].shape[:-1] == stage.shape


def _score_buffer(x: Node, groups: list[Group], g2: int, readers: dict[int, list[int]],
                  returned: set[int]) -> tuple[int, Node] | None:
    """The one GEMM buffer x is an elementwise function of, read at the same element
    (through reshapes that keep the last axis), and its group; None where x reads another
    buffer computed by a GEMM, reduces, or reads the scores any other way."""
    roots = {id(r): g for g, grp in enumerate(groups) for r in grp.roots}
    found: list[tuple[int, Node]] = []
    todo: list[tuple[Node, bool]] = [(x, False)]  # (node, below a movement op)
    seen: set[tuple[int, bool]] = set()
    while todo:
        n, viewed = todo.pop()
        if (id(n), viewed) in seen:
            continue
        seen.add((id(n), viewed))
        under = _under_views(n)
        g = roots.get(id(under))
        if g is not None and groups[g].kind is Kind.GEMM:
            if viewed or not _regrouped(n, under) or n.shape != x.shape:
                return None  # scores read at another element (a transpose, a broadcast)
            found.append((g, under))
            continue
        if n.op in (Op.PARAM, Op.CONST, Op.IOTA) or (g is not None and n is under):
            continue  # an operand the score functor loads as the ROW kernel would
        if n.op in MOVEMENT:
            todo.append((n.srcs[0], True))
            continue
        if n.op not in ELEMENTWISE or n.op is Op.GATHER:
            return None
        todo.extend((src, viewed) for src in n.srcs)
    if len({id(s) for _, s in found}) != 1:
        return None
    g1, s = found[0]
    if readers.get(id(s)) != [g2] or id(s) in returned or g1 == g2:
        return None
    return g1, s
