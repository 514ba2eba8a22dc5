"""Values the frontend computes with: IR nodes and compile-time Python values.

Arrays are IR nodes; ints, floats, bools, NumPy scalars and shape dimensions
known at compile time stay Python values until an array operation needs them
as nodes (Python scalars weakly typed, NumPy scalars strongly, as NEP 50 says).
A value known only at run time that is not an array (a Python scalar
parameter, a number computed from a symbolic dimension: ``D ** 0.5``) is a
0-d node; ``weak`` when it stands for a Python scalar.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend import call_checks
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node, toposort
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import DTYPES, Dim, TensorType, dtype_of, is_float, shape_str
from cuvil_aot.errors import SourceSpan

PY_KINDS = {float: "float64", int: "int64", bool: "bool"}  # the dtype a Python scalar is in


class Unbound:
    """The value of a name that has none the compiler can give: a read raises ``why``
    (a run-time loop's variable, a name one block of a run-time if assigns, a view of an
    array written after it was taken)."""

    def __init__(self, why: str):
        self.why = why


def is_dict_key(value: Any) -> bool:
    """Whether ``value`` may key a dict built in a compiled function (known now)."""
    return isinstance(value, str | int | float | bool | tuple | type(None))


GENERATED: type[Iterator[Any]] = type(iter([]))
"""a generator expression's items (unrolled.generator): an iterator, used up once"""


def fold(value: Any) -> Any:
    """Static dimensions become plain ints; everything else stays as it is."""
    if isinstance(value, Dim) and value.is_static:
        return value.value
    return value


def to_node(value: Any, span: SourceSpan) -> Node:
    """An array operand: a node as it is, a Python or NumPy scalar as a constant."""
    if isinstance(value, Node):
        return value
    if isinstance(value, np.generic) and value.dtype.name in DTYPES:  # np.float64 is a float
        return B.const(value.item(), value.dtype.name, span)
    if isinstance(value, bool | int | float):
        return B.const(value, span=span)
    if isinstance(value, Dim):
        return B.const(value, span=span) if not value.is_static else B.const(value.value, span=span)
    if isinstance(value, np.ndarray):
        raise UserError("NumPy arrays captured from outside the function are not supported",
                        span, "pass the array as an argument")
    if isinstance(value, list | tuple):
        return literal_array(value, None, span)
    raise UserError(f"expected an array or a number, got {type(value).__name__}", span)


LITERAL_MAX = 256  # elements of a list literal made a constant array; larger: an argument


def literal_array(value: list[Any] | tuple[Any, ...], dtype: str | None,
                  span: SourceSpan) -> Node:
    """A (nested) list or tuple of numbers known now as the constant array NumPy makes of
    it (its dtype and shape rules, its errors for ragged lists): normalization constants,
    a table's few points. Each element a constant, stacked and reshaped. A list holding
    arrays (or sizes known only at the call) is those arrays stacked (_stacked)."""
    if any(isinstance(v, Node) or (isinstance(v, Dim) and not v.is_static)
           for v in _leaves(value)):
        return _stacked(value, dtype, span)
    try:
        array = np.array(_folded(value), dtype=dtype)
    except (ValueError, TypeError) as exc:
        raise UserError(f"NumPy cannot make an array of this list: {exc}", span) from None
    if array.dtype.name not in DTYPES:
        raise UserError(f"a list of {array.dtype.name} values is not supported", span,
                        f"write numbers of one of {', '.join(DTYPES)}")
    if array.size > LITERAL_MAX:
        raise UserError(f"a list literal of {array.size} elements (more than {LITERAL_MAX})",
                        span, "pass the array as an argument")
    return constant_array(array, span)


# The values of the constant arrays made of lists (constant_array), by id of their node,
# each kept with its node (an id is not reused while the node lives): indexing one with
# numbers known now is folded (literal_element), so NumPy's own Python code that reads
# back what it put in a list (np.hanning's `values = np.array([0.0, M]); M = values[1]`)
# sees a number. The newest LITERALS_KEPT only: a cache, not a record.
_LITERALS: dict[int, tuple[Node, np.ndarray]] = {}
LITERALS_KEPT = 4096


def constant_array(array: np.ndarray, span: SourceSpan) -> Node:
    """The node of NumPy array ``array`` known at compile time (its elements constants,
    stacked and reshaped), its values remembered for literal_element."""
    consts = [B.const(v.item(), array.dtype.name, span) for v in array.ravel()]
    if not consts:
        node = B.broadcast_to(B.const(0, array.dtype.name, span),
                              tuple(Dim.of(d) for d in array.shape), span)
    else:
        flat = consts[0] if len(consts) == 1 else B.stack(consts, 0, span)
        node = C.reshape(flat, tuple(Dim.of(d) for d in array.shape), span)
    if len(_LITERALS) >= LITERALS_KEPT:
        del _LITERALS[next(iter(_LITERALS))]
    _LITERALS[id(node)] = (node, array)
    return node


def literal_element(x: Node, index: Any, span: SourceSpan) -> Any:
    """``x[index]`` folded where ``x`` is a constant array made of a list and ``index`` is
    ints, slices, None and ... known now: a NumPy scalar, or again a constant array; None
    where it cannot be folded."""
    known = _LITERALS.get(id(x))
    items = index if isinstance(index, tuple) else (index,)
    if known is None or known[0] is not x or not all(
            item is None or item is Ellipsis or isinstance(item, slice | int | np.integer)
            and not isinstance(item, bool) for item in items):
        return None
    if any(isinstance(item, slice) and not all(
            v is None or isinstance(v, int | np.integer) for v in (item.start, item.stop,
                                                                    item.step))
           for item in items):
        return None
    try:
        value = known[1][index]
    except IndexError as exc:
        raise UserError(f"IndexError: {exc}", span) from None
    return value if isinstance(value, np.generic) else constant_array(value, span)


def _stacked(value: Any, dtype: str | None, span: SourceSpan) -> Node:
    """np.array of nested lists holding arrays: each list its elements stacked along a new
    first axis (one shape throughout: NumPy's ValueError otherwise, at the call where sizes
    are symbolic), numbers as np.array converts them (float64, int64, bool), the dtype the
    elements' common one or ``dtype``."""
    def build(v: Any) -> Node:
        if isinstance(v, list | tuple):
            if not v:
                raise UserError("ValueError: setting an array element with a sequence: an "
                                "empty list beside arrays", span)
            parts = [build(e) for e in v]
            return checked(B.stack, parts, 0, span, span=span)
        if isinstance(v, Node):
            return strong(v)
        if isinstance(v, Dim):
            return B.const(v, "int64", span)
        value = np.asarray(fold(v))
        if value.dtype.name not in DTYPES:
            raise UserError(f"a list of {value.dtype.name} values is not supported", span)
        return B.const(value.item(), value.dtype.name, span)

    if len(set(_depths(value))) > 1:
        raise UserError("ValueError: setting an array element with a sequence. The requested "
                        "array has an inhomogeneous shape", span)
    out = build(value)
    return out if dtype is None else C.cast(out, dtype, span)


def _depths(value: Any, depth: int = 0) -> list[int]:
    """The depth of each leaf of nested lists."""
    if isinstance(value, list | tuple):
        return [d for v in value for d in _depths(v, depth + 1)]
    return [depth]


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, list | tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _folded(value: Any) -> Any:
    """``value`` with its static dimensions as ints and NumPy scalars kept (their dtype
    counts in NumPy's promotion)."""
    if isinstance(value, list | tuple):
        return type(value)(_folded(v) for v in value)
    return fold(value)


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


def is_symbolic(value: Any) -> bool:
    """A dimension known only at run time."""
    return isinstance(value, Dim) and not value.is_static


def is_number(value: Any) -> bool:
    """A number known at compile time: a Python or NumPy scalar or a static dimension."""
    if isinstance(value, Dim):
        return value.is_static
    if isinstance(value, np.generic):
        return value.dtype.name in DTYPES
    return isinstance(value, bool | int | float)


def is_scalar(value: Any) -> bool:
    """A number, known at compile time or at run time (a 0-d node, a symbolic dimension)."""
    return is_number(value) or is_symbolic(value) or isinstance(value, Node) and not value.shape


def python_value(value: Any, kind: type, span: SourceSpan) -> Any:
    """``float(value)``, ``int(value)`` or ``bool(value)`` as Python computes it: now when
    the value is known, else a weak 0-d node (a Python scalar known at run time)."""
    value = fold(value)
    if not isinstance(value, Node | Dim):
        try:
            return kind(value)
        except Exception as exc:  # the user's conversion failed, as Python would
            raise UserError(f"{type(exc).__name__}: {exc}", span) from None
    x = to_node(value, span)
    if x.shape:
        raise UserError(f"{kind.__name__}() of an array of shape {shape_str(x.shape)} is not "
                        "supported "
                        "(only of a number)", span, ".astype(...) for arrays")
    dtype = PY_KINDS[kind]
    if x.dtype == dtype and x.type.weak:
        return x
    if kind is int and is_float(x.dtype):
        _check_int_of_float(x, span)
    return Node(Op.CAST, TensorType(dtype, (), weak=True), (x,), span=span)


def _check_int_of_float(x: Node, span: SourceSpan) -> None:
    """``int(x)`` of a float raises in Python where x is nan or infinite: at the call there
    (call_checks.py), with the running Python's message. Past int64, where Python's int
    grows, a compiled int cannot hold it: OverflowError saying so."""
    nan = apply(Op.NE, [x, x], span)
    infinite = apply(Op.EQ, [apply(Op.ABS, [x], span), math.inf], span)
    call_checks.record(nan, "ValueError", call_checks.message_of(int, math.nan))
    call_checks.record(infinite, "OverflowError", call_checks.message_of(int, math.inf))
    outside = apply(Op.OR, [apply(Op.GE, [x, 2.0**63], span),
                            apply(Op.LT, [x, -2.0**63], span)], span)
    past = apply(Op.AND, [outside, apply(Op.INVERT, [infinite], span)], span)
    call_checks.record(past, "OverflowError", "int() of a float past int64's range: Python's "
                       "int holds it, a compiled int is an int64")


def strong(x: Node) -> Node:
    """``x`` as a NumPy scalar (what a NumPy function returns for Python scalars)."""
    if not x.type.weak:
        return x
    if x.op is Op.PARAM:  # the parameter stays a Python scalar; its value is a NumPy one
        return Node(Op.CAST, TensorType(x.dtype, x.shape), (x,), span=x.span)
    return x.replace(type=TensorType(x.dtype, x.shape))


def run_time_origin(x: Node) -> str:
    """What a run-time value depends on, in the user's words."""
    symbols = sorted({s for n in toposort([x]) if n.op is Op.CONST and isinstance(n.attrs[0], Dim)
                      for s in n.attrs[0].symbols})
    params = [str(n.attrs[1]) for n in toposort([x]) if n.op is Op.PARAM]
    parts = []
    if symbols:
        parts.append(f"the symbolic dimension{'s' if len(symbols) > 1 else ''} "
                     + ", ".join(symbols))
    if params:
        parts.append(f"the value{'s' if len(params) > 1 else ''} of "
                     + ", ".join(f"'{p}'" for p in params))
    return " and ".join(parts) or "values computed at run time"


def indexing_error(what: str, index: Any, exc: Exception, span: SourceSpan) -> UserError:
    """Python's error indexing a tuple, list or dict (``what``); an index known only at the
    call said as such (an item of one is picked when the function is compiled)."""
    if isinstance(index, Node):
        return UserError(f"indexing {what} with {run_time_origin(index)}: the build picks the "
                         "items of a tuple, list or dict", span, "index it with a number the "
                         "build knows (a constant, a size, a constant of a class), or stack "
                         "the items into one array and index that")
    return UserError(f"indexing {what}: {exc}", span)
