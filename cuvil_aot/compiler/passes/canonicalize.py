"""Canonicalize: rewrite ops into the forms later passes and codegen expect.

Before::

    %2 = matmul(%0, %1) : float16[B,N]
    %4 = permute(permute(%3, (1,0)), (1,0))
    %7 = matmul(cast(%5, f32), cast(%6, f32)) : float32[B,N]   # %5, %6: bfloat16

    %5 = sum(%x, (2, 3)) : float32[B,512]                   # x: float32[B,512,7,7]
    %9 = reshape(permute(%8, (0,2,1,3)) : f32[B,1,12,64]) : f32[B,1,768]  # %8: [B,12,1,64]

After::

    %2 = cast(matmul(cast(%0, f32), cast(%1, f32)), f16)   # GEMMs run in f32/f64
    %4 = %3                                                 # composed permutations
    %7 = matmul(%5, %6) : float32[B,N]                      # the bfloat16 GEMM
    %5 = sum(reshape(%x) : float32[B,512,49], (2,))        # one loop of 49, not 7 x 7
    %9 = reshape(%8) : f32[B,1,768]     # a permutation that moves only axes of size 1
"""

from __future__ import annotations

from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.indexing import ONE, identity, through
from cuvil_aot.compiler.ir.node import Function, Node, rewrite
from cuvil_aot.compiler.ir.ops import MOVEMENT, REDUCE, Op
from cuvil_aot.compiler.ir.types import TensorType


def run(fn: Function) -> Function:
    return fn.replace(outputs=rewrite(fn.outputs, _canonical))


def _canonical(node: Node) -> Node:
    if node.op is Op.MATMUL and node.dtype == "float16":
        a, b = (C.cast(s, "float32") for s in node.srcs)
        wide = node.replace(srcs=(a, b), type=TensorType("float32", node.shape))
        return C.cast(wide, "float16", node.span)
    if node.op is Op.MATMUL and node.dtype == "float32" and all(_widened_bf16(s)
                                                               for s in node.srcs):
        a, b = (_narrow(s) for s in node.srcs)
        return node.replace(srcs=(a, b if _probabilities(a) else _k_major_heads(b)))
    if node.op in REDUCE and _mergeable(node):
        axes = node.attrs[0]
        src = node.srcs[0]
        merged = src.shape[:axes[0]] + (C.total(src.shape[axes[0]:axes[-1] + 1]),) \
            + src.shape[axes[-1] + 1:]
        return node.replace(srcs=(C.reshape(src, merged, node.span),), attrs=((axes[0],),))
    if node.op is Op.PERMUTE and node.srcs[0].op is Op.PERMUTE:
        inner = node.srcs[0]
        composed = tuple(inner.attrs[0][p] for p in node.attrs[0])
        return C.permute(inner.srcs[0], composed, node.span)
    if node.op is Op.PERMUTE and _moves_only_units(node) or (
            node.op is Op.RESHAPE and node.srcs[0].op is Op.RESHAPE):
        return C.regrouped(node.srcs[0], node.shape, node.span)
    return node


def _moves_only_units(node: Node) -> bool:
    """A permutation that keeps the order of the axes not of static size 1: the elements
    keep their row-major order, so it is a reshape (a decode step's heads, (B, 12, 1, 64)
    to (B, 1, 12, 64), merged by a reshape that then reads the matmul's buffer in place,
    where it was a copy)."""
    kept = [p for p in node.attrs[0] if node.srcs[0].shape[p] != ONE]
    return kept == sorted(kept)


def _widened_bf16(operand: Node) -> bool:
    """A bfloat16 value cast to float32, or a view of one (the bf16 policy rounds ``w``
    below ``w.T``, a head's values below its view): the GEMM reads the bfloat16 itself
    (products of two bfloat16 are exact in float32, so the sums are the same), half the
    bytes."""
    while operand.op in MOVEMENT:
        operand = operand.srcs[0]
    return operand.op is Op.CAST and operand.srcs[0].dtype == "bfloat16"


def _narrow(operand: Node) -> Node:
    """The bfloat16 value a ``_widened_bf16`` operand widens, under its views."""
    if operand.op in MOVEMENT:
        inner = _narrow(operand.srcs[0])
        return operand.replace(srcs=(inner, *operand.srcs[1:]),
                               type=TensorType(inner.dtype, operand.shape))
    return operand.srcs[0]


def _probabilities(a: Node) -> bool:
    """``a`` is, under views and casts, ``exp(...) / ...``: a softmax's probabilities, so the
    matmul is attention's ``P @ V``, which the GPU's fused attention runs (attention_match:
    the exact pattern). That kernel reads V's heads as split, 16-byte rows by cp.async, and
    the V projection stores them as rows; transposed for a wgmma that would not run, they
    cost both: element loads in the kernel, a 2-byte store a lane in the projection's
    epilogue (41 us against 21 for Q's in the bf16 BERT layer, H200)."""
    while a.op in MOVEMENT or a.op is Op.CAST:
        a = a.srcs[0]
    return a.op is Op.DIV and a.srcs[0].op is Op.EXP


def _k_major_heads(b: Node) -> Node:
    """B of a bfloat16 GEMM that regroups heads keeping each matrix's axes ((B, H, T, D) ->
    (B*H, T, D): attention's V) as the same reshape of the heads transposed, transposed
    back: the copy fusion makes of the reshape's source then holds each matrix with k
    contiguous, the layout of the bf16 wgmma (which reads B K-major only)."""
    rank = len(b.shape)
    if b.op is not Op.RESHAPE or rank < 3 or through(b, identity(rank), rank) is not None:
        return b
    src = b.srcs[0]
    n = len(src.shape)
    if n < 3 or src.shape[-2:] != b.shape[-2:]:
        return b
    swap = tuple(range(n - 2)) + (n - 1, n - 2)
    if src.op is Op.PERMUTE:  # one permutation of the heads, not two
        inner = C.permute(src.srcs[0], tuple(src.attrs[0][p] for p in swap), b.span)
    else:
        inner = C.permute(src, swap, b.span)
    flipped = C.reshape(inner, (*b.shape[:-2], b.shape[-1], b.shape[-2]), b.span)
    return C.permute(flipped, tuple(range(rank - 2)) + (rank - 1, rank - 2), b.span)


def _mergeable(node: Node) -> bool:
    """A reduction of an argument over several adjacent axes: one axis of their product
    (the argument is then read as C-contiguous, copied first if it is not)."""
    axes = node.attrs[0]
    return (len(axes) > 1 and node.srcs[0].op is Op.PARAM
            and list(axes) == list(range(axes[0], axes[-1] + 1)))
