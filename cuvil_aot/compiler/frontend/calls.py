"""What a call in a compiled function does, by what it calls: a ``def`` or lambda of the
function (local_functions.py), a user's Python function or a method through ``self``
(methods.py), inlined by the interpreter;
``map`` of one over lists known at compile time, unrolled; ``functools.partial`` of any of
them, its arguments put in front at the call; ``sum`` of a list of arrays,
``isinstance`` of an array; NumPy's own
Python functions likewise, and those behind a dispatcher through its ``_implementation``
where that code compiles (np.i0), else the call's own diagnostic (numpy_api); np.piecewise
with its pieces called here (piecewise.py); everything else by its handler (numpy_api)."""

from __future__ import annotations

import ast
import dataclasses
import functools
import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from cuvil_aot.compiler.frontend import (
    local_functions,
    methods,
    numpy_api,
    piecewise,
    scipy_special,
)
from cuvil_aot.compiler.frontend.operators import binary
from cuvil_aot.compiler.frontend.struct_arguments import ArgumentObject
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import GENERATED, is_dict_key
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.types import is_float, is_int
from cuvil_aot.errors import SourceSpan

if TYPE_CHECKING:
    from cuvil_aot.compiler.frontend.interp import Interpreter


def call_value(interp: Interpreter, fn: Any, args: list[Any], kwargs: dict[str, Any],
               span: SourceSpan, arg_spans: list[SourceSpan]) -> Any:
    """``fn(*args, **kwargs)`` in ``interp``'s function."""
    if isinstance(fn, local_functions.LocalFunction):
        return interp.call_local(fn, args, kwargs, span)
    if isinstance(fn, ArgumentObject):  # self.layer(x): its class's __call__
        fn = methods.called(fn, span)
    if args and isinstance(args[0], ArgumentObject) and fn in (getattr, hasattr, isinstance):
        return methods.builtin(interp, fn, args, span)
    if isinstance(fn, methods.BoundMethod):  # self.f(x): f(self, x), inlined
        return interp.call_function(fn.func, [fn.first, *args], kwargs, span)
    if fn is functools.partial and args:  # made in the function: what it will call with
        return Partial(args[0], tuple(args[1:]), kwargs)
    if isinstance(fn, Partial | functools.partial):  # Python's order: its arguments first
        return call_value(interp, fn.func, [*fn.args, *args], {**fn.keywords, **kwargs}, span,
                          [span] * len(fn.args) + arg_spans)
    if any(isinstance(a, GENERATED) for a in [*args, *kwargs.values()]) \
            and _numpy_function(fn):
        raise UserError(f"{getattr(fn, '__name__', 'this NumPy function')}() of a generator "
                        "expression: NumPy wants a sequence here (its TypeError)", span,
                        "a list: [... for ...]")
    if fn is sum and args and isinstance(args[0], GENERATED):
        args = [list(args[0]), *args[1:]]  # used up, as Python's sum uses it up
    if fn is sum and 1 <= len(args) <= 2 and not kwargs and isinstance(args[0], list | tuple) \
            and any(isinstance(a, Node) for a in args[0]):  # sum(heads): Python's additions
        total = args[1] if len(args) == 2 else 0
        for item in args[0]:
            total = binary("Add", total, item, span, span, span)
        return total
    if fn is isinstance and len(args) == 2 and isinstance(args[0], Node):
        return _isinstance(args[0], args[1], span)
    if fn is map and args and not kwargs:  # unrolled: a list, which list() and for take
        return [call_value(interp, args[0], list(a), {}, span, [span] * len(a))
                for a in zip(*args[1:])]
    if fn is np.piecewise:
        return piecewise.piecewise(
            lambda f, a: call_value(interp, f, a, {}, span, [span] * len(a)), span,
            *args, **kwargs)
    form = scipy_special.python_form(fn)  # scipy.special.softmax: its NumPy form
    if form is not None:
        return interp.call_function(form, args, kwargs, span)
    target = getattr(fn, "py_func", fn)  # a decorated function inlines its Python body
    if isinstance(target, types.FunctionType) and not numpy_api.is_numpy(target) \
            and not numpy_api.runs_now(target):
        return interp.call_function(target, args, kwargs, span)
    implementation = getattr(target, "_implementation", None)
    if isinstance(implementation, types.FunctionType) and not numpy_api.is_numpy(target):
        try:  # a NumPy dispatcher without a handler: its Python code (np.i0)
            return interp.call_function(implementation, args, kwargs, span)
        except UserError:  # that code does not compile: the call's own diagnostic
            pass
    return numpy_api.call(fn, args, kwargs, span, arg_spans, interp.derived,
                          interp.requirements, interp.run_time)


@dataclasses.dataclass(frozen=True)
class Partial:
    """``functools.partial(f, *args, **keywords)`` made in the compiled function (its
    arguments may be arrays of the function, which a real partial could not hold here)."""
    func: Any
    args: tuple[Any, ...]
    keywords: dict[str, Any]


def _numpy_function(fn: Any) -> bool:
    """``fn`` is one of NumPy's (a ufunc, a function, an array's method)."""
    module = getattr(getattr(fn, "py_func", fn), "__module__", None) or ""
    return isinstance(fn, np.ufunc | numpy_api.Method) or module.partition(".")[0] == "numpy"


def keywords(interp: Interpreter, nodes: list[ast.keyword], poison: Any) -> dict[str, Any]:
    """A call's keyword arguments, ``**d`` of a dict merged in as Python merges it."""
    out: dict[str, Any] = {}
    for kw in nodes:
        value = interp.eval(kw.value)
        if value is poison:
            return {kw.arg or "**": poison}
        pairs = [(kw.arg, value)] if kw.arg is not None else _mapping(value, interp.span(kw.value))
        for key, item in pairs:
            if key in out:
                raise UserError(f"TypeError: got multiple values for keyword argument '{key}'",
                                interp.span(kw.value))
            out[key] = item
    return out


def dict_display(interp: Interpreter, expr: ast.Dict, poison: Any) -> Any:
    """``{"w": w, "b": b, **d}``: a Python dict, its keys known at compile time."""
    out: dict[Any, Any] = {}
    for key_node, value_node in zip(expr.keys, expr.values):
        value = interp.eval(value_node)
        if value is poison:
            return poison
        if key_node is None:
            out.update(_mapping(value, interp.span(value_node)))
            continue
        key = interp.eval(key_node)
        if key is poison:
            return poison
        if not is_dict_key(key):
            raise UserError("a dict key must be known at compile time", interp.span(key_node),
                            '{"w": w}')
        out[key] = value
    return out


def _mapping(value: Any, span: SourceSpan) -> list[tuple[str, Any]]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise UserError(f"** of {type(value).__name__} is not supported: a dict with str "
                        "keys", span)
    return list(value.items())


def _isinstance(value: Node, classes: Any, span: SourceSpan) -> bool:
    """``isinstance`` of an array (np.ndarray) or of a Python number known only at run
    time (its int, float or bool); a 0-d array could be NumPy's scalar: refused."""
    if value.shape:
        kind: type = np.ndarray
    elif value.type.weak:
        kind = float if is_float(value.dtype) else int if is_int(value.dtype) else bool
    else:
        raise UserError("isinstance() of a 0-d array, which NumPy may hand out as a scalar, "
                        "is not supported", span, "x.ndim == 0")
    try:
        return isinstance(classes, type | tuple) and issubclass(kind, classes)
    except TypeError as exc:
        raise UserError(f"TypeError: {exc}", span) from None
