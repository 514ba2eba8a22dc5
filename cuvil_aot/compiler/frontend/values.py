"""Values the frontend computes with: IR nodes and compile-time Python values.

Arrays are IR nodes; ints, floats, bools and shape dimensions known at
compile time stay Python values until an array operation needs them as
nodes (weakly typed constants, as NumPy treats Python scalars).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import DTYPES, Dim, dtype_of
from cuvil_aot.errors import SourceSpan


def fold(value: Any) -> Any:
    """Static dimensions become plain ints; everything else stays as it is."""
    if isinstance(value, Dim) and value.is_static:
        return value.value
    return value


def to_node(value: Any, span: SourceSpan) -> Node:
    """An array operand: a node as it is, a Python or NumPy scalar as a constant."""
    if isinstance(value, Node):
        return value
    if isinstance(value, bool | int | float):
        return B.const(value, span=span)
    if isinstance(value, Dim):
        return B.const(value, span=span) if not value.is_static else B.const(value.value, span=span)
    if isinstance(value, np.generic) and value.dtype.name in DTYPES:
        return B.const(value.item(), value.dtype.name, span)
    if isinstance(value, np.ndarray):
        raise UserError("NumPy arrays captured from outside the function are not supported",
                        span, "pass the array as an argument")
    raise UserError(f"expected an array or a number, got {type(value).__name__}", span)


def dtype_arg(value: Any, span: SourceSpan) -> str:
    """A dtype given as np.float32, 'float32', np.dtype(...), cv.f32 or float/int/bool."""
    if hasattr(value, "np_dtype"):
        return str(value.np_dtype)
    py = {float: "float64", int: "int64", bool: "bool"}
    if value in py:
        return py[value]
    try:
        return dtype_of(value)
    except (TypeError, ValueError) as exc:
        raise UserError(f"unsupported dtype {value!r}: {exc}", span) from None


def apply(op: Op, args: Sequence[Any], span: SourceSpan) -> Node:
    """The elementwise ``op`` on arrays or scalars, broadcast and promoted as NumPy does."""
    nodes = [to_node(a, span) for a in args]
    return checked(B.elementwise, op, nodes, span, span=span)
