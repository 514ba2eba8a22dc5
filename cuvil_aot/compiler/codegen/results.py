"""The value a wrapper returns, laid out as the function returns it (`Function.returns`):
None, one output, or a tuple of them, nested (``return out, (k, v)``, ``return y, None``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cuvil_aot.compiler.codegen.writer import Writer


def write_result(w: Writer, returns: Any, output: Callable[[int], str]) -> None:
    """``result =`` the return value; ``output(k)``, a C expression of a new reference to
    output k's object (NULL where that failed, with the error set)."""
    w.line(f"result = {_expression(returns, output)};")
    w.line("if (!result) goto done;")


def _expression(returns: Any, output: Callable[[int], str]) -> str:
    if returns is None:
        return "Py_NewRef(Py_None)"
    if isinstance(returns, int):
        return output(returns)
    items = "".join(f", {_expression(r, output)}" for r in returns)
    return f"cv_tuple_of({len(returns)}{items})"
