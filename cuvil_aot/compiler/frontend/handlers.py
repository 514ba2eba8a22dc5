"""Handlers for NumPy functions and array methods, with NumPy's parameter names.

Each supported NumPy function maps to a handler whose parameters are NumPy's
own, so argument binding errors read like NumPy's. A handler takes the call's
``Ctx`` and the argument values, and builds IR through ``builder``; builder
errors become diagnostics at the call's span. ``FUNCTIONS`` and ``METHODS``
are the registries ``numpy_api.call`` dispatches through.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend import math_errors, reduction_kwargs
from cuvil_aot.compiler.frontend.operators import binary, matmul
from cuvil_aot.compiler.frontend.shape_args import shape_arg
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import (
    apply,
    dtype_arg,
    fold,
    is_number,
    is_symbolic,
    python_value,
    strong,
    to_node,
)
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim, TensorType, is_float, is_int
from cuvil_aot.errors import SourceSpan

Handler = Callable[..., Any]


@dataclass(frozen=True)
class Ctx:
    """What every handler gets first: the call's span and its arguments' spans, and where
    to record sizes the call computes (``derived``: (symbol, length, step) for
    ceil(length / step), as subscript.Derived; ``run_time``: symbols computed from
    run-time ints, ir/run_time.py and ir/loop.py) and what the call must check
    (``requirements``: (expression that must be >= 0, why), as subscript.Requirement)."""

    span: SourceSpan
    arg_spans: Sequence[SourceSpan]
    derived: list[tuple[str, Dim, int | Dim]] = field(default_factory=list)
    requirements: list[C.Requirement] = field(default_factory=list)
    run_time: list[Any] = field(default_factory=list)


# A NumPy function returns NumPy values, strongly typed (NEP 50): np.sqrt(2.0) is an
# np.float64 even where its argument was a Python float. On numbers known now NumPy
# computes it; otherwise the node of a result from Python scalars is made strong.

def now(fn: Any, args: Sequence[Any], ctx: Ctx) -> Any:
    """``fn(*args)`` on numbers known at compile time: NumPy's own scalar result."""
    try:
        with np.errstate(all="ignore"):  # NumPy's warnings (log(0)) are not errors
            out = fn(*(fold(a) for a in args))
    except Exception as exc:  # the user's constant computation failed, as NumPy's would
        raise UserError(f"np.{fn.__name__}(): {type(exc).__name__}: {exc}", ctx.span) from None
    if not is_number(out):
        raise UserError(f"np.{fn.__name__}() gives {np.asarray(out).dtype}, which is not "
                        "supported", ctx.span)
    return out


def unary(fn: Any, op: Op) -> Handler:
    def handler(ctx: Ctx, x: Any, /) -> Any:
        if is_number(x):
            return now(fn, [x], ctx)
        return strong(apply(op, [x], ctx.span))
    return handler


def _binary(fn: Any, op: Op) -> Handler:
    def handler(ctx: Ctx, x1: Any, x2: Any, /) -> Any:
        if is_number(x1) and is_number(x2):
            return now(fn, [x1, x2], ctx)
        if op is Op.POW:
            base = to_node(x1, ctx.span)
            if base.type.weak and to_node(x2, ctx.span).type.weak:  # NumPy's rule, not Python's
                base = strong(base)
            return strong(binary("Pow", base, x2, ctx.span, ctx.span, ctx.span))
        return strong(apply(op, [x1, x2], ctx.span))
    return handler


def _logical(op: Op) -> Handler:
    def handler(ctx: Ctx, x1: Any, x2: Any, /) -> Node:
        a, b = (C.cast(to_node(v, ctx.span), "bool") for v in (x1, x2))
        return strong(apply(op, [a, b], ctx.span))
    return handler


def logical_not(ctx: Ctx, x: Any, /) -> Node:
    return strong(apply(Op.INVERT, [C.cast(to_node(x, ctx.span), "bool")], ctx.span))


def where(ctx: Ctx, condition: Any, x: Any, y: Any, /) -> Node:
    return strong(apply(Op.WHERE, [condition, x, y], ctx.span))


def clip(ctx: Ctx, a: Any, a_min: Any = None, a_max: Any = None) -> Node:
    if a_min is None and a_max is None:
        raise UserError("clip needs a_min or a_max", ctx.span)
    out = to_node(a, ctx.span)
    if a_min is not None:
        out = apply(Op.MAXIMUM, [out, _clip_bound(out, a_min, True, ctx.span)], ctx.span)
    if a_max is not None:
        out = apply(Op.MINIMUM, [out, _clip_bound(out, a_max, False, ctx.span)], ctx.span)
    return strong(out)


def _clip_bound(x: Node, bound: Any, lower: bool, span: SourceSpan) -> Any:
    """A Python int bound of np.clip on an integer array: past the dtype's range on the
    bound's own side it clips nothing and NumPy does not raise (``np.clip(x_int8, -300,
    5)``), so it is the dtype's end; past the other side NumPy raises OverflowError."""
    value = fold(bound)
    python_int = isinstance(value, int) and not isinstance(value, bool) or is_symbolic(value) \
        or isinstance(value, Node) and value.type.weak and value.dtype == "int64"
    if not python_int or not is_int(x.dtype) or x.type.weak:
        return bound
    info = np.iinfo(x.dtype)
    end = int(info.min if lower else info.max)
    if isinstance(value, int):
        return max(value, end) if lower else min(value, end)
    return apply(Op.MAXIMUM if lower else Op.MINIMUM, [value, end], span)


# Reductions ------------------------------------------------------------------------

def axes_arg(axis: Any, ctx: Ctx) -> tuple[int, ...] | None:
    if axis is None:
        return None
    axes = axis if isinstance(axis, tuple | list) else (axis,)
    if not all(isinstance(fold(a), int) for a in axes):
        raise UserError("axis must be an int or a tuple of ints known at compile time", ctx.span)
    return tuple(fold(a) for a in axes)


def _reduction(op: Op) -> Handler:
    """np.sum and np.prod (``op`` SUM, PROD) with NumPy's keyword arguments."""
    def handler(ctx: Ctx, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                keepdims: bool = False, initial: Any = None, where: Any = True) -> Node:
        return _reduced(op, ctx, a, axis, dtype, out, keepdims, initial, where)
    return handler


def _extremum(op: Op) -> Handler:
    """np.max and np.min (``op`` MAX, MIN): NumPy's keyword arguments, no dtype=."""
    def handler(ctx: Ctx, a: Any, axis: Any = None, out: Any = None, keepdims: bool = False,
                initial: Any = None, where: Any = True) -> Node:
        return _reduced(op, ctx, a, axis, None, out, keepdims, initial, where)
    return handler


def _reduced(op: Op, ctx: Ctx, a: Any, axis: Any, dtype: Any, out: Any, keepdims: bool,
             initial: Any, where: Any) -> Node:
    _no_out(out, op.name.lower(), ctx)
    kind = None if dtype is None else dtype_arg(dtype, ctx.span)
    return reduction_kwargs.reduce(op, to_node(a, ctx.span), axes_arg(axis, ctx),
                                   bool(keepdims), kind, initial, where, ctx.span)


def _no_out(out: Any, name: str, ctx: Ctx) -> None:
    if out is not None:
        raise UserError(f"np.{name} with out= is not supported", ctx.span,
                        f"y = np.{name}(x, axis)")


def _arg_reduction(op: Op) -> Handler:
    def handler(ctx: Ctx, a: Any, axis: Any = None, keepdims: bool = False) -> Node:
        x = to_node(a, ctx.span)
        if axis is None:
            flat = checked(C.reshape, x, (-1,), ctx.span, span=ctx.span)
            out = checked(B.reduce, op, flat, (0,), False, ctx.span, span=ctx.span)
            if keepdims:
                out = C.reshape(out, (1,) * x.type.ndim, ctx.span)
            return out
        if isinstance(axis, tuple | list):
            raise UserError(f"{op.name.lower()} takes a single integer axis", ctx.span)
        return checked(B.reduce, op, x, axes_arg(axis, ctx), bool(keepdims), ctx.span,
                       span=ctx.span)
    return handler


def mean(ctx: Ctx, a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
         keepdims: bool = False, *, where: Any = True) -> Node:
    _no_out(out, "mean", ctx)
    x = to_node(a, ctx.span)
    axes = checked(B.normalize_axes, axes_arg(axis, ctx), x.type.ndim, span=ctx.span)
    if dtype is not None or fold(where) is not True:
        kind = None if dtype is None else dtype_arg(dtype, ctx.span)
        return reduction_kwargs.mean(x, axes, bool(keepdims), kind, where, ctx.span)
    if not is_float(x.dtype):
        x = C.cast(x, "float64", ctx.span)
    narrow = x.dtype if x.dtype in ("float16", "bfloat16") else None
    if narrow:  # summed and divided in float32, rounded once (NumPy's way for float16)
        x = C.cast(x, "float32", ctx.span)
    total = checked(B.reduce, Op.SUM, x, axes, bool(keepdims), ctx.span, span=ctx.span)
    result = apply(Op.DIV, [total, fold(B.count(x, axes))], ctx.span)
    return C.cast(result, narrow, ctx.span) if narrow else result


def var(ctx: Ctx, a: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Node:
    x = to_node(a, ctx.span)
    if not is_float(x.dtype):
        x = C.cast(x, "float64", ctx.span)
    axes = checked(B.normalize_axes, axes_arg(axis, ctx), x.type.ndim, span=ctx.span)
    centered = apply(Op.SUB, [x, mean(ctx, x, axes, keepdims=True)], ctx.span)
    sq = checked(B.reduce, Op.SUM, apply(Op.SQUARE, [centered], ctx.span), axes, bool(keepdims),
                ctx.span, span=ctx.span)
    n = B.count(x, axes) - int(ddof)
    return apply(Op.DIV, [sq, fold(n)], ctx.span)


def std(ctx: Ctx, a: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Node:
    return apply(Op.SQRT, [var(ctx, a, axis, ddof, keepdims)], ctx.span)


# Linear algebra and shapes -------------------------------------------------------------

def np_matmul(ctx: Ctx, x1: Any, x2: Any, /) -> Node:
    spans = list(ctx.arg_spans) + [ctx.span] * 2
    return matmul(to_node(x1, ctx.span), to_node(x2, ctx.span), ctx.span, spans[0], spans[1])


def dot(ctx: Ctx, a: Any, b: Any, /) -> Node:
    x, y = to_node(a, ctx.span), to_node(b, ctx.span)
    if x.type.ndim == 0 or y.type.ndim == 0:
        return apply(Op.MUL, [x, y], ctx.span)
    if x.type.ndim > 2 or y.type.ndim > 2:
        raise UserError("np.dot of arrays with more than 2 dimensions is not supported",
                        ctx.span, "np.matmul (@) for batched products")
    return np_matmul(ctx, x, y)


def transpose(ctx: Ctx, a: Any, axes: Any = None) -> Node:
    x = to_node(a, ctx.span)
    perm = tuple(reversed(range(x.type.ndim))) if axes is None else tuple(axes)
    return checked(C.permute, x, perm, ctx.span, span=ctx.span)


def method_transpose(ctx: Ctx, a: Node, *axes: Any) -> Node:
    if len(axes) == 1 and isinstance(axes[0], tuple | list):
        axes = tuple(axes[0])
    return transpose(ctx, a, axes or None)


def reshape(ctx: Ctx, a: Any, shape: Any, /, order: str = "C") -> Node:
    """NumPy's reshape; order 'F' reads and writes the elements first index fastest: the
    reversed axes reshaped to the reversed shape, reversed back. 'A' (by the input's memory
    layout, which a compiled function does not choose) is refused."""
    x = to_node(a, ctx.span)
    if order not in ("C", "F"):
        raise UserError(f"reshape order={order!r} is not supported", ctx.span,
                        "order='C' or order='F'")
    dims = _floor_inferred(x, shape_arg(shape, ctx, "a size of the new shape computed at "
                                        "the call is negative: the compiled reshape infers "
                                        "only a -1 written in the code"), ctx)
    if order == "C":
        return checked(C.reshape, x, dims, ctx.span, span=ctx.span)
    flipped = C.permute(x, tuple(reversed(range(x.type.ndim))), ctx.span)
    out = checked(C.reshape, flipped, tuple(reversed(dims)), ctx.span, span=ctx.span)
    return C.permute(out, tuple(reversed(range(out.type.ndim))), ctx.span)


def _floor_inferred(x: Node, dims: tuple[Any, ...], ctx: Ctx) -> tuple[Any, ...]:
    """A -1 that the other sizes, a constant k, do not divide as polynomials ((B, C, L)
    into (B, 4, -1)): floor(size / k), a size the call computes; the reshape then checks
    at the call that the sizes fit, raising NumPy's ValueError where they do not."""
    minus = [i for i, d in enumerate(dims) if Dim.of(d) == Dim.of(-1)]
    known = C.resolved(C.total(tuple(Dim.of(d) for i, d in enumerate(dims) if i not in minus)))
    size = C.resolved(C.total(x.shape))
    if len(minus) != 1 or len(known.terms) != 1 or size.exact_div(known) is not None:
        return dims
    (monomial, k), = known.terms  # known = k * monomial: size / monomial, then floor by k
    quotient = size.exact_div(Dim(((monomial, 1),)))
    if quotient is None:  # a size known at the call only divides it: (B, T, -1, head_dim)
        return _inferred_at_the_call(dims, minus[0], size, known, ctx)
    if k <= 1 or not quotient.known_nonnegative():
        return dims
    length = quotient - (k - 1)
    name = C.derived_symbol(length, k)
    ctx.derived.append((name, length, k))
    return tuple(Dim.of(name) if i in minus else d for i, d in enumerate(dims))


def _inferred_at_the_call(dims: tuple[Any, ...], minus: int, size: Dim, known: Dim,
                          ctx: Ctx) -> tuple[Any, ...]:
    """The -1 of a reshape whose other sizes the call alone knows (transformers' ``(*shape,
    -1, self.head_dim)``): size / known, computed at the call; the reshape checks there
    that it divides, and a known product below 1 raises NumPy's ValueError."""
    name = C.derived_symbol(size, known)
    ctx.derived.append((name, size, known))
    shape: list[str | Dim] = ["("]
    for i, d in enumerate(dims):
        shape += [("," if i else ""), "newaxis" if i == minus else Dim.of(d)]
    ctx.requirements.append((known - 1, C.Raises("ValueError", (
        "cannot reshape array of size ", size, " into shape ", *shape, ")"))))
    return tuple(Dim.of(name) if i == minus else d for i, d in enumerate(dims))


def method_reshape(ctx: Ctx, a: Node, *shape: Any, order: str = "C") -> Node:
    return reshape(ctx, a, shape[0] if len(shape) == 1 else shape, order)


def flatten(ctx: Ctx, a: Node, order: str = "C") -> Node:
    return reshape(ctx, a, (-1,), order)


def expand_dims(ctx: Ctx, a: Any, axis: Any) -> Node:
    x = to_node(a, ctx.span)
    axes = axis if isinstance(axis, tuple | list) else (axis,)
    ndim = x.type.ndim + len(axes)
    norm = checked(B.normalize_axes, axes, ndim, span=ctx.span)
    dims = iter(x.shape)
    shape = tuple(Dim.of(1) if i in norm else next(dims) for i in range(ndim))
    return C.reshape(x, shape, ctx.span)


def squeeze(ctx: Ctx, a: Any, axis: Any = None) -> Node:
    x = to_node(a, ctx.span)
    if axis is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == Dim.of(1))
    else:
        axes = checked(B.normalize_axes, axes_arg(axis, ctx), x.type.ndim, span=ctx.span)
        for i in axes:
            if x.shape[i] != Dim.of(1):
                raise UserError("cannot select an axis to squeeze out which has size not "
                                "equal to one", ctx.span)
    return C.reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes), ctx.span)


def _sequence(arrays: Any, ctx: Ctx) -> list[Node]:
    if not isinstance(arrays, tuple | list):
        raise UserError("expected a tuple or list of arrays", ctx.span)
    return [to_node(a, ctx.span) for a in arrays]


def concatenate(ctx: Ctx, arrays: Any, /, axis: int = 0) -> Node:
    return checked(B.concat, _sequence(arrays, ctx), axis, ctx.span, span=ctx.span)


def stack(ctx: Ctx, arrays: Any, axis: int = 0) -> Node:
    return checked(B.stack, _sequence(arrays, ctx), axis, ctx.span, span=ctx.span)


def broadcast_to(ctx: Ctx, array: Any, shape: Any) -> Node:
    dims = tuple(Dim.of(d) for d in shape_arg(shape, ctx))
    return checked(B.broadcast_to, to_node(array, ctx.span), dims, ctx.span, span=ctx.span)


def copy(ctx: Ctx, a: Node) -> Node:
    """A new array (assign.py must not write the original through it); fusion drops it."""
    return Node(Op.CAST, TensorType(a.dtype, a.shape), (a,), span=ctx.span)


def _scalar_type(dtype: str) -> Handler:
    """np.float32(v) and its kin: a NumPy scalar now, or a strongly typed cast."""
    def handler(ctx: Ctx, value: Any = 0, /) -> Any:
        if isinstance(value, Node) or is_symbolic(value):
            return strong(C.cast(to_node(value, ctx.span), dtype, ctx.span))
        if not is_number(value):
            raise UserError(f"np.{np.dtype(dtype).type.__name__}() of "
                            f"{type(value).__name__} is not supported", ctx.span)
        with np.errstate(all="ignore"):
            return np.asarray(fold(value)).astype(dtype)[()]
    return handler


# Python's builtins and math functions on numbers known only at run time: Python values
# (weak), as Python computes them. On numbers known now Python itself runs them.

def _py_convert(kind: type) -> Handler:
    def handler(ctx: Ctx, x: Any = 0, /) -> Any:
        return python_value(x, kind, ctx.span)
    return handler


def _py_math(fn: Callable[[float], float], op: Op, to_int: bool = False) -> Handler:
    """math.sqrt and its kin: a float of a float, Python's errors at the call where they
    raise (math_errors.py); math.floor and math.ceil: an int."""
    def handler(ctx: Ctx, x: Any, /) -> Any:
        if to_int and not is_float(to_node(x, ctx.span).dtype):
            return python_value(x, int, ctx.span)  # math.floor(n) is n for an int
        number = python_value(x, float, ctx.span)
        out = apply(op, [number], ctx.span)
        math_errors.check(fn, [number], out, ctx.span)
        return python_value(out, int, ctx.span) if to_int else out
    return handler


def py_pow(ctx: Ctx, x: Any, y: Any, /) -> Node:
    numbers = [python_value(v, float, ctx.span) for v in (x, y)]
    out = apply(Op.POW, numbers, ctx.span)
    math_errors.check(math.pow, numbers, out, ctx.span)
    return out


def py_abs(ctx: Ctx, x: Any, /) -> Any:
    if isinstance(x, Dim) and x.known_nonnegative():
        return x  # a size, or a sum of sizes
    node = to_node(x, ctx.span)
    if node.type.weak and node.dtype == "bool":
        node = python_value(node, int, ctx.span)  # abs(True) == 1
    return apply(Op.ABS, [node], ctx.span)


def _py_extremum(better: str) -> Handler:
    """min / max of numbers: the first one no other beats, as Python picks it."""
    def handler(ctx: Ctx, *args: Any) -> Any:
        values = list(args[0]) if len(args) == 1 and isinstance(args[0], tuple | list) \
            else list(args)
        if not values:
            raise UserError("expected at least one number", ctx.span)
        result = values[0]
        for v in values[1:]:
            beats = binary(better, v, result, ctx.span, ctx.span, ctx.span)
            if isinstance(beats, Node):
                result = apply(Op.WHERE, [beats, v, result], ctx.span)
            elif beats:
                result = v
        return result
    return handler


def py_power(ctx: Ctx, base: Any, exp: Any, /) -> Any:
    return binary("Pow", base, exp, ctx.span, ctx.span, ctx.span)


PY_FUNCTIONS: dict[Any, Handler] = {
    float: _py_convert(float), int: _py_convert(int), bool: _py_convert(bool), abs: py_abs,
    pow: py_power,
    min: _py_extremum("Lt"), max: _py_extremum("Gt"), math.pow: py_pow,
    math.floor: _py_math(math.floor, Op.FLOOR, True),
    math.ceil: _py_math(math.ceil, Op.CEIL, True),
    **{getattr(math, name): _py_math(getattr(math, name), op) for name, op in (  # exp2, cbrt: 3.11
        ("sqrt", Op.SQRT), ("exp", Op.EXP), ("expm1", Op.EXPM1), ("log", Op.LOG),
        ("log1p", Op.LOG1P), ("tanh", Op.TANH), ("sin", Op.SIN), ("cos", Op.COS),
        ("fabs", Op.ABS), ("tan", Op.TAN), ("asin", Op.ARCSIN), ("acos", Op.ARCCOS),
        ("atan", Op.ARCTAN), ("sinh", Op.SINH), ("cosh", Op.COSH), ("asinh", Op.ARCSINH),
        ("acosh", Op.ARCCOSH), ("atanh", Op.ARCTANH), ("log2", Op.LOG2), ("log10", Op.LOG10),
        ("exp2", Op.EXP2), ("cbrt", Op.CBRT), ("erf", Op.ERF)) if hasattr(math, name)},
}

UNARY = {np.exp: Op.EXP, np.expm1: Op.EXPM1, np.log: Op.LOG, np.log1p: Op.LOG1P,
         np.sqrt: Op.SQRT, np.square: Op.SQUARE, np.tanh: Op.TANH, np.sin: Op.SIN,
         np.cos: Op.COS, np.abs: Op.ABS, np.absolute: Op.ABS, np.sign: Op.SIGN,
         np.floor: Op.FLOOR, np.ceil: Op.CEIL, np.negative: Op.NEG, np.invert: Op.INVERT,
         np.tan: Op.TAN, np.arcsin: Op.ARCSIN, np.arccos: Op.ARCCOS, np.arctan: Op.ARCTAN,
         np.sinh: Op.SINH, np.cosh: Op.COSH, np.arcsinh: Op.ARCSINH, np.arccosh: Op.ARCCOSH,
         np.arctanh: Op.ARCTANH, np.exp2: Op.EXP2, np.log2: Op.LOG2, np.log10: Op.LOG10,
         np.cbrt: Op.CBRT}
BINARY = {np.add: Op.ADD, np.subtract: Op.SUB, np.multiply: Op.MUL, np.divide: Op.DIV,
          np.true_divide: Op.DIV, np.floor_divide: Op.FLOORDIV, np.remainder: Op.MOD,
          np.mod: Op.MOD, np.power: Op.POW, np.maximum: Op.MAXIMUM, np.minimum: Op.MINIMUM,
          np.less: Op.LT, np.less_equal: Op.LE, np.greater: Op.GT, np.greater_equal: Op.GE,
          np.equal: Op.EQ, np.not_equal: Op.NE, np.bitwise_and: Op.AND, np.bitwise_or: Op.OR,
          np.bitwise_xor: Op.XOR, np.arctan2: Op.ARCTAN2, np.hypot: Op.HYPOT,
          np.left_shift: Op.LSHIFT, np.right_shift: Op.RSHIFT,
          np.copysign: Op.COPYSIGN}
REDUCTIONS = {np.sum: _reduction(Op.SUM), np.prod: _reduction(Op.PROD),
              np.max: _extremum(Op.MAX), np.amax: _extremum(Op.MAX), np.min: _extremum(Op.MIN),
              np.amin: _extremum(Op.MIN)}

FUNCTIONS: dict[Any, Handler] = {
    **{fn: unary(fn, op) for fn, op in UNARY.items()},
    **{fn: _binary(fn, op) for fn, op in BINARY.items()},
    **REDUCTIONS,
    np.logical_and: _logical(Op.AND), np.logical_or: _logical(Op.OR),
    np.logical_xor: _logical(Op.XOR), np.logical_not: logical_not,
    np.where: where, np.clip: clip, np.mean: mean, np.var: var, np.std: std,
    np.argmax: _arg_reduction(Op.ARGMAX), np.argmin: _arg_reduction(Op.ARGMIN),
    np.matmul: np_matmul, np.dot: dot, np.transpose: transpose, np.reshape: reshape,
    np.expand_dims: expand_dims, np.squeeze: squeeze, np.concatenate: concatenate,
    np.stack: stack, np.broadcast_to: broadcast_to,
    **{getattr(np, d): _scalar_type(d) for d in ("float16", "float32", "float64", "int32",
                                                 "int64", "int8", "int16", "uint8", "uint64")},
}
FUNCTIONS[np.bool_] = _scalar_type("bool")

METHODS: dict[str, Handler] = {
    "sum": _reduction(Op.SUM), "prod": _reduction(Op.PROD), "max": _extremum(Op.MAX),
    "min": _extremum(Op.MIN), "mean": mean, "var": var, "std": std,
    "argmax": _arg_reduction(Op.ARGMAX), "argmin": _arg_reduction(Op.ARGMIN),
    "reshape": method_reshape, "transpose": method_transpose, "clip": clip,
    "squeeze": squeeze, "flatten": flatten, "ravel": flatten, "copy": copy, "dot": dot,
}

