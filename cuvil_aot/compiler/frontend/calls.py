"""What a call in a compiled function does, by what it calls: a ``def`` of the function
(local_functions.py) or a user's Python function, inlined by the interpreter; NumPy's own
Python functions likewise, and those behind a dispatcher through its ``_implementation``
where that code compiles (np.i0), else the call's own diagnostic (numpy_api); np.piecewise
with its pieces called here (piecewise.py); everything else by its handler (numpy_api)."""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

import numpy as np

from cuvil_aot.compiler.frontend import local_functions, numpy_api, piecewise
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.errors import SourceSpan

if TYPE_CHECKING:
    from cuvil_aot.compiler.frontend.interp import Interpreter


def call_value(interp: Interpreter, fn: Any, args: list[Any], kwargs: dict[str, Any],
               span: SourceSpan, arg_spans: list[SourceSpan]) -> Any:
    """``fn(*args, **kwargs)`` in ``interp``'s function."""
    if isinstance(fn, local_functions.LocalFunction):
        return interp.call_local(fn, args, kwargs, span)
    if fn is np.piecewise:
        return piecewise.piecewise(
            lambda f, a: call_value(interp, f, a, {}, span, [span] * len(a)), span,
            *args, **kwargs)
    target = getattr(fn, "py_func", fn)  # a decorated function inlines its Python body
    if isinstance(target, types.FunctionType) and not numpy_api.is_numpy(target):
        return interp.call_function(target, args, kwargs, span)
    implementation = getattr(target, "_implementation", None)
    if isinstance(implementation, types.FunctionType) and not numpy_api.is_numpy(target):
        try:  # a NumPy dispatcher without a handler: its Python code (np.i0)
            return interp.call_function(implementation, args, kwargs, span)
        except UserError:  # that code does not compile: the call's own diagnostic
            pass
    return numpy_api.call(fn, args, kwargs, span, arg_spans, interp.derived,
                          interp.requirements, interp.run_time)
