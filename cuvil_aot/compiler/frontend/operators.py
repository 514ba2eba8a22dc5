"""Python's binary operators on arrays and compile-time values.

``binary`` takes the operator by its AST name (``Add``, ``MatMult``, ``Lt``...):
on two compile-time values it computes the result now; on symbolic dimensions
too where the result is again a dimension (``N + 1``, ``4*H // 2``) or a
comparison true for every size. Otherwise it builds the operation: Python's
on Python numbers known only at run time (``D ** 0.5`` is a Python float),
NumPy's on arrays, with NumPy's fast paths for ``x ** 2`` and ``x ** 0.5``.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend import call_checks, power_errors
from cuvil_aot.compiler.frontend.int_matmul import reduced_matmul
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import apply, fold, is_symbolic, python_value, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, is_float, is_int, shape_str
from cuvil_aot.errors import SourceSpan

_BINARY = {"Add": Op.ADD, "Sub": Op.SUB, "Mult": Op.MUL, "Div": Op.DIV, "FloorDiv": Op.FLOORDIV,
           "Mod": Op.MOD, "Pow": Op.POW, "Lt": Op.LT, "LtE": Op.LE, "Gt": Op.GT, "GtE": Op.GE,
           "Eq": Op.EQ, "NotEq": Op.NE, "BitAnd": Op.AND, "BitOr": Op.OR, "BitXor": Op.XOR,
           "LShift": Op.LSHIFT, "RShift": Op.RSHIFT}
_PY_BINARY = {"Add": operator.add, "Sub": operator.sub, "Mult": operator.mul,
              "Div": operator.truediv, "FloorDiv": operator.floordiv, "Mod": operator.mod,
              "Pow": operator.pow, "Lt": operator.lt, "LtE": operator.le, "Gt": operator.gt,
              "GtE": operator.ge, "Eq": operator.eq, "NotEq": operator.ne,
              "BitAnd": operator.and_, "BitOr": operator.or_, "BitXor": operator.xor,
              "LShift": operator.lshift, "RShift": operator.rshift, "MatMult": operator.matmul}


def binary(name: str, left: Any, right: Any, span: SourceSpan, left_span: SourceSpan,
           right_span: SourceSpan) -> Any:
    """``left <name> right``; the operand spans point matmul's shape notes at each side."""
    if name == "MatMult":
        return matmul(to_node(left, left_span), to_node(right, right_span), span,
                      left_span, right_span)
    left, right = fold(left), fold(right)
    numbers = not isinstance(left, Node) and not isinstance(right, Node)
    if numbers and not is_symbolic(left) and not is_symbolic(right):
        return _fold_binary(name, left, right, span)
    python = _python_scalars(left, right)
    if python:  # one is known only at the call: there, Python's ZeroDivisionError
        _zero_division(name, left, right, span)
    known = dim_binary(name, left, right) if numbers else None
    if known is not None:
        return known
    if python:
        return _python_binary(name, left, right, span, left_span, right_span)
    if name == "Pow":
        special = _power(left, right, span)
        if special is not None:
            return special
    result = apply(_BINARY[name], [left, right], span)
    if name == "Pow":  # an integer array to a negative power known at the call
        power_errors.numpy_power(result, to_node(right, span), span)
    return result


def _fold_binary(name: str, left: Any, right: Any, span: SourceSpan) -> Any:
    """Both operands known now: Python computes it (NumPy, for NumPy scalars)."""
    if name in ("Eq", "NotEq") and isinstance(left, tuple) and isinstance(right, tuple) \
            and any(is_symbolic(v) for v in (*left, *right)):
        same = _tuples_equal(left, right, span)
        if name == "Eq":
            return same
        return apply(Op.INVERT, [same], span) if isinstance(same, Node) else not same
    try:
        with np.errstate(all="ignore"):  # NumPy scalars overflow to inf, as NumPy's do
            return _PY_BINARY[name](left, right)
    except Exception as exc:  # the user's constant arithmetic failed, as Python would
        raise UserError(f"{type(exc).__name__}: {exc}", span) from None


def _tuples_equal(left: tuple[Any, ...], right: tuple[Any, ...], span: SourceSpan) -> Any:
    """``x.shape == (4, H)``: item by item, as Python compares tuples; known at run time
    where a symbolic dimension may or may not equal its counterpart."""
    if len(left) != len(right):
        return False
    result: Any = True
    for a, b in zip(left, right):
        numbers = all(isinstance(v, int | Dim) for v in (a, b))
        same = binary("Eq", a, b, span, span, span) if numbers else _fold_binary("Eq", a, b, span)
        if same is False:
            return False
        if isinstance(same, Node):
            result = same if result is True else apply(Op.AND, [result, same], span)
    return result


def dim_binary(name: str, left: Any, right: Any) -> Any:
    """Dimensions in integer arithmetic whose result is again a dimension (a polynomial),
    or a comparison that holds for every size (``2*N + 1 > N``); None when it is known
    only at run time."""
    if not all(isinstance(v, int | Dim) for v in (left, right)):
        return None
    a, b = Dim.of(left), Dim.of(right)
    if name in ("Add", "Sub", "Mult"):
        return fold(_PY_BINARY[name](a, b))
    if name == "FloorDiv" and b != Dim.of(0):
        return fold(a.exact_div(b))
    if name == "Mod" and b != Dim.of(0) and a.exact_div(b) is not None:
        return 0
    if name == "Pow" and b.is_static and 0 <= b.value <= MAX_DIM_POWER:
        result = Dim.of(1)
        for _ in range(b.value):
            result = result * a
        return fold(result)
    if name in _COMPARE:
        return _compare(name, a - b)
    return None


MAX_DIM_POWER = 8
_COMPARE = ("Lt", "LtE", "Gt", "GtE", "Eq", "NotEq")


def _compare(name: str, diff: Dim) -> bool | None:
    """``a <name> b`` from the sign of ``diff = a - b`` where it holds for every size of its
    symbols (sizes are >= 0: ``N + 1 > 0``, ``2*N >= N``); None where it may go either way."""
    pos, nonneg = diff.known_positive(), diff.known_nonnegative()
    neg, nonpos = (-diff).known_positive(), (-diff).known_nonnegative()
    zero = diff == Dim.of(0)
    true, false = {"Gt": (pos, nonpos), "GtE": (nonneg, neg), "Lt": (neg, nonneg),
                   "LtE": (nonpos, pos), "Eq": (zero, pos or neg),
                   "NotEq": (pos or neg, zero)}[name]
    return True if true else False if false else None


def _python_scalars(left: Any, right: Any) -> bool:
    """Both operands Python numbers, at least one known only at run time (a weak 0-d node,
    a symbolic dimension): the operator follows Python, not NumPy."""
    def python(v: Any) -> bool:
        if isinstance(v, Node):
            return v.type.weak and not v.shape
        return isinstance(v, bool | int | float | Dim) and not isinstance(v, np.generic)
    return python(left) and python(right)


_ARITHMETIC = ("Add", "Sub", "Mult", "Div", "FloorDiv", "Mod", "Pow")


def _python_binary(name: str, left: Any, right: Any, span: SourceSpan, left_span: SourceSpan,
                   right_span: SourceSpan) -> Node:
    """Python's operator on Python numbers known at run time: booleans compute as ints
    (``True + True == 2``), an int to a negative power is a float (to one known only at
    the call: power_errors.py)."""
    a, b = to_node(left, span), to_node(right, span)
    if name not in _ARITHMETIC:
        return apply(_BINARY[name], [a, b], span)
    a, b = (python_value(v, int, span) if v.dtype == "bool" else v for v in (a, b))
    if name != "Pow":
        return apply(_BINARY[name], [a, b], span)
    negative = isinstance(right, int | float) and right < 0
    base = python_value(a, float, span) if a.dtype == b.dtype == "int64" and negative else a
    result = apply(Op.POW, [base, b], span)
    power_errors.python_power(a, b, result, span, left_span, right_span)
    return result


def _zero_division(name: str, left: Any, right: Any, span: SourceSpan) -> None:
    """Python numbers, one known only at the call: there, where the divisor is zero (or
    ``0 ** -1``), the ZeroDivisionError Python raises (call_checks.py)."""
    if name not in ("Div", "FloorDiv", "Mod", "Pow"):
        return
    a, b = to_node(left, span), to_node(right, span)
    if name != "Pow":
        if call_checks.always(b, lambda v: v != 0):
            return
        cond = apply(Op.EQ, [b, 0], span)
    else:  # 0.0 ** -inf is inf
        if call_checks.always(a, lambda v: v != 0) \
                or call_checks.always(b, lambda v: v >= 0 or v == -math.inf):
            return
        below = apply(Op.LT, [b, 0], span)
        if b.dtype == "float64":
            below = apply(Op.AND, [below, apply(Op.GT, [b, -math.inf], span)], span)
        cond = apply(Op.AND, [apply(Op.EQ, [a, 0], span), below], span)
    call_checks.record(cond, "ZeroDivisionError", _python_message(name, a.dtype, b.dtype))


def _python_message(name: str, left: str, right: str) -> str:
    """What the running Python's ZeroDivisionError says for operands of these dtypes
    (``float division by zero`` on 3.11, ``division by zero`` on 3.12)."""
    zero, base = (-1, 0) if name == "Pow" else (0, 1)
    kind: dict[str, type] = {"float64": float}
    try:
        _PY_BINARY[name](kind.get(left, int)(base), kind.get(right, int)(zero))
    except ZeroDivisionError as exc:
        return str(exc)
    raise RuntimeError(f"{name} of {left} by {right} zero did not raise")  # a cuvil_aot bug


def _power(base: Any, exponent: Any, span: SourceSpan) -> Node | None:
    """x ** 2 -> square, x ** 0.5 -> sqrt (NumPy's fast paths), float x ** 3 and x ** 4 as
    products."""
    if not isinstance(base, Node) or isinstance(exponent, Node | bool):
        return None
    if is_int(base.dtype) and isinstance(exponent, int) and exponent < 0:
        raise UserError("integers to negative integer powers are not allowed", span)
    if exponent == 2:
        return apply(Op.SQUARE, [base], span)
    if exponent == 1:
        return apply(Op.MUL, [base, 1], span)
    if exponent == 0.5 and is_float(base.dtype):
        return apply(Op.SQRT, [base], span)
    if exponent in (3, 4) and is_float(base.dtype):
        # GELU's x ** 3: multiplications vectorize where pow is a libm call per element;
        # within an ulp of pow, as float32 tolerances allow (NumPy's own pow is libm's)
        square = apply(Op.SQUARE, [base], span)
        return apply(Op.MUL, [square, base if exponent == 3 else square], span)
    return None


def _whole(x: Node, axes: int) -> bool:
    """Whether a slice keeps its first ``axes`` axes whole."""
    starts, steps = x.attrs
    return all(s == Dim.of(0) for s in starts[:axes]) and all(s == Dim.of(1)
                                                               for s in steps[:axes])


def _folded_batches(a: Node, b: Node, span: SourceSpan,
                    notes: tuple[tuple[SourceSpan, str], ...]) -> Node:
    """``a @ b`` with several batch axes: they broadcast as NumPy's, then fold into one,
    so the GEMM sees (batch, m, k) @ (batch, k, n); with one matrix on the right the rows
    of every batch are one matrix."""
    batch = checked(B.broadcast_shapes, a.shape[:-2], b.shape[:-2], span,
                    (a.shape, b.shape), span=span, notes=notes)
    if b.type.ndim == 2:
        rows = C.reshape(a, (C.total(a.shape[:-1]), a.shape[-1]), span)
        out = checked(B.matmul, rows, b, span, span=span, notes=notes)
        return C.reshape(out, (*a.shape[:-1], out.shape[-1]), span)

    nb = len(batch)

    def folded(x: Node) -> Node:
        # k.transpose(0, 1, 3, 2) or k_cache[:, :, :t + 1]: fold the stored array, then
        # swap or slice its matrices; a folded array is a view, a folded transpose or
        # slice would be a copy
        if C.same_shape(x.shape[:-2], batch) and x.op is Op.PERMUTE \
                and x.attrs[0][:nb] == tuple(range(nb)):
            return C.permute(folded(x.srcs[0]), (0, *(p - nb + 1 for p in x.attrs[0][nb:])),
                             span)
        if C.same_shape(x.shape[:-2], batch) and x.op is Op.SLICE \
                and _whole(x, nb) and C.same_shape(x.srcs[0].shape[:nb], batch):
            (starts, steps), inner = x.attrs, folded(x.srcs[0])
            return B.slice_axes(inner, (Dim.of(0), *starts[nb:]), (Dim.of(1), *steps[nb:]),
                                (inner.shape[0], *x.shape[nb:]), span)
        full = checked(B.broadcast_to, x, (*batch, *x.shape[-2:]), span, span=span)
        return C.reshape(full, (C.total(batch), *full.shape[-2:]), span)

    out = checked(B.matmul, folded(a), folded(b), span, span=span, notes=notes)
    return C.reshape(out, (*batch, *out.shape[-2:]), span)


def matmul(a: Node, b: Node, span: SourceSpan, a_span: SourceSpan, b_span: SourceSpan) -> Node:
    """``a @ b`` with NumPy's 1-D cases: a dot product, or a vector promoted to a matrix."""
    notes = ((a_span, f"left operand has shape {shape_str(a.shape)}"),
             (b_span, f"right operand has shape {shape_str(b.shape)}"))
    if a.type.ndim == 0 or b.type.ndim == 0:
        raise UserError("matmul: an operand has no dimensions", span, "np.multiply (*)",
                        notes=notes)
    if a.type.ndim == 1 and b.type.ndim == 1:
        if not B.inner_dims_match(a.shape[0], b.shape[0]):
            raise UserError(f"matmul: inner dimensions differ ({a.shape[0]} != {b.shape[0]})",
                            span, notes=notes)
        total = checked(B.reduce, Op.SUM, apply(Op.MUL, [a, b], span), None, False, span,
                        span=span)
        # NumPy's dot keeps the operands' dtype where sum would widen it: int8 wraps (the
        # sum in int64 taken mod 2^8 is the same), a dot of booleans is any(a & b)
        dtype, _ = checked(B.numpy_result, Op.MATMUL, ((a.dtype, False), (b.dtype, False)),
                           span=span)
        return C.cast(total, dtype, span)
    a2 = C.reshape(a, (1, a.shape[0]), span) if a.type.ndim == 1 else a
    b2 = C.reshape(b, (b.shape[0], 1), span) if b.type.ndim == 1 else b
    reduced = reduced_matmul(a2, b2, span, notes)  # integers: int_matmul.py
    if reduced is not None:
        out = reduced
    elif max(a2.type.ndim, b2.type.ndim) > 3:
        out = _folded_batches(a2, b2, span, notes)
    else:
        out = checked(B.matmul, a2, b2, span, span=span, notes=notes)
    if a.type.ndim == 1:
        out = C.reshape(out, out.shape[:-2] + out.shape[-1:], span)
    if b.type.ndim == 1:
        out = C.reshape(out, out.shape[:-1], span)
    return out
