"""Precision: round the operands of float32 matmuls as the function's policy says
(``@optimize(precision=...)``, ``Function.precision``); fp32 changes nothing.

The matmul still accumulates in float32 and its epilogue runs in float32: only what it
reads changes. float64 matmuls are left as they are (a policy trades float32's precision
for speed, it never narrows float64 code). Run-time loop bodies get the same policy.

Before (precision="bf16")::

    %2 = matmul(%0, %1) : float32[B,N]

After::

    %2 = matmul(cast(cast(%0, bfloat16), float32), cast(cast(%1, bfloat16), float32))
         : float32[B,N]

fp16 is the same through float16; tf32 rounds each operand with ``tf32(%0) : float32``
(Op.TF32: 10 mantissa bits, to nearest, ties away, as the GPU's conversion).
"""

from __future__ import annotations

import dataclasses

from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.loop import LoopBody, body_of
from cuvil_aot.compiler.ir.node import Function, Node, rewrite
from cuvil_aot.compiler.ir.ops import MOVEMENT, Op

NARROW = {"bf16": "bfloat16", "fp16": "float16"}
# Operand types whose every value the mode's type holds: their widened values pass as
# they are (a bfloat16 array under "bf16" is read as it is, not rounded again)
HELD = {"bf16": ("bfloat16",), "fp16": ("float16",), "tf32": ("bfloat16", "float16")}


def run(fn: Function) -> Function:
    if fn.precision == "fp32":
        return fn
    bodies: dict[int, LoopBody] = {}  # a loop's LOOP_OUT nodes share one body

    def rounded(node: Node) -> Node:
        if node.op is Op.LOOP_OUT:  # the body's matmuls, under the same policy
            body = body_of(node)
            if id(body) not in bodies:
                inner = run(body.fn.replace(precision=fn.precision))
                bodies[id(body)] = dataclasses.replace(body, fn=inner)
            return node.replace(attrs=(bodies[id(body)], *node.attrs[1:]))
        if node.op is not Op.MATMUL or node.dtype != "float32":
            return node
        return node.replace(srcs=tuple(round_operand(s, fn.precision) for s in node.srcs))

    return fn.replace(outputs=rewrite(fn.outputs, rounded))


def round_operand(x: Node, precision: str) -> Node:
    """``x`` (float32) rounded to what the policy lets a matmul read, still float32. Every
    policy rounds below a permutation (``w.T``: the rounded copy keeps w's layout, so the
    GEMM still reads B with k contiguous, the layout of the Hopper main loop,
    cuda_wgmma.py); bf16 below any movement (a heads view's reshape too: the rounding then
    joins the producer's kernel, a GEMM epilogue storing bfloat16), and canonicalize reads
    its casts under them."""
    if x.op is Op.CAST and x.srcs[0].dtype in HELD[precision]:
        return x
    if x.op is Op.PERMUTE or (x.op in MOVEMENT and precision == "bf16"):
        return x.replace(srcs=(round_operand(x.srcs[0], precision), *x.srcs[1:]))
    if precision == "tf32":
        return Node(Op.TF32, x.type, (x,), span=x.span)
    return C.cast(C.cast(x, NARROW[precision], x.span), "float32", x.span)


def rounded_source(node: Node) -> Node | None:
    """The computed float32 value a matmul operand rounds (a precision policy's cast to
    bfloat16 or float16, or Op.TF32), if it is one. Where that value has other readers,
    fusion makes it a buffer, as under fp32, and runs its rounding in its kernel: the others
    read it rather than recompute it (a LayerNorm's output read by the next GEMM, rounded,
    and by a residual in a later epilogue)."""
    if not (node.op is Op.TF32 or node.op is Op.CAST and node.dtype in ("bfloat16", "float16")):
        return None
    source = node.srcs[0]
    if source.dtype != "float32" or source.op in (Op.PARAM, Op.CONST):
        return None
    return source
