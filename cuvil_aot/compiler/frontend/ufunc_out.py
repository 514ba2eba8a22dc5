"""``out=`` of NumPy's ufuncs and ``np.clip``: ``np.maximum(h, 0, out=h)``, ``np.exp(x,
out=x)``, ``np.add(a, b, out=c[:, :4])``, as an assignment (assign.py) that NumPy's rules
shape: the result is computed as without out=, cast to out's dtype with ``same_kind``
(NumPy's UFuncTypeError where it cannot be), broadcast to out's shape (NumPy's ValueError
where out is the smaller), written into out, and the call's value is out itself, the
array after the write. ``where=`` beside out= keeps out's old elements where the mask is
False. An out= through an integer-array or mask index is the copy NumPy makes of it: the
result lands there and the array is not written, as in NumPy.

The analyses that look for writes in a body (a run-time loop's, a run-time if's) read
``targets`` and ``written_names``."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

import numpy as np

from cuvil_aot.compiler.frontend import assign, calls, scatter
from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import strong, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.construct import ShapeError
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.types import shape_str
from cuvil_aot.errors import SourceSpan

if TYPE_CHECKING:
    from cuvil_aot.compiler.frontend.interp import Interpreter


def targets(call: ast.Call) -> list[ast.expr]:
    """The expressions a call names as its outputs with out= (one, or a tuple; None
    entries left out)."""
    for kw in call.keywords:
        if kw.arg == "out":
            elts = kw.value.elts if isinstance(kw.value, ast.Tuple) else [kw.value]
            return [e for e in elts if not (isinstance(e, ast.Constant) and e.value is None)]
    return []


def written_names(call: ast.Call) -> set[str]:
    """The names whose arrays a call's out= writes (``out=y`` and ``out=y[i]``)."""
    names = set()
    for target in targets(call):
        if isinstance(target, ast.Subscript):
            target = target.value
        if isinstance(target, ast.Name):
            names.add(target.id)
    return names


def applies(fn: Any, call: ast.Call) -> bool:
    """Whether ``fn(...)`` is a ufunc's or np.clip's call naming outputs: out=, or a
    ufunc's positional ones (other functions' handlers refuse their out=)."""
    if not (isinstance(fn, np.ufunc) or fn is np.clip):
        return False
    positional = (isinstance(fn, np.ufunc) and len(call.args) > fn.nin
                  and not any(isinstance(a, ast.Starred) for a in call.args))
    return bool(targets(call)) or positional


def call(interp: Interpreter, fn: Any, expr: ast.Call, poison: Any) -> Any:
    """``fn(..., out=...)``: the result written into out, out the value."""
    span = interp.span(expr)
    name = getattr(fn, "__name__", repr(fn))
    if isinstance(fn, np.ufunc) and len(expr.args) > fn.nin:
        raise UserError(f"np.{name}(): outputs given by position are not supported",
                        interp.span(expr.args[fn.nin]), "out=y")
    outs = targets(expr)
    nout = fn.nout if isinstance(fn, np.ufunc) else 1
    if len(outs) != nout:
        raise UserError(f"ValueError: The 'out' tuple must have exactly {nout} entries: one "
                        "per ufunc output", span)
    args = interp.eval_starred(expr.args)
    kwargs = calls.keywords(interp, [kw for kw in expr.keywords if kw.arg != "out"], poison)
    where = [kwargs.pop("where")] if "where" in kwargs else []
    if any(v is poison for v in [*args, *kwargs.values(), *where]):
        return poison
    result = calls.call_value(interp, fn, args, kwargs, span, [interp.span(a) for a in expr.args])
    results = result if nout > 1 else (result,)
    stored = tuple(_store(interp, t, r, where, name, span) for t, r in zip(outs, results))
    return stored if nout > 1 else stored[0]


def _store(interp: Interpreter, target: ast.expr, result: Any, where: list[Any], ufunc: str,
           span: SourceSpan) -> Node:
    """``target`` with ``result`` written into it (``where``: [mask] or [])."""
    index: Any = Ellipsis
    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
        label, old = target.value.id, interp.load_name(target.value.id, target.value)
        index = interp.eval(target.slice)
        current = interp.subscript(old, index, target)
    else:
        label, old = ast.unparse(target), interp.eval(target)
        current = old
    if not isinstance(current, Node) or (not current.shape and current.type.weak):
        raise UserError(f"TypeError: return arrays must be of ArrayType ('{label}' is "
                        f"{interp.describe(current)})", interp.span(target))
    value = _fitted(to_node(result, span), current, ufunc, span)
    if where:
        value = calls.call_value(interp, np.where, [where[0], value, current], {}, span, [span])
    items = list(index) if isinstance(index, tuple) else [index]
    if scatter.has_arrays(items):  # out is NumPy's copy of those elements: no write
        return value
    owner = assign.owner_of(interp, old, label, span)
    new = assign.update(interp, old, index, value, span)
    assign.rebind(interp, old, new, owner, span)
    return new if index is Ellipsis else interp.subscript(new, index, target)


def _fitted(value: Node, out: Node, ufunc: str, span: SourceSpan) -> Node:
    """``value`` cast to out's dtype as a ufunc casts its output, in out's shape."""
    if not np.can_cast(value.dtype, out.dtype, "same_kind"):
        raise UserError(f"UFuncTypeError: Cannot cast ufunc '{ufunc}' output from "
                        f"dtype('{value.dtype}') to dtype('{out.dtype}') with casting rule "
                        "'same_kind'", span, "y[...] = np.f(...).astype(y.dtype)")
    value = strong(C.cast(value, out.dtype, span))
    try:
        if value.type.ndim > out.type.ndim:
            raise ShapeError("more axes")
        return B.broadcast_to(value, out.shape, span)
    except ShapeError:
        raise UserError(f"ValueError: non-broadcastable output operand with shape "
                        f"{shape_str(out.shape)} doesn't match the broadcast shape "
                        f"{shape_str(value.shape)}", span) from None
