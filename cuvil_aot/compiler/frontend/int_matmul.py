"""``a @ b`` of integer (or boolean) matrices: NumPy's result dtype, wrapping as NumPy's.

NumPy computes ``int32 @ int32`` in int32 and ``int8 @ int8`` in int8, each product and
sum wrapping at the dtype's width. The runtime GEMM is float only, so an integer matmul
is lowered to what it means, a broadcast product reduced over the inner axis::

    a: (..., M, K) -> (..., M, 1, K)      b: (..., K, N) -> (..., 1, N, K)
    (a * b).sum(axis=-1) -> (..., M, N), cast to NumPy's result dtype

which fusion makes one row kernel (CPU and GPU): each output element a loop over K, no
(M, N, K) intermediate. The sum runs in int64 (np.sum's dtype) and is cast back: integer
arithmetic is exact modulo 2**64, so the result modulo 2**bits equals NumPy's wrapped
one. ``bool @ bool`` (NumPy: any(a & b)) is the count of common True cast to bool.
Batch axes broadcast as in any elementwise op, as NumPy's matmul broadcasts them.
"""

from __future__ import annotations

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import apply
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, is_int
from cuvil_aot.errors import SourceSpan

Notes = tuple[tuple[SourceSpan, str], ...]


def result_dtype(a: Node, b: Node, span: SourceSpan) -> str:
    """NumPy's dtype of ``a @ b``."""
    dtype, _ = checked(B.numpy_result, Op.MATMUL, ((a.dtype, False), (b.dtype, False)),
                       span=span)
    return dtype


def reduced_matmul(a: Node, b: Node, span: SourceSpan, notes: Notes) -> Node | None:
    """``a @ b`` for operands of two or more dimensions whose product is integer or
    boolean (see the module docstring); None where it is a float (the GEMM's)."""
    dtype = result_dtype(a, b, span)
    if not (is_int(dtype) or dtype == "bool"):
        return None
    if not B.inner_dims_match(a.shape[-1], b.shape[-2]):
        raise UserError(f"matmul: inner dimensions differ ({a.shape[-1]} != {b.shape[-2]})",
                        span, notes=notes)
    nd = b.type.ndim
    left = checked(C.reshape, a, (*a.shape[:-1], Dim.of(1), a.shape[-1]), span, span=span)
    b_t = C.permute(b, (*range(nd - 2), nd - 1, nd - 2), span)
    right = checked(C.reshape, b_t, (*b_t.shape[:-2], Dim.of(1), *b_t.shape[-2:]), span,
                    span=span)
    product = apply(Op.MUL, [left, right], span)
    total = checked(B.reduce, Op.SUM, product, (-1,), False, span, span=span)
    return C.cast(total, dtype, span)
