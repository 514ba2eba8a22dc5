"""np.piecewise as NumPy's Python code computes it, without its boolean-mask selections:
zeros_like(x), then for each condition in order its function's value (or the constant)
where the condition holds, a later condition overwriting an earlier one; one function
more than conditions is the value where none holds. Each function is called on the whole
array (NumPy calls it on the selected elements): the same values wherever the condition
holds, for functions of one element at a time, which is what piecewise is for. The
functions are the user's (inlined), NumPy's, or NumPy's own helpers (np.i0's pieces)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cuvil_aot.compiler.frontend import builder as B
from cuvil_aot.compiler.frontend.user_error import UserError, checked
from cuvil_aot.compiler.frontend.values import apply, to_node
from cuvil_aot.compiler.ir import construct as C
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.errors import SourceSpan


def piecewise(call: Callable[[Any, list[Any]], Any], span: SourceSpan, x: Any, condlist: Any,
              funclist: Any, *args: Any, **kw: Any) -> Node:
    """``call(f, arguments)`` calls one of ``funclist``'s functions."""
    if kw:
        raise UserError("np.piecewise with keyword arguments for its functions is not "
                        "supported", span, "positional ones")
    values = to_node(x, span)
    conds = [to_node(c, span) for c in (condlist if isinstance(condlist, list | tuple)
                                        else [condlist])]
    funcs = list(funclist) if isinstance(funclist, list | tuple) else [funclist]
    conds = [C.cast(c, "bool", span) for c in conds]
    if len(conds) == len(funcs) - 1:  # the last function where no condition holds
        anywhere = conds[0]
        for c in conds[1:]:
            anywhere = apply(Op.OR, [anywhere, c], span)
        conds.append(apply(Op.EQ, [anywhere, False], span))
    elif len(conds) != len(funcs):
        raise UserError(f"ValueError: with {len(conds)} condition(s), either {len(conds)} or "
                        f"{len(conds) + 1} functions are expected", span)
    out = checked(B.broadcast_to, B.const(0, values.dtype, span), values.shape, span,
                  span=span)  # zeros_like(x)
    for cond, func in zip(conds, funcs):
        piece = call(func, [values, *args]) if callable(func) else func
        piece = C.cast(to_node(piece, span), values.dtype, span)
        out = apply(Op.WHERE, [cond, piece, out], span)
    return checked(B.broadcast_to, out, values.shape, span, span=span)
