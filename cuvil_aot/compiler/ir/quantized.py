"""Int8 weights read through their scales: the dequantize-then-matmul pattern users write
(``cuvil_aot.quantize_weights``' layout), recognized on a matmul's operand.

The weight is an int8 parameter ``q`` of shape (out, k) times float32 scales ``s``::

    x @ (q.astype(np.float32) * s[:, None]).T          # per output channel, s: (out,)
    (q * s[:, None]) @ x                                 # the weight on the left
    x @ (q.reshape(out, k // g, g) * s[:, :, None]).reshape(out, k).T   # per group of g
    x @ (q.astype(np.float32) * np.repeat(s, g, axis=1)).T              # the same

In the IR (per channel, the weight on the right)::

    %0 = cast(%q) : float32[N,K]
    %1 = reshape(%s) : float32[N,1]
    %2 = broadcast(%1) : float32[N,K]
    %3 = mul(%0, %2) : float32[N,K]          # Quantized.weight: never stored
    %4 = permute(%3, (1, 0)) : float32[K,N]
    %5 = matmul(%x, %4) : float32[M,N]       # the int8 GEMM (api->gemm_q8)

Fusion leaves ``weight`` unstored where a matmul reads it this way (passes/fusion.py), and
the GEMM reads ``q`` and ``s`` (codegen/launch.py). A weight that something else also
stores (returned, say) is read as that float32 buffer instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim


@dataclass(frozen=True, slots=True)
class Quantized:
    weight: Node  # the float32 (out, k) value the matmul reads
    q: Node  # the int8 parameter, (out, k)
    scale: Node  # the float32 parameter
    # the scale's axis that steps with the output channel, and with the group of k
    # (None: the scale is the same along it)
    out_axis: int | None
    group_axis: int | None
    group: Dim | None  # elements of k per scale; None: one scale per row
    qa: bool  # the weight is the matmul's A (``W @ x``), else B is its transpose


def match(matmul: Node, side: int) -> Quantized | None:
    """The quantized weight matmul operand ``side`` (0: A, 1: B) reads, if it is one."""
    if matmul.op is not Op.MATMUL or matmul.dtype != "float32":
        return None
    operand = matmul.srcs[side]
    if side == 1:
        if operand.op is not Op.PERMUTE or operand.attrs[0] != (1, 0):
            return None
        operand = operand.srcs[0]
    if len(operand.shape) != 2:
        return None
    found = _per_channel(operand) or _per_group_repeated(operand) if operand.op is Op.MUL \
        else _per_group(operand)
    if found is None:
        return None
    q, scale, out_axis, group_axis, group = found
    return Quantized(operand, q, scale, out_axis, group_axis, group, side == 0)


def reads_int8(matmul: Node) -> bool:
    """Whether either operand of ``matmul`` is a quantized weight."""
    return any(match(matmul, side) is not None for side in (0, 1))


def read_only_as_weight(weight: Node, uses: dict[int, list[Node]]) -> bool:
    """Whether every reader of ``weight`` is a matmul reading it as a quantized weight (as
    A, or through its transpose as B): then no float32 copy of it is needed."""
    def reads(user: Node, side: int) -> bool:
        found = match(user, side)
        return found is not None and found.weight is weight

    readers = uses.get(id(weight), [])
    return bool(readers) and all(
        reads(u, 0) or (u.op is Op.PERMUTE and bool(uses.get(id(u))) and all(
            reads(v, 1) for v in uses[id(u)])) for u in readers)


def regroups_unstored(reshape: Node, uses: dict[int, list[Node]]) -> bool:
    """Whether a regrouping ``reshape`` needs no stored source: it is a per-group weight
    that only GEMMs read (the reshape form), or ``np.repeat``'s spread of such a weight's
    scales that only the weight reads."""
    if read_only_as_weight(reshape, uses):
        return True
    readers = uses.get(id(reshape), [])
    return bool(readers) and all(
        u.op is Op.MUL and _per_group_repeated(u) is not None and read_only_as_weight(u, uses)
        for u in readers)


Found = tuple[Node, Node, "int | None", "int | None", "Dim | None"]


def _int8_param(node: Node) -> Node | None:
    """``q`` under ``cast(q) : float32`` (``q.astype(np.float32)``, or NumPy's promotion)."""
    if node.op is Op.CAST and node.dtype == "float32" and node.srcs[0].dtype == "int8" \
            and node.srcs[0].op is Op.PARAM:
        return node.srcs[0]
    return None


def _split(mul: Node) -> tuple[Node, Node] | None:
    """(the int8 side, the scale side) of a product, in either order."""
    left, right = mul.srcs
    if left.dtype == "float32" and left.op is Op.CAST and left.srcs[0].dtype == "int8":
        return left, right
    if right.dtype == "float32" and right.op is Op.CAST and right.srcs[0].dtype == "int8":
        return right, left
    return None


def _axis(scale: Node, axis: int) -> int | None:
    """The scale's axis ``axis``, or None where it has size 1 (it broadcasts)."""
    return None if scale.shape[axis] == Dim.of(1) else axis


def _scale_param(node: Node, rank: int) -> Node | None:
    """A float32 parameter broadcast along the last axis: ``broadcast(reshape(s))`` with
    ``s``'s shape the broadcast's but its last axis, or ``broadcast(s)`` with that axis 1."""
    if node.op is not Op.BROADCAST or node.dtype != "float32":
        return None
    src = node.srcs[0]
    if len(src.shape) != rank or src.shape[-1] != Dim.of(1):
        return None
    if src.op is Op.PARAM:
        return src
    if src.op is Op.RESHAPE and src.srcs[0].op is Op.PARAM \
            and src.srcs[0].shape == src.shape[:-1]:
        return src.srcs[0]
    return None


def _per_channel(mul: Node) -> Found | None:
    """``cast(q) * broadcast(s)`` over (out, k), s of (out,) or (out, 1)."""
    sides = _split(mul)
    if sides is None:
        return None
    q, scale = _int8_param(sides[0]), _scale_param(sides[1], 2)
    if q is None or scale is None or q.shape != mul.shape:
        return None
    return q, scale, _axis(scale, 0), None, None


def _per_group(reshape: Node) -> Found | None:
    """``(cast(q.reshape(out, G, g)) * s[:, :, None]).reshape(out, k)``, s of (out, G)."""
    if reshape.op is not Op.RESHAPE or reshape.srcs[0].op is not Op.MUL:
        return None
    mul = reshape.srcs[0]
    sides = _split(mul)
    if sides is None or len(mul.shape) != 3 or mul.shape[0] != reshape.shape[0]:
        return None
    inner = sides[0].srcs[0]
    if inner.op is not Op.RESHAPE or inner.srcs[0].shape != reshape.shape:
        return None
    q = inner.srcs[0] if inner.srcs[0].op is Op.PARAM else None
    scale = _scale_param(sides[1], 3)
    if q is None or scale is None or not mul.shape[2].is_static:
        return None
    return q, scale, _axis(scale, 0), _axis(scale, 1), mul.shape[2]


def _per_group_repeated(mul: Node) -> Found | None:
    """``cast(q) * np.repeat(s, g, axis=1)`` over (out, k), s of (out, G): the repeat is
    ``reshape(broadcast(reshape(s) : (out, G, 1)) : (out, G, g)) : (out, k)``."""
    sides = _split(mul)
    if sides is None or sides[1].op is not Op.RESHAPE or sides[1].shape != mul.shape:
        return None
    spread = sides[1].srcs[0]
    q, scale = _int8_param(sides[0]), _scale_param(spread, 3)
    if q is None or scale is None or q.shape != mul.shape or spread.shape[0] != mul.shape[0] \
            or not spread.shape[2].is_static:
        return None
    return q, scale, _axis(scale, 0), _axis(scale, 1), spread.shape[2]
