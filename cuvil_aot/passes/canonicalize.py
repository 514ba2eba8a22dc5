"""Canonicalize: rewrite ops into the forms later passes and codegen expect.

Before::

    %2 = matmul(%0, %1) : float16[B,N]
    %4 = permute(permute(%3, (1,0)), (1,0))

After::

    %2 = cast(matmul(cast(%0, f32), cast(%1, f32)), f16)   # GEMMs run in f32/f64
    %4 = %3                                                 # composed permutations
"""

from __future__ import annotations

from cuvil_aot.frontend import builder as B
from cuvil_aot.ir.node import Function, Node, rewrite
from cuvil_aot.ir.ops import Op


def run(fn: Function) -> Function:
    return fn.replace(outputs=rewrite(fn.outputs, _canonical))


def _canonical(node: Node) -> Node:
    if node.op is Op.MATMUL and node.dtype == "float16":
        a, b = (B.cast(s, "float32") for s in node.srcs)
        wide = node.replace(srcs=(a, b), type=node.type.__class__("float32", node.shape))
        return B.cast(wide, "float16", node.span)
    if node.op is Op.PERMUTE and node.srcs[0].op is Op.PERMUTE:
        inner = node.srcs[0]
        composed = tuple(inner.attrs[0][p] for p in node.attrs[0])
        return B.permute(inner.srcs[0], composed, node.span)
    return node
