"""The NumPy surface the frontend understands: attributes of values and calls.

``attribute`` resolves ``x.shape``, ``x.T`` or a method of an array, and
``call`` dispatches a call to the handler of the NumPy function or array
method (``handlers``), to a builtin or ``math`` function (computed at compile
time on numbers known then, else by its handler), or reports it unsupported.
Calls to the user's own Python functions never get here: the interpreter
inlines them.
"""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Callable, KeysView, Sequence, ValuesView
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from cuvil_aot.compiler.frontend import (
    array_calls,
    composed,
    composed_arrays,
    composed_math,
    composed_more,
    covariance,
    creation,
    einsum,
    gather,
    interpolation,
    linalg,
    linspace,
    quantiles,
    real_parts,
    scans,
    scipy_special,
    searchsorted,
    shapes,
    ufunc_methods,
    windows,
)
from cuvil_aot.compiler.frontend.handlers import FUNCTIONS as CORE_FUNCTIONS
from cuvil_aot.compiler.frontend.handlers import METHODS as CORE_METHODS
from cuvil_aot.compiler.frontend.handlers import PY_FUNCTIONS, Ctx
from cuvil_aot.compiler.frontend.struct_arguments import (
    DICT_METHODS,
    ArgumentDict,
    ArgumentList,
)
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import apply, fold, is_symbolic, run_time_origin
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.types import Dim
from cuvil_aot.errors import SourceSpan

METHODS = {**CORE_METHODS, **creation.METHODS, **gather.METHODS, **shapes.METHODS,
           **scans.METHODS, **composed.METHODS, **array_calls.METHODS}
FUNCTIONS = {**CORE_FUNCTIONS, **creation.FUNCTIONS, **einsum.FUNCTIONS, **gather.FUNCTIONS,
             **linalg.FUNCTIONS, **array_calls.FUNCTIONS, **shapes.FUNCTIONS,
             **scans.FUNCTIONS, **composed.FUNCTIONS,
             **composed_math.FUNCTIONS, **composed_arrays.FUNCTIONS, **real_parts.FUNCTIONS,
             **linspace.FUNCTIONS, **quantiles.FUNCTIONS,
             **searchsorted.FUNCTIONS, **interpolation.FUNCTIONS, **windows.FUNCTIONS,
             **covariance.FUNCTIONS, **composed_more.FUNCTIONS}
FUNCTIONS.update(ufunc_methods.registry(FUNCTIONS))  # np.add.outer, np.maximum.reduce, ...

SUPPORTED_FUNCTIONS = ("np.maximum/minimum/where/clip/exp/expm1/log/log1p/sqrt/square/tanh/sin/"
                       "cos/abs/sign/floor/ceil/round/rint/trunc/fix/reciprocal/isnan/isinf/"
                       "isfinite/nan_to_num/signbit/fmax/fmin/tan/arcsin/arccos/arctan/arctan2/sinh/cosh/"
                       "arcsinh/arccosh/arctanh/exp2/log2/log10/cbrt/hypot/copysign/logaddexp/"
                       "logaddexp2/heaviside/float_power/isclose/allclose/array_equal/real/"
                       "imag/conj/angle/deg2rad/rad2deg/radians/degrees/isin/left_shift/"
                       "right_shift/select/divmod/modf/sinc/polyval/trapezoid, "
                       "np.add/multiply/maximum/...: .outer, "
                       "add/multiply/maximum/minimum/logical_and/logical_or: .reduce, "
                       "add/multiply/maximum/minimum: .accumulate, "
                       "sum/mean/max/min/prod/var/std/argmax/argmin/"
                       "any/all/count_nonzero/ptp/nansum/nanmax/nanmin/nanmean/average/"
                       "median/quantile/percentile/cov/corrcoef, "
                       "matmul/dot/inner/vdot/einsum/tensordot/outer/linalg.norm/"
                       "linalg.matrix_power/trace/"
                       "diagonal/diag/kron/cross, "
                       "transpose/swapaxes/"
                       "moveaxis/reshape/ravel/expand_dims/concatenate/stack/hstack/vstack/"
                       "column_stack/dstack/block/split/broadcast_arrays/meshgrid/"
                       "pad/repeat/tile/flip/rot90/roll/diff/"
                       "lib.stride_tricks.sliding_window_view, "
                       "convolve/correlate, "
                       "take/take_along_axis, array/asarray "
                       "(of arrays, numbers, lists of numbers), arange/linspace/"
                       "zeros/ones/"
                       "full/empty/eye/tri/triu/tril, cumsum/cumprod/sort/argsort/lexsort/"
                       "argpartition/partition/searchsorted/digitize/interp")
SUPPORTED_METHODS = ("sum, mean, max, min, prod, var, std, argmax, argmin, any, all, astype, "
                     "reshape, "
                     "transpose, swapaxes, clip, round, take, squeeze, repeat, cumsum, cumprod, "
                     "argsort, argpartition, item, T, shape, ndim, size, dtype")


@dataclass(frozen=True)
class Method:
    """``x.name`` for an array ``x``, waiting to be called."""

    node: Node
    name: str


# Attributes ----------------------------------------------------------------------

def attribute(value: Any, attr: str, span: SourceSpan) -> Any:
    """``value.attr``: of an array, its shape facts or a method; otherwise Python's."""
    if isinstance(value, Node):
        if attr == "T":
            return C.permute(value, tuple(reversed(range(value.type.ndim))), span)
        if attr == "shape":
            return tuple(fold(d) for d in value.shape)
        if attr == "ndim":
            return value.type.ndim
        if attr == "size":
            return fold(C.total(value.shape))
        if attr == "dtype":
            return np.dtype(value.dtype)
        if attr in ("itemsize", "nbytes"):
            itemsize = np.dtype(value.dtype).itemsize
            return itemsize if attr == "itemsize" else fold(C.total(value.shape) * itemsize)
        if attr in METHODS:
            return Method(value, attr)
        raise UserError(f"the array attribute '{attr}' is not supported", span, SUPPORTED_METHODS)
    try:
        return getattr(value, attr)
    except AttributeError:
        if isinstance(value, ArgumentList) and attr in LIST_METHODS:
            raise UserError(f"the list argument {value.label} is read only in compiled code: "
                            "the caller's list would not change", span,
                            f"a new list: [*{value.label}, ...]") from None
        raise UserError(f"{_describe(value)} has no attribute '{attr}'", span) from None


def _describe(value: Any) -> str:
    name = getattr(value, "__name__", None)
    return f"'{name}'" if name else f"a {type(value).__name__}"


# Calls -------------------------------------------------------------------------

def is_numpy(fn: Any) -> bool:
    """Whether ``fn`` is a NumPy function with a handler (not inlined as Python)."""
    return _key(fn) in FUNCTIONS or scipy_special.handler(fn) is not None


def _key(fn: Any) -> Any:
    try:
        hash(fn)
    except TypeError:
        return None
    return fn


def call(fn: Any, args: list[Any], kwargs: dict[str, Any], span: SourceSpan,
         arg_spans: Sequence[SourceSpan],
         derived: list[tuple[str, Dim, int | Dim]] | None = None,
         requirements: list[C.Requirement] | None = None,
         run_time_records: list[Any] | None = None) -> Any:
    """``fn(*args, **kwargs)`` for anything but the user's own Python functions; sizes the
    call must compute land in ``derived`` and ``run_time_records``, what it must check in
    ``requirements``."""
    ctx = Ctx(span, arg_spans, derived if derived is not None else [],
              requirements if requirements is not None else [],
              run_time_records if run_time_records is not None else [])
    if isinstance(fn, Method):
        handler = METHODS[fn.name]
        return _invoke(handler, ctx, [fn.node, *args], kwargs, f"{fn.name}()")
    if fn is np.where and len(args) == 1 and not kwargs:
        _value_shaped("where", "np.where(cond) (np.nonzero(cond))", span)
    found = FUNCTIONS.get(_key(fn)) or scipy_special.handler(fn)
    if found is not None:
        return _invoke(found, ctx, args, kwargs, f"np.{getattr(fn, '__name__', fn)}()")
    has_array = any(isinstance(a, Node) and a.shape for a in [*args, *kwargs.values()])
    if fn is abs and len(args) == 1 and isinstance(args[0], Node) and args[0].shape:
        return apply(Op.ABS, args, span)
    if fn is len and len(args) == 1 and isinstance(args[0], Node):
        if not args[0].shape:
            raise UserError("len() of a 0-d array", span)
        return fold(args[0].shape[0])
    name = getattr(fn, "__name__", None) or repr(fn)
    run_time = _run_time(args, kwargs)
    py_handler = PY_FUNCTIONS.get(_key(fn))
    if run_time is not None and py_handler is not None and not has_array:
        return _invoke(py_handler, ctx, args, kwargs, f"{name}()")
    if fn is range and run_time is not None and not has_array and not kwargs:
        # of a length the call knows: the array NumPy makes of it (wpe[range(len(ids))])
        return _invoke(FUNCTIONS[_key(np.arange)], ctx, args, {}, "range()")
    if isinstance(getattr(fn, "__self__", None), str) and run_time is None and not has_array:
        try:  # a string's methods on values known now: state-dict keys, "h.{}.w".format(i)
            return fn(*args, **kwargs)
        except (TypeError, ValueError, IndexError, KeyError) as exc:
            raise UserError(f"{type(exc).__name__}: {exc}", span) from None
    if _is_list_method(fn) or _is_dict_method(fn) or fn is dict:  # as Python's, of arrays
        try:
            result = fn(*args, **kwargs)
            return list(result) if isinstance(result, KeysView | ValuesView) else result
        except (TypeError, ValueError, IndexError, KeyError) as exc:
            raise UserError(f"{type(exc).__name__}: {exc}", span) from None
    if fn in (print, input, breakpoint):  # they would run once, at the build
        raise UserError(f"{fn.__name__}() in a compiled function is not supported: it would run "
                        "when the module is built, not at each call", span,
                        "call it outside, or debug in NumPy with f.py_func(...)")
    if _is_python_builtin(fn) and not has_array:
        try:  # dimensions add and multiply as Python ints do: sum(x.shape), len(x.shape)
            return fold(fn(*args, **kwargs))
        except Exception as exc:  # the user's compile-time computation failed
            if run_time is not None:
                raise UserError(f"{name}() of a number known only at run time (from "
                                f"{run_time}) is not supported", span, PY_SUPPORTED) from None
            raise UserError(f"{type(exc).__name__}: {exc}", span) from None
    if isinstance(fn, type) and fn in (float, int, bool):
        raise UserError(f"{fn.__name__}() of an array is not supported", span,
                        ".astype(...) for arrays")
    if getattr(np, name, None) is fn and name in VALUE_SHAPED:
        _value_shaped(name, f"np.{name}()", span)
    name = getattr(fn, "__qualname__", None) or repr(fn)
    raise UserError(f"calling {name} is not supported", span, SUPPORTED_FUNCTIONS)


# NumPy calls whose result's length depends on the array's values. A compiled function's
# shapes follow from its arguments' shapes alone, so these have no compiled form; what
# does the same work at a fixed shape instead.
_BY_MASK = ("a mask of the same shape, e.g. np.where(x > 0, x, 0), np.count_nonzero(x > 0) "
            "or x * (x > 0); or this call outside the compiled function")
_OUTSIDE = "np.sort(x) keeps every value; or this call outside the compiled function"
VALUE_SHAPED = {
    **dict.fromkeys(("where", "nonzero", "argwhere", "flatnonzero", "extract", "compress"),
                    _BY_MASK),
    **dict.fromkeys(("unique", "union1d", "intersect1d", "setdiff1d", "setxor1d", "trim_zeros"),
                    _OUTSIDE),
    "bincount": "counts of a known length n: (x[:, None] == np.arange(n)).sum(axis=0)",
}


def _value_shaped(name: str, call: str, span: SourceSpan) -> NoReturn:
    raise UserError(f"{call} returns an array whose length depends on the values: a "
                    "compiled function's shapes follow from its arguments' shapes", span,
                    VALUE_SHAPED[name])


PY_SUPPORTED = ("float, int, bool, abs, min, max, pow, "
                "math.sqrt/exp/expm1/log/log1p/tanh/sin/cos/fabs/floor/ceil/pow/tan/asin/acos/"
                "atan/sinh/cosh/asinh/acosh/atanh/log2/log10/exp2/cbrt")


LIST_METHODS = frozenset({"append", "extend", "insert", "pop", "reverse", "copy", "index",
                          "count"})


def _is_list_method(fn: Any) -> bool:
    return type(getattr(fn, "__self__", None)) is list and getattr(fn, "__name__", "") \
        in LIST_METHODS


def _is_dict_method(fn: Any) -> bool:
    return isinstance(getattr(fn, "__self__", None), dict | ArgumentDict) \
        and getattr(fn, "__name__", "") in DICT_METHODS


# NumPy's functions of dtypes and axes alone, which its own Python code calls
# (np.put_along_axis: issubdtype, normalize_axis_index): run now, on values known now.
COMPILE_TIME = frozenset({np.issubdtype, np.result_type, np.promote_types, np.can_cast,
                          normalize_axis_index})


def runs_now(fn: Any) -> bool:
    """Whether ``fn`` is one of COMPILE_TIME (not inlined: run on the values)."""
    return _key(fn) in COMPILE_TIME


def _is_python_builtin(fn: Any) -> bool:
    """Python's builtins and math, and COMPILE_TIME: run now, on numbers known now."""
    return fn in vars(builtins).values() or getattr(fn, "__module__", None) == "math" \
        or runs_now(fn)


def _run_time(args: list[Any], kwargs: dict[str, Any]) -> str | None:
    """What the run-time numbers among the arguments come from; None if there are none."""
    flat = [v for a in [*args, *kwargs.values()]
            for v in (a if isinstance(a, tuple | list) else (a,))]
    for v in flat:
        if is_symbolic(v):
            return f"the symbolic dimension {v}"
        if isinstance(v, Node) and not v.shape:
            return run_time_origin(v)
    return None


def _invoke(handler: Callable[..., Any], ctx: Ctx, args: list[Any], kwargs: dict[str, Any],
            what: str) -> Any:
    try:
        inspect.signature(handler).bind(ctx, *args, **kwargs)
    except TypeError as exc:
        hint = f"y[...] = {what[:-1]}...)" if "'out'" in str(exc) else ""
        raise UserError(f"{what}: {exc}", ctx.span, hint) from None
    return handler(ctx, *args, **kwargs)
