"""Loops whose trip count is known only at run time: refused, with what to write instead.

The interpreter unrolls every loop (``for _ in range(N)`` with N a constant), so what
reaches the IR is a straight-line graph. ``for t in range(xs.shape[1])`` over a
symbolic dimension, or ``range(n)`` of an int parameter, would need the generated code
to run a group of kernels n times with loop-carried arrays (an IR loop whose body is a
sub-graph, its carried values double-buffered): not built yet, so such a loop is
refused at its ``for`` line, before its body is interpreted.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import is_symbolic, run_time_origin, to_node
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.errors import SourceSpan

HINT = ("a constant trip count: a static size in the signature (cv.f32[\"B\", 16, \"I\"]) or "
        "range(16), which unrolls; or keep the loop in Python and mark its body (one step) "
        "with @cuvil_aot.optimize")


def check_range(stmt: ast.For, evaluate: Callable[[ast.expr], Any], span: SourceSpan) -> None:
    """Refuse ``for ... in range(...)`` whose arguments are known only at run time."""
    call = stmt.iter
    if not isinstance(call, ast.Call) or call.keywords or \
            any(isinstance(a, ast.Starred) for a in call.args) or evaluate(call.func) is not range:
        return
    for arg in call.args:
        value = evaluate(arg)
        if isinstance(value, Node) and not value.shape or is_symbolic(value):
            origin = run_time_origin(to_node(value, span))
            raise UserError(f"a for loop over range() of a number known only at run time "
                            f"({origin}) is not supported: loops are unrolled while "
                            "compiling, so the trip count must be a constant", span, HINT)
