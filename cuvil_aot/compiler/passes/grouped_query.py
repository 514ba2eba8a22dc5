"""Grouped-query attention without ``repeat_kv``'s copies.

LLaMA-style models give each of a K/V head's ``n`` query heads its keys and values by
``np.broadcast_to(k[:, :, None], (b, kv, n, s, d)).reshape(b, kv * n, s, d)``. The merge
of the K/V heads with their repeats is no view (a stride of 0 inside one axis), so each
call copied the whole grown cache, for K and for V (a fifth of the HF LLaMA port's decode
step at 4 × 1 on the CPU). Instead each K/V head's ``n`` query heads become the rows of
one matmul against it; before::

    %3 = reshape(broadcast(reshape(%k) : [B,KV,1,S,D]) : [B,KV,n,S,D]) : [B*H,S,D]
    %5 = matmul(%q : [B*H,T,D], permute(%3, (0, 2, 1)))                : [B*H,T,S]

after::

    %5 = reshape(matmul(reshape(%q) : [B*KV,n*T,D],
                        permute(reshape(%k) : [B*KV,S,D], (0, 2, 1))) : [B*KV,n*T,S])
         : [B*H,T,S]

and the same for ``P @ V``. The query's and the scores' regrouping are reshapes of
contiguous buffers (no copies where those are buffers already: the query heads as a GEMM
stores them, the probabilities as the softmax does); a decode step's n·1 rows are one
GEMM's. The element order is the same: query head ``g·n + r`` of batch ``b`` is row
``r·T + t`` of matrix ``b·KV + g``, whose K/V head is ``g``.

Matched only where the repeat axis is the innermost of the merged batch axes (head
``g·n + r``, ``repeat_kv``'s order) and the matmul is of rank 3 (the frontend's form of
any batched matmul); ``np.repeat(k, n, axis=1)`` builds the same graph, and Meta's layout
(the heads of (B, S, KV, D) repeated on axis 2, then transposed) the same after the
transpose is moved below the repeat. The GPU's fused
attention takes the rewritten pair back as attention over the B·H heads, K and V read at
head h / n (attention_match.Match.grouped).

CPU, the HF LLaMA port's decode step against 128 past tokens (8 query heads over 2 K/V
heads, 2-core Zen 5 VM, old and new trees alternated): 139-144 → 111-116 µs at 4 × 1,
94-105 → 83-89 at 1 × 1.
"""

from __future__ import annotations

from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Function, Node
from cuvil_aot.compiler.ir.node import rewrite as rewrite_graph
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, TensorType

ONE = Dim.of(1)
SWAP = (0, 2, 1)  # a batched matrix transposed: k.transpose(0, 1, 3, 2) after the merge


def rewrite(node: Node) -> Node | None:
    """``node`` as matmuls of each K/V head against its query heads stacked as rows, or None
    where it is no matmul against repeated heads."""
    if node.op is not Op.MATMUL or len(node.shape) != 3:
        return None
    a, b = node.srcs
    swapped = b.op is Op.PERMUTE and b.attrs[0] == SWAP
    found = _repeated(b.srcs[0] if swapped else b)
    if found is None:
        return None
    heads, n = found  # (groups, S, D): each K/V head's matrix; n query heads share it
    groups = heads.shape[0]
    rows = n * a.shape[1]
    stacked = C.regrouped(a, (groups, rows, a.shape[2]), node.span)
    right = C.permute(heads, SWAP, node.span) if swapped else heads
    product = node.replace(srcs=(stacked, right),
                           type=TensorType(node.dtype, (groups, rows, node.shape[2])))
    return C.regrouped(product, node.shape, node.span)


def _repeated(x: Node) -> tuple[Node, Dim] | None:
    """For ``reshape(broadcast(y))`` that merges the leading axes of a broadcast whose one
    repeated axis (from 1 to n) is the innermost of them: (y as (their product without n,
    rows, cols), n). Meta's layout, the heads repeated before they are transposed, is first
    brought to that form (_transposed_first)."""
    if x.op is not Op.RESHAPE or len(x.shape) != 3:
        return None
    if x.srcs[0].op is Op.PERMUTE:
        moved = _transposed_first(x.srcs[0])
        if moved is None:
            return None
        x = C.regrouped(moved, x.shape, x.span)
    if x.srcs[0].op is not Op.BROADCAST:
        return None
    spread = x.srcs[0]
    src, full = spread.srcs[0].shape, spread.shape
    lead = len(full) - 2
    if lead < 2 or len(src) != len(full) or full[lead:] != x.shape[1:]:
        return None
    repeated = [i for i in range(lead) if src[i] != full[i]]
    if repeated != [lead - 1] or src[lead - 1] != ONE or full[lead - 1] == ONE:
        return None
    if any(src[i] != full[i] for i in range(lead, len(full))):
        return None
    heads = C.regrouped(spread.srcs[0], (C.total(full[:lead - 1]), *full[lead:]), x.span)
    return heads, full[lead - 1]


def _transposed_first(view: Node) -> Node | None:
    """For ``permute(reshape(broadcast(y)))`` where the reshape merges only a broadcast axis
    (from 1 to n) into the axis before it (Meta's LLaMA: (B, S, KV, n, D) -> (B, S, H, D),
    then the heads transposed to (B, H, S, D)): the same values as
    ``reshape(broadcast(permute(y)))``, the permutation moving the merged pair as one axis,
    so the repeat is the innermost of the leading axes; None for anything else."""
    merged = view.srcs[0]
    if merged.op is not Op.RESHAPE or merged.srcs[0].op is not Op.BROADCAST:
        return None
    spread = merged.srcs[0]
    src, full, out = spread.srcs[0].shape, spread.shape, merged.shape
    if len(src) != len(full) or len(full) != len(out) + 1:
        return None
    repeated = [i for i in range(len(full)) if src[i] != full[i]]
    if len(repeated) != 1 or repeated[0] == 0 or src[repeated[0]] != ONE:
        return None
    k = repeated[0]  # full's axes k - 1 and k are out's axis k - 1
    if full[:k - 1] != out[:k - 1] or full[k + 1:] != out[k:]:
        return None
    groups = [[a] for a in range(k - 1)] + [[k - 1, k]] + [[a + 1] for a in range(k, len(out))]
    order = tuple(a for p in view.attrs[0] for a in groups[p])
    moved = C.permute(spread.srcs[0], order, view.span)
    spread = Node(Op.BROADCAST, TensorType(spread.dtype, tuple(full[a] for a in order),
                                           spread.type.weak), (moved,), span=spread.span)
    return Node(Op.RESHAPE, TensorType(view.dtype, view.shape, view.type.weak), (spread,),
                span=view.span)


def run(fn: Function) -> Function:
    return fn.replace(outputs=rewrite_graph(fn.outputs, _each))


def _each(node: Node) -> Node:
    """The matmuls rewritten; a reshape of the reshape that stands for one, one reshape."""
    if node.op is Op.RESHAPE and node.srcs[0].op is Op.RESHAPE:
        return C.regrouped(node.srcs[0], node.shape, node.span)
    grouped = rewrite(node)
    return node if grouped is None else grouped
