"""An exception's message as Python formats it, from ``assert test, message`` or ``if c:
raise E(f"...")``: what is known at compile time in its place (a format spec or conversion
applied as Python applies them), and where the check is made at the call, each int known
only then (a dimension, an int argument, arithmetic on them) as a number the wrapper prints
there (ir/run_time.Text); anything else as its ``{expression}``."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from cuvil_aot.compiler.frontend import call_checks
from cuvil_aot.compiler.frontend.builder import const
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import fold
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.types import Dim

_CONVERSIONS: dict[int, Callable[[Any], str]] = {ord("s"): str, ord("r"): repr, ord("a"): ascii}


def text(interp: Any, node: ast.expr) -> str:
    """The message where it is raised now: what is known only at the call as
    ``{expression}``."""
    return "".join(p for p in parts(interp, node, at_the_call=False) if isinstance(p, str))


def parts(interp: Any, node: ast.expr, at_the_call: bool = True) -> tuple[str | Node, ...]:
    """The message's text and, ``at_the_call``, its ints known only at the call (0-d int64
    nodes the wrapper prints as Python prints ints)."""
    pieces = node.values if isinstance(node, ast.JoinedStr) else [node]
    out: list[str | Node] = []
    for piece in pieces:
        if isinstance(piece, ast.Constant):
            out.append(str(piece.value))
            continue
        expr = piece.value if isinstance(piece, ast.FormattedValue) else piece
        conversion = piece.conversion if isinstance(piece, ast.FormattedValue) else -1
        spec = _spec(piece.format_spec) if isinstance(piece, ast.FormattedValue) else ""
        try:
            value = fold(interp.eval(expr))
        except UserError:
            value = None
        if isinstance(value, Dim) and value.is_static:
            value = value.value
        if _known(value) and spec is not None:
            shown = value if conversion == -1 else _CONVERSIONS[conversion](value)
            out.append(format(shown, spec))
        elif at_the_call and spec == "" and _int_at_the_call(value):  # str, repr: as %lld
            out.append(const(value, "int64") if isinstance(value, Dim) else value)
        else:
            out.append("{" + ast.unparse(expr) + "}")
    return tuple(out)


def _spec(node: ast.expr | None) -> str | None:
    """A format spec written as text (``:.2f``), else None (one with ``{...}`` in it)."""
    if node is None:
        return ""
    values = node.values if isinstance(node, ast.JoinedStr) else [node]
    if all(isinstance(v, ast.Constant) for v in values):
        return "".join(str(v.value) for v in values)  # type: ignore[attr-defined]
    return None


def _known(value: Any) -> bool:
    return isinstance(value, str | int | float | tuple) and not (
        isinstance(value, tuple) and any(isinstance(v, Dim | Node) for v in value))


def _int_at_the_call(value: Any) -> bool:
    """A dimension, or a 0-d int the wrapper computes before the kernels."""
    if isinstance(value, Dim):
        return True
    return isinstance(value, Node) and not value.shape and value.dtype.startswith(
        ("int", "uint")) and call_checks.known_before_the_kernels(value)
