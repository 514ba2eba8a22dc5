"""Python's binary operators on arrays and compile-time values.

``binary`` takes the operator by its AST name (``Add``, ``MatMult``, ``Lt``...):
on two compile-time values it computes the result now (symbolic dimensions
included, where the result is again a dimension); otherwise it builds the
NumPy operation, with NumPy's fast paths for ``x ** 2`` and ``x ** 0.5``.
"""

from __future__ import annotations

import operator
from typing import Any

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import apply, fold, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, is_int, shape_str
from cuvil_aot.errors import SourceSpan

_BINARY = {"Add": Op.ADD, "Sub": Op.SUB, "Mult": Op.MUL, "Div": Op.DIV, "FloorDiv": Op.FLOORDIV,
           "Mod": Op.MOD, "Pow": Op.POW, "Lt": Op.LT, "LtE": Op.LE, "Gt": Op.GT, "GtE": Op.GE,
           "Eq": Op.EQ, "NotEq": Op.NE, "BitAnd": Op.AND, "BitOr": Op.OR, "BitXor": Op.XOR}
_PY_BINARY = {"Add": operator.add, "Sub": operator.sub, "Mult": operator.mul,
              "Div": operator.truediv, "FloorDiv": operator.floordiv, "Mod": operator.mod,
              "Pow": operator.pow, "Lt": operator.lt, "LtE": operator.le, "Gt": operator.gt,
              "GtE": operator.ge, "Eq": operator.eq, "NotEq": operator.ne,
              "BitAnd": operator.and_, "BitOr": operator.or_, "BitXor": operator.xor,
              "MatMult": operator.matmul}


def binary(name: str, left: Any, right: Any, span: SourceSpan, left_span: SourceSpan,
           right_span: SourceSpan) -> Any:
    """``left <name> right``; the operand spans point matmul's shape notes at each side."""
    if name == "MatMult":
        return matmul(to_node(left, left_span), to_node(right, right_span), span,
                      left_span, right_span)
    if not isinstance(left, Node) and not isinstance(right, Node):
        return _fold_binary(name, left, right, span)
    if name == "Pow":
        special = _power(left, right, span)
        if special is not None:
            return special
    return apply(_BINARY[name], [left, right], span)


def _fold_binary(name: str, left: Any, right: Any, span: SourceSpan) -> Any:
    if isinstance(left, Dim) or isinstance(right, Dim):
        if name in ("Add", "Sub", "Mult"):
            return fold(_PY_BINARY[name](Dim.of(left), Dim.of(right)))
        if name == "FloorDiv":
            quotient = Dim.of(left).exact_div(Dim.of(right))
            if quotient is not None:
                return fold(quotient)
        if name in ("Eq", "NotEq") and Dim.of(left) == Dim.of(right):
            return name == "Eq"
        raise UserError(f"'{name}' on the symbolic dimension {left} and {right} cannot be "
                        "computed at compile time", span,
                        "+, -, * of dimensions and exact // by a constant")
    try:
        return _PY_BINARY[name](left, right)
    except Exception as exc:  # the user's constant arithmetic failed, as Python would
        raise UserError(f"{type(exc).__name__}: {exc}", span) from None


def _power(base: Any, exponent: Any, span: SourceSpan) -> Node | None:
    """x ** 2 -> square, x ** 0.5 -> sqrt: what NumPy's fast paths compute."""
    if not isinstance(base, Node) or isinstance(exponent, Node | bool):
        return None
    if is_int(base.dtype) and isinstance(exponent, int) and exponent < 0:
        raise UserError("integers to negative integer powers are not allowed", span)
    if exponent == 2:
        return apply(Op.SQUARE, [base], span)
    if exponent == 1:
        return apply(Op.MUL, [base, 1], span)
    if exponent == 0.5 and base.dtype.startswith("float"):
        return apply(Op.SQRT, [base], span)
    return None


def matmul(a: Node, b: Node, span: SourceSpan, a_span: SourceSpan, b_span: SourceSpan) -> Node:
    """``a @ b`` with NumPy's 1-D cases: a dot product, or a vector promoted to a matrix."""
    notes = ((a_span, f"left operand has shape {shape_str(a.shape)}"),
             (b_span, f"right operand has shape {shape_str(b.shape)}"))
    if a.type.ndim == 0 or b.type.ndim == 0 or a.type.ndim > 3 or b.type.ndim > 3:
        raise UserError("matmul operands must have 1, 2 or 3 dimensions", span, notes=notes)
    if a.type.ndim == 1 and b.type.ndim == 1:
        if a.shape[0] != b.shape[0]:
            raise UserError(f"matmul: inner dimensions differ ({a.shape[0]} != {b.shape[0]})",
                            span, notes=notes)
        return checked(B.reduce, Op.SUM, apply(Op.MUL, [a, b], span), None, False, span,
                       span=span)
    a2 = C.reshape(a, (1, a.shape[0]), span) if a.type.ndim == 1 else a
    b2 = C.reshape(b, (b.shape[0], 1), span) if b.type.ndim == 1 else b
    out = checked(B.matmul, a2, b2, span, span=span, notes=notes)
    if a.type.ndim == 1:
        out = C.reshape(out, out.shape[:-2] + out.shape[-1:], span)
    if b.type.ndim == 1:
        out = C.reshape(out, out.shape[:-1], span)
    return out
