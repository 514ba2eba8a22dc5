"""Arithmetic rounded as NumPy's loops round it, one operation at a time, for compositions
that must match NumPy bit for bit:

- ``rounded_op``: an operation in a dtype, a float16 (bfloat16) one computed in float32 and
  cast back at once (the compiler otherwise keeps float16 intermediates in float32);
- ``stored``: values through a scan of one element per row (a running product ``1 * x``,
  exact), whose kernel stores them and which no consumer fuses. A C compiler contracts
  ``a * b + c`` and ``a * b - c * d`` into fused multiply-adds (GCC at -O3 where the CPU
  has FMA, nvcc on the GPU): one rounding where NumPy, which stores each product, rounds
  twice. Products read back from memory cannot be contracted, and no other code changes.
"""

from __future__ import annotations

from typing import Any

from cuvil_aot.compiler.frontend.handlers import Ctx
from cuvil_aot.compiler.frontend.values import apply, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, TensorType, is_float

NARROW = ("float16", "bfloat16")  # computed in float32 unless rounded on purpose


def rounded_op(op: Op, args: list[Any], dtype: str, ctx: Ctx) -> Node:
    """``op`` of ``args`` (arrays or numbers) cast to ``dtype``, rounded to it as NumPy's
    loop rounds each result: a float16 (bfloat16) one computed in float32 and cast, which
    rounds now (the product, quotient or difference of two float16 values computed in
    float32 and rounded once is float16's own: 24 >= 2 * 11 + 2 bits)."""
    typed = [C.cast(to_node(a, ctx.span), dtype, ctx.span) for a in args]
    if dtype not in NARROW:
        return apply(op, typed, ctx.span)
    wide = [C.cast(a, "float32", ctx.span) for a in typed]
    return C.cast(apply(op, wide, ctx.span), dtype, ctx.span)


def stored(x: Node, ctx: Ctx) -> Node:
    """``x`` as its users read it from memory, rounded to its dtype: the running product of
    one element per row (1 * x, exact: -0.0, NaN and inf kept). Float32 and float64 only;
    other dtypes (float16's casts round; integers do not fuse into an FMA) as they are."""
    if not is_float(x.dtype) or x.dtype in NARROW:
        return x
    column = C.reshape(x, (*x.shape, Dim.of(1)), ctx.span)
    scan = Node(Op.CUMPROD, TensorType(x.dtype, column.shape), (column,),
                attrs=(x.type.ndim,), span=ctx.span)
    return C.reshape(scan, x.shape, ctx.span)
