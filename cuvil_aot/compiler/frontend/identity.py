"""``is``, ``is not``, ``in`` and ``not in``, answered as Python answers them.

The code sees None and Python's own objects as they are, so these compare them as Python
does; an array is never None. A bool argument compared with True or False (``use_cache is
True``, as Hugging Face writes it) is its value, where the call takes exactly True or
False for it (`Function.exact_bools`): ``numpy.True_`` or ``1``, which are not ``True`` to
Python, are refused at the call rather than answered otherwise."""

from __future__ import annotations

from typing import Any

from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import apply
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.errors import SourceSpan


def identity(name: str, left: Any, right: Any, exact_bools: set[int], span: SourceSpan) -> Any:
    """``left <name> right`` for "Is", "IsNot", "In", "NotIn"; ``exact_bools`` collects
    the bool arguments compared with True or False (their parameters' indices)."""
    if name in ("Is", "IsNot"):
        flag, other = (left, right) if _bool_argument(left) else (right, left)
        if _bool_argument(flag) and isinstance(other, bool):
            exact_bools.add(flag.attrs[0])  # so `is True` is the flag itself, `if flag:`'s
            return flag if other == (name == "Is") else apply(Op.INVERT, [flag], span)
        if left is None or right is None:  # an array is never None
            return (left is right) == (name == "Is")
    if isinstance(left, Node) or isinstance(right, Node):
        raise UserError(f"'{name}' on arrays is not supported", span,
                        "compare values: ==, !=" if name in ("Is", "IsNot") else "")
    if name in ("In", "NotIn"):
        return (left in right) == (name == "In")
    return (left is right) == (name == "Is")


def _bool_argument(value: Any) -> bool:
    """A bool argument of the function itself (as the call passes it)."""
    return isinstance(value, Node) and value.op is Op.PARAM and value.type.dtype == "bool" \
        and not value.shape and value.type.weak and not str(value.attrs[1]).startswith("_loop")
