"""The errors of ``**`` on numbers the call knows (call_checks.py).

Python's ``**`` on Python numbers (operators.binary), where Python's answer is one the
compiled code cannot give:

- ``n ** k`` of ints is an int where k >= 0 and a float where k < 0. A compiled value's
  type is fixed before the call, so with k known only then (an int argument, arithmetic
  on sizes: ``2 ** (len(x) - 2)``) the power is an int, and where k is negative at the
  call it raises ValueError saying so and what to write (``float(n) ** k``): never a
  silently wrong 0. A k known now (``n ** -1``, ``n ** len(x)``) decides the type now.
- a negative float to a fractional power is a complex number in Python: ValueError.
- a float power too large for a float raises Python's OverflowError.

NumPy's (``x ** k``, ``np.power``): an integer array to a negative integer power raises
ValueError, where there is an element to compute (not for an empty array).
"""

from __future__ import annotations

import math
import operator

import numpy as np

from cuvil_aot.compiler.frontend import call_checks
from cuvil_aot.compiler.frontend.values import apply, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import is_float, is_int
from cuvil_aot.errors import SourceSpan


def python_power(base: Node, exponent: Node, result: Node, span: SourceSpan,
                 base_span: SourceSpan, exponent_span: SourceSpan) -> None:
    """Where Python's ``base ** exponent`` (Python numbers) is not ``result`` at the call,
    Python's error there, or ours saying what to write."""
    if is_int(result.dtype):
        _negative_int_exponent(exponent, span, base_span, exponent_span)
        return
    _complex(base, exponent, span)
    _overflow(base, exponent, result, span)


def _negative_int_exponent(exponent: Node, span: SourceSpan, base_span: SourceSpan,
                           exponent_span: SourceSpan) -> None:
    if call_checks.always(exponent, lambda v: v >= 0):
        return
    base, power = _source(base_span), _source(exponent_span)
    write = f"float({base}) ** {_operand(power)}" if base_span != span and base and power \
        else "float(base) ** exponent"
    call_checks.record(apply(Op.LT, [exponent, 0], span), "ValueError", (
        f"{_source(span) or 'int ** int'}: an int to a negative int power is a float in "
        "Python (the exponent is ", exponent, " here); compiled, an int ** int is an int, "
        f"since its type is fixed before the call: write {write}"))


def _complex(base: Node, exponent: Node, span: SourceSpan) -> None:
    """(-8.0) ** 0.5 is complex in Python: a negative finite base, a finite non-integer
    exponent (CPython's float_pow); Python's OverflowError where its magnitude
    ``(-base) ** exponent`` is too large for a float (complex_pow)."""
    if not is_float(exponent.dtype) or call_checks.always(base, lambda v: v >= 0) \
            or call_checks.always(exponent, lambda v: float(v).is_integer()):
        return
    negative = apply(Op.AND, [apply(Op.LT, [base, 0], span),
                              apply(Op.GT, [base, -math.inf], span)], span)
    fraction = apply(Op.NE, [exponent, apply(Op.FLOOR, [exponent], span)], span)
    finite = apply(Op.LT, [apply(Op.ABS, [exponent], span), math.inf], span)
    cond = apply(Op.AND, [negative, apply(Op.AND, [fraction, finite], span)], span)
    magnitude = apply(Op.POW, [apply(Op.MUL, [base, -1.0], span), exponent], span)
    too_large = apply(Op.EQ, [magnitude, math.inf], span)
    call_checks.record(apply(Op.AND, [cond, too_large], span), "OverflowError",
                       call_checks.message_of(operator.pow, -1e308, 1.5))
    call_checks.record(apply(Op.AND, [cond, apply(Op.INVERT, [too_large], span)], span),
                       "ValueError", (
        f"{_source(span) or 'float ** float'}: a negative number to a fractional power is "
        "a complex number in Python, which compiled code does not compute (np.power gives "
        "NumPy's nan)"))


def _overflow(base: Node, exponent: Node, result: Node, span: SourceSpan) -> None:
    """10.0 ** 400 raises OverflowError in Python: an infinite power of a finite base
    other than 0 (0 ** -1 is a ZeroDivisionError) to a finite exponent."""
    if is_int(base.dtype) and call_checks.always(exponent, lambda v: v <= 1):
        return  # |n| ** k <= |n| for an int n other than 0
    tests = [apply(Op.EQ, [apply(Op.ABS, [result], span), math.inf], span),
             apply(Op.LT, [apply(Op.ABS, [base], span), math.inf], span),
             apply(Op.LT, [apply(Op.ABS, [exponent], span), math.inf], span),
             apply(Op.NE, [base, 0], span)]
    cond = tests[0]
    for t in tests[1:]:
        cond = apply(Op.AND, [cond, t], span)
    call_checks.record(cond, "OverflowError", call_checks.message_of(operator.pow, 10.0, 400))


def numpy_power(result: Node, exponent: Node, span: SourceSpan) -> None:
    """NumPy's ValueError for an integer array to a negative power known at the call,
    where the result has an element."""
    if not is_int(result.dtype) or exponent.shape or not is_int(exponent.dtype) \
            or exponent.dtype.startswith("uint") \
            or call_checks.always(exponent, lambda v: v >= 0):
        return
    size = C.total(result.shape)
    if size.is_static and size.value == 0:
        return
    cond = apply(Op.LT, [exponent, 0], span)
    if not size.is_static:
        cond = apply(Op.AND, [cond, apply(Op.GT, [to_node(size, span), 0], span)], span)
    call_checks.record(cond, "ValueError",
                       call_checks.message_of(np.power, np.int64(2), np.int64(-1)))


def _operand(text: str) -> str:
    """``text`` as the right operand of ``**``: parenthesized unless a name or a number."""
    return text if text.isidentifier() or text.replace(".", "").isdigit() else f"({text})"


def _source(span: SourceSpan) -> str | None:
    """The source text of a one-line span."""
    if span.line != span.end_line:
        return None
    return span.text[span.col:span.end_col]
