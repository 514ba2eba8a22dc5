"""The NumPy surface the frontend understands: functions, methods, operators, indexing.

Each supported NumPy function maps to a handler with NumPy's own parameter
names, so argument binding errors read like NumPy's. Handlers build IR through
``builder``; builder errors become diagnostics at the call's span.
"""

from __future__ import annotations

import builtins
import hashlib
import inspect
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from cuvil_aot.errors import SourceSpan
from cuvil_aot.frontend import builder as B
from cuvil_aot.frontend.interp import UserError
from cuvil_aot.ir.node import Node
from cuvil_aot.ir.ops import Op
from cuvil_aot.ir.types import DTYPES, Dim, dtype_of, is_int

SUPPORTED_FUNCTIONS = ("np.maximum/minimum/where/clip/exp/expm1/log/log1p/sqrt/square/tanh/sin/"
                       "cos/abs/sign/floor/ceil, sum/mean/max/min/prod/var/std/argmax/argmin, "
                       "matmul/dot, transpose/reshape/expand_dims/concatenate/stack")
SUPPORTED_METHODS = ("sum, mean, max, min, prod, var, std, argmax, argmin, astype, reshape, "
                     "transpose, clip, squeeze, T, shape, ndim, size, dtype")


@dataclass(frozen=True)
class Ctx:
    span: SourceSpan
    arg_spans: Sequence[SourceSpan]


@dataclass(frozen=True)
class Method:
    """``x.name`` for an array ``x``, waiting to be called."""

    node: Node
    name: str


# Values ------------------------------------------------------------------------

def fold(value: Any) -> Any:
    """Static dimensions become plain ints; everything else stays as it is."""
    if isinstance(value, Dim) and value.is_static:
        return value.value
    return value


def to_node(value: Any, span: SourceSpan) -> Node:
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


T = TypeVar("T")


def _check(fn: Callable[..., T], *args: Any, span: SourceSpan,
           notes: tuple[tuple[SourceSpan, str], ...] = ()) -> T:
    try:
        return fn(*args)
    except (B.ShapeError, B.DtypeError) as exc:
        raise UserError(str(exc), span, notes=notes) from None


def apply(op: Op, args: Sequence[Any], span: SourceSpan) -> Node:
    nodes = [to_node(a, span) for a in args]
    return _check(B.elementwise, op, nodes, span, span=span)


# Operators ---------------------------------------------------------------------

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
    notes = ((a_span, f"left operand has shape {_shape(a)}"),
             (b_span, f"right operand has shape {_shape(b)}"))
    if a.type.ndim == 0 or b.type.ndim == 0 or a.type.ndim > 3 or b.type.ndim > 3:
        raise UserError("matmul operands must have 1, 2 or 3 dimensions", span, notes=notes)
    if a.type.ndim == 1 and b.type.ndim == 1:
        if a.shape[0] != b.shape[0]:
            raise UserError(f"matmul: inner dimensions differ ({a.shape[0]} != {b.shape[0]})",
                            span, notes=notes)
        return _check(B.reduce, Op.SUM, apply(Op.MUL, [a, b], span), None, False, span, span=span)
    a2 = B.reshape(a, (1, a.shape[0]), span) if a.type.ndim == 1 else a
    b2 = B.reshape(b, (b.shape[0], 1), span) if b.type.ndim == 1 else b
    out = _check(B.matmul, a2, b2, span, span=span, notes=notes)
    if a.type.ndim == 1:
        out = B.reshape(out, out.shape[:-2] + out.shape[-1:], span)
    if b.type.ndim == 1:
        out = B.reshape(out, out.shape[:-1], span)
    return out


def _shape(x: Node) -> str:
    from cuvil_aot.ir.types import shape_str

    return shape_str(x.shape)


# Attributes and indexing ---------------------------------------------------------

def attribute(value: Any, attr: str, span: SourceSpan) -> Any:
    if isinstance(value, Node):
        if attr == "T":
            return B.permute(value, tuple(reversed(range(value.type.ndim))), span)
        if attr == "shape":
            return tuple(fold(d) for d in value.shape)
        if attr == "ndim":
            return value.type.ndim
        if attr == "size":
            return fold(B.total(value.shape))
        if attr == "dtype":
            return np.dtype(value.dtype)
        if attr in METHODS:
            return Method(value, attr)
        raise UserError(f"the array attribute '{attr}' is not supported", span, SUPPORTED_METHODS)
    try:
        return getattr(value, attr)
    except AttributeError:
        raise UserError(f"{_describe(value)} has no attribute '{attr}'", span) from None


def _describe(value: Any) -> str:
    name = getattr(value, "__name__", None)
    return f"'{name}'" if name else f"a {type(value).__name__}"


Requirement = tuple[Dim, str]  # (expression that must be >= 0 at run time, what it guards)


@dataclass(frozen=True)
class Derived:
    """A dimension symbol computed at run time: ceil(length / step)."""

    name: str
    length: Dim
    step: int


def index(x: Node, idx: Any, span: SourceSpan) -> tuple[Node, list[Requirement | Derived]]:
    """Basic indexing: ints, slices (constant or symbolic bounds), None and ``...``.

    Symbolic bounds that cannot be proven in range become run-time requirements,
    checked by the wrapper once the argument shapes are known."""
    items = list(idx) if isinstance(idx, tuple) else [idx]
    for item in items:
        if isinstance(item, Node | list | np.ndarray):
            raise UserError("indexing with arrays (advanced indexing) is not supported", span,
                            "basic slicing, None and integer indices")
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise UserError("an index can only have a single ellipsis ('...')", span)
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    if used > x.type.ndim:
        raise UserError(f"too many indices: the array has {x.type.ndim} dimensions, "
                        f"{used} were indexed", span)
    at = next((i for i, item in enumerate(items) if item is Ellipsis), len(items))
    items[at:at + 1] = [slice(None)] * (x.type.ndim - used)
    starts, steps, sizes, out_shape = [], [], [], []
    needs: list[Requirement | Derived] = []
    axis = 0
    for item in items:
        if item is None:
            out_shape.append(Dim.of(1))
            continue
        dim = x.shape[axis]
        axis += 1
        if isinstance(item, slice):
            start, step, size = _slice_bounds(item, dim, span, needs)
            out_shape.append(size)
        elif isinstance(item, int | Dim):
            start, step, size = _int_index(item, dim, span, needs)
        else:
            raise UserError(f"unsupported index {item!r}", span, "ints, slices, None, ...")
        starts.append(start)
        steps.append(step)
        sizes.append(size)
    node = B.slice_axes(x, starts, steps, sizes, span)
    return B.reshape(node, tuple(out_shape), span), needs


def _int_index(i: int | Dim, dim: Dim, span: SourceSpan,
               needs: list[Requirement | Derived]) -> tuple[Dim, Dim, Dim]:
    i = Dim.of(i)
    if i.is_static and dim.is_static:
        if not -dim.value <= i.value < dim.value:
            raise UserError(f"index {i.value} is out of bounds for axis with size {dim.value}",
                            span)
        return Dim.of(i.value % dim.value), Dim.of(1), Dim.of(1)
    start = dim + i if i.is_static and i.value < 0 else i
    needs += _bounds(start, start + 1, dim, span)
    return start, Dim.of(1), Dim.of(1)


def _slice_bounds(s: slice, dim: Dim, span: SourceSpan,
                  needs: list[Requirement | Derived]) -> tuple[Dim, Dim, Dim]:
    bounds = [fold(v) for v in (s.start, s.stop, s.step)]
    step = 1 if bounds[2] is None else bounds[2]
    if not isinstance(step, int) or step == 0:
        raise UserError("slice steps must be nonzero integer constants", span)
    if dim.is_static and all(b is None or isinstance(b, int) for b in bounds[:2]):
        lo, hi, stride = slice(bounds[0], bounds[1], step).indices(dim.value)
        return Dim.of(lo), Dim.of(stride), Dim.of(len(range(lo, hi, stride)))
    if step < 0:  # walking down from start to just above stop (-1 means past index 0)
        start = _symbolic_bound(bounds[0], dim, dim - 1)
        stop = Dim.of(-1) if bounds[1] is None else _symbolic_bound(bounds[1], dim, dim)
        size = _ceil_div(start - stop, -step, needs)
        needs += _bounds(stop + 1, start + 1, dim, span)
        return start, Dim.of(step), size
    start = _symbolic_bound(bounds[0], dim, Dim.of(0))
    stop = _symbolic_bound(bounds[1], dim, dim)
    size = _ceil_div(stop - start, step, needs)
    needs += _bounds(start, stop, dim, span)
    return start, Dim.of(step), size


def _symbolic_bound(value: Any, dim: Dim, default: Dim) -> Dim:
    if value is None:
        return default
    bound = Dim.of(value)
    return dim + bound if bound.is_static and bound.value < 0 else bound


def _ceil_div(length: Dim, step: int, needs: list[Requirement | Derived]) -> Dim:
    size = length if step == 1 else (length + (step - 1)).exact_div(step)
    if size is not None:
        return size
    name = derived_symbol(length, step)  # ceil(length / step) is no polynomial: a run-time symbol
    needs.append(Derived(name, length, step))
    return Dim.of(name)


def derived_symbol(length: Dim, step: int) -> str:
    """A stable name for ceil(length / step)."""
    digest = hashlib.sha256(f"{length}/{step}".encode()).hexdigest()[:8]
    return f"ceil{step}_{digest}"


def _bounds(start: Dim, stop: Dim, dim: Dim, span: SourceSpan) -> list[Requirement]:
    """What must hold for [start:stop] to lie within ``dim``, where not provable now."""
    where = f"the index at {span} ({span.text.strip()})"
    return [(expr, f"{where} needs {expr} >= 0") for expr in (start, stop - start, dim - stop)
            if not expr.known_nonnegative()]


# Calls -------------------------------------------------------------------------

def is_numpy(fn: Any) -> bool:
    return _key(fn) in FUNCTIONS


def _key(fn: Any) -> Any:
    try:
        hash(fn)
    except TypeError:
        return None
    return fn


def call(fn: Any, args: list[Any], kwargs: dict[str, Any], span: SourceSpan,
         arg_spans: Sequence[SourceSpan]) -> Any:
    ctx = Ctx(span, arg_spans)
    if isinstance(fn, Method):
        handler = METHODS[fn.name]
        return _invoke(handler, ctx, [fn.node, *args], kwargs, f"{fn.name}()")
    found = FUNCTIONS.get(_key(fn))
    if found is not None:
        return _invoke(found, ctx, args, kwargs, f"np.{getattr(fn, '__name__', fn)}()")
    has_array = any(isinstance(a, Node) for a in [*args, *kwargs.values()])
    if fn is abs and len(args) == 1 and isinstance(args[0], Node):
        return apply(Op.ABS, args, span)
    if fn is len and len(args) == 1 and isinstance(args[0], Node):
        if not args[0].shape:
            raise UserError("len() of a 0-d array", span)
        return fold(args[0].shape[0])
    if (fn in vars(builtins).values() or getattr(fn, "__module__", None) == "math") \
            and not has_array:
        try:
            return fold(fn(*args, **kwargs))
        except Exception as exc:  # the user's compile-time computation failed
            raise UserError(f"{type(exc).__name__}: {exc}", span) from None
    if isinstance(fn, type) and fn in (float, int, bool):
        raise UserError(f"{fn.__name__}() of an array is not supported", span,
                        ".astype(...) for arrays")
    name = getattr(fn, "__qualname__", None) or repr(fn)
    raise UserError(f"calling {name} is not supported", span, SUPPORTED_FUNCTIONS)


def _invoke(handler: Callable[..., Any], ctx: Ctx, args: list[Any], kwargs: dict[str, Any],
            what: str) -> Any:
    try:
        inspect.signature(handler).bind(ctx, *args, **kwargs)
    except TypeError as exc:
        raise UserError(f"{what}: {exc}", ctx.span) from None
    return handler(ctx, *args, **kwargs)


from cuvil_aot.frontend.handlers import FUNCTIONS, METHODS  # noqa: E402
