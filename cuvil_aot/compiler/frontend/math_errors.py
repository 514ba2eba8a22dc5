"""Python's math module's errors on numbers the call knows (call_checks.py).

``math.sqrt(-1)`` raises ``ValueError: math domain error`` and ``math.exp(1000)``
``OverflowError: math range error`` where C's libm answers nan and inf. CPython decides
from libm's answer (Modules/mathmodule.c: ``math_1``, ``math_pow``), and so does the
check, on the answer the wrapper computes at the call with the same libm:

- nan from numbers (no argument nan): ValueError (``sqrt(-1)``, ``log(-1)``,
  ``sin(inf)``, ``pow(-1, 0.5)``);
- infinite from finite arguments: OverflowError where the function can overflow (exp,
  expm1, exp2, sinh, cosh, pow of a base other than 0), else ValueError (``log(0)``,
  ``log1p(-1)``, ``atanh(1)``, ``pow(0, -1)``).

The messages are the running Python's, read from a failing call of each function.
math.tanh, math.fabs, math.atan, math.asinh and math.cbrt never raise; math.floor and
math.ceil of inf and nan raise as int() does (values.python_value). NumPy's functions
(``np.sqrt(-1.0)``) answer nan, as NumPy's do.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from cuvil_aot.compiler.frontend import call_checks
from cuvil_aot.compiler.frontend.values import apply
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.errors import SourceSpan

# A call of each function that fails the way a check of it can: its message is the one
# the check raises
_DOMAIN_EXAMPLES: dict[Any, tuple[float, ...]] = {
    math.sqrt: (-1.0,), math.log: (-1.0,), math.log1p: (-2.0,), math.sin: (math.inf,),
    math.cos: (math.inf,), math.pow: (-1.0, 0.5), math.tan: (math.inf,), math.asin: (2.0,),
    math.acos: (2.0,), math.acosh: (0.0,), math.atanh: (1.0,), math.log2: (0.0,),
    math.log10: (0.0,)}
_RANGE_EXAMPLES: dict[Any, tuple[float, ...]] = {
    math.exp: (1000.0,), math.expm1: (1000.0,), math.pow: (10.0, 400.0),
    math.sinh: (1000.0,), math.cosh: (1000.0,),
    **({math.exp2: (1100.0,)} if hasattr(math, "exp2") else {})}


def check(fn: Callable[..., float], args: list[Node], result: Node,
          span: SourceSpan) -> None:
    """Where ``fn(*args)`` (float64 Python numbers; ``result`` its libm answer) raises in
    Python at the call, the same error there."""
    if fn not in _DOMAIN_EXAMPLES and fn not in _RANGE_EXAMPLES:
        return  # math.tanh, math.fabs: defined everywhere
    nan = _all([apply(Op.NE, [result, result], span),
                *(apply(Op.EQ, [a, a], span) for a in args)], span)
    infinite = _all([apply(Op.EQ, [apply(Op.ABS, [result], span), math.inf], span),
                     *(apply(Op.LT, [apply(Op.ABS, [a], span), math.inf], span)
                       for a in args)], span)
    if fn is math.pow:  # pow(0, -1) is a domain error, pow(10, 400) a range error
        zero = apply(Op.EQ, [args[0], 0.0], span)
        overflow = _all([infinite, apply(Op.NE, [args[0], 0.0], span)], span)
        domain = apply(Op.OR, [nan, _all([infinite, zero], span)], span)
    elif fn in _RANGE_EXAMPLES:  # exp, expm1: never nan from a number
        overflow, domain = infinite, None
    else:
        overflow, domain = None, apply(Op.OR, [nan, infinite], span)
    if domain is not None:
        call_checks.record(domain, "ValueError",
                           call_checks.message_of(fn, *_DOMAIN_EXAMPLES[fn]))
    if overflow is not None:
        call_checks.record(overflow, "OverflowError",
                           call_checks.message_of(fn, *_RANGE_EXAMPLES[fn]))


def _all(conditions: list[Node], span: SourceSpan) -> Node:
    result = conditions[0]
    for c in conditions[1:]:
        result = apply(Op.AND, [result, c], span)
    return result

