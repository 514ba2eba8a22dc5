"""Python's branching expressions: ``a if c else b``, ``a and b``, ``a or b``.

A condition known at compile time picks what Python would evaluate. One known only at
run time computes both branches and picks one (np.where): ``a and b`` computes ``b`` too.
Gathers in a branch Python may not run (``x[t] if t < n else x[0]``, ``t < n and x[t]``)
are guarded: an index out of range in the
branch Python does not run must not raise: Python never evaluates it. So each gather a
branch adds reads index 0 where the branch is not taken, its indices ``where(c, i, 0)``;
where it is taken, its own indices, checked as any. A gather computed before the branch
(a value the branch only reads) stays as it is: Python ran it.

Before (``x[t] if t < n else x[0]``)::

    where(lt(%t, N), gather(%x, %t), gather(%x, 0))

After::

    where(lt(%t, N), gather(%x, where(lt(%t, N), %t, 0)), gather(%x, 0))

Not guarded: a gather along an empty axis (index 0 is out of range too), and the call's
own checks of sizes (an assumption ``A == B`` or a constant index past a symbolic axis,
made in a branch): these still raise where the branch is not taken.
"""

from __future__ import annotations

import ast
from typing import Any

from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import apply, to_node
from cuvil_aot.compiler.ir.node import Node, rewrite, toposort
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.errors import SourceSpan


def if_exp(interp: Any, expr: ast.IfExp, poison: Any) -> Any:
    """``body if test else orelse``."""
    cond = interp.eval(expr.test)
    if cond is poison:
        return poison
    truth = interp.truth(cond, expr.test)
    if not isinstance(truth, Node):
        return interp.eval(expr.body if truth else expr.orelse)
    before, span = computed([f.scope for f in interp.frames], truth), interp.span(expr)
    body, orelse = interp.eval(expr.body), interp.eval(expr.orelse)
    if body is poison or orelse is poison:
        return poison
    _same_shape(body, orelse, span)
    body = branch(truth, body, before, span)
    orelse = branch(negated(truth, span), orelse, before, span)
    return apply(Op.WHERE, [truth, body, orelse], span)


def bool_op(interp: Any, is_and: bool, values: list[ast.expr], poison: Any) -> Any:
    """``a and b ...`` (``or``) as Python's: the first value that decides; a value known
    only at run time picks between itself and the rest's value then."""
    result = interp.eval(values[0])
    if result is poison or len(values) == 1:
        return result
    truth = interp.truth(result, values[0])
    if not isinstance(truth, Node):
        return bool_op(interp, is_and, values[1:], poison) if truth == is_and else result
    before, span = computed([f.scope for f in interp.frames], truth), interp.span(values[0])
    rest = bool_op(interp, is_and, values[1:], poison)
    if rest is poison:
        return poison
    _same_shape(result, rest, span)
    rest = branch(truth if is_and else negated(truth, span), rest, before, span)
    return apply(Op.WHERE, [truth, *([rest, result] if is_and else [result, rest])], span)


def _same_shape(a: Any, b: Any, span: SourceSpan) -> None:
    """Python returns one of ``a`` and ``b``: where their shapes differ, which shape the
    result has is known only at run time (np.where would broadcast them: refused)."""
    if not all(isinstance(v, Node | bool | int | float) for v in (a, b)):
        return
    shapes = [to_node(v, span).shape for v in (a, b)]
    if shapes[0] != shapes[1]:
        shown = [f"({', '.join(map(str, s))}{',' if len(s) == 1 else ''})" for s in shapes]
        raise UserError(f"the two values this condition picks between have different shapes, "
                        f"{shown[0]} and {shown[1]}: which one Python returns is known only "
                        "at run time", span, "np.where(cond, a, b) broadcasts them")


def computed(scopes: list[dict[str, Any]], *values: Any) -> set[int]:
    """The nodes computed before a branch: what the names of ``scopes`` and ``values``
    hold (in lists and tuples too), and what those are computed from."""
    roots: list[Node] = []
    stack = list(values) + [v for scope in scopes for v in scope.values()]
    while stack:
        value = stack.pop()
        if isinstance(value, Node):
            roots.append(value)
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return {id(n) for n in toposort(roots)}


def branch(taken: Node, value: Any, before: set[int], span: SourceSpan) -> Any:
    """``value`` with each gather it adds to ``before`` reading index 0 where ``taken``
    is False."""
    if not isinstance(value, Node):
        return value

    def guarded(node: Node) -> Node:
        if node.op is not Op.GATHER or id(node) in before:
            return node
        zero = to_node(0, span)
        return node.replace(srcs=(node.srcs[0], *(apply(Op.WHERE, [taken, i, zero], span)
                                                  for i in node.srcs[1:])))

    return rewrite((value,), guarded)[0]


def negated(truth: Node, span: SourceSpan) -> Node:
    """``not truth`` (of a run-time bool)."""
    return apply(Op.INVERT, [truth], span)
