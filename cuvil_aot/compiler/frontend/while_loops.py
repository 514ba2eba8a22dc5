"""``while`` loops: a counted one becomes a ``for`` loop, any other unrolls.

A loop that counts, ``while i < n: ...; i += 1`` (one name compared with a bound the body
does not change, stepped by one constant ``+=`` at the top level of the body, assigned
nowhere else in it), is ``for i in range(i, n, 1)`` over the same body without the step,
where the statements after the step read ``i + 1`` for ``i``. So the counter is the
loop's own variable (a run-time int, loops.py, where ``n`` is known only at run time; a
number of an unrolled loop where it is known now), never a value carried from one
iteration to the next, and after the loop it holds what the ``while`` leaves in it,
computed before the loop: ``i - step * ((i - stop) // step)`` if the loop runs at all.

Any other ``while`` unrolls while its condition is known at compile time (at most
``MAX_UNROLL`` iterations); from where its condition is known only at run time it is a
run-time loop over ``range(trips)``, the trips counted at the call on the numbers the
condition reads (while_trips.py; refused where they come from array data).
"""

from __future__ import annotations

import ast
import copy
from typing import Any

from cuvil_aot.compiler.frontend import loops
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.ir.node import Node

__all__ = ["COUNTED_HINT", "as_counted_for", "run_while"]

COUNTED_HINT = "count with one int: i = 0; while i < n: ...; i += 1 (or for i in range(n))"

# The comparison, with the counter on the left: (range's stop from the bound, step sign).
_COMPARISONS = {ast.Lt: (0, 1), ast.LtE: (1, 1), ast.Gt: (0, -1), ast.GtE: (-1, -1)}
_FLIPPED = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE}


def run_while(interp: Any, stmt: ast.While, poison: Any, max_unroll: int) -> None:
    """Interpret ``stmt``: a counted loop as its ``for`` loop, any other unrolled."""
    counted = as_counted_for(stmt, interp.while_depth)
    if counted is not None:
        interp.while_depth += 1
        try:
            interp.run_block(counted)
        finally:
            interp.while_depth -= 1
        return
    if stmt.orelse:
        raise UserError("while ... else is not supported", interp.span(stmt))
    for _ in range(max_unroll + 1):
        cond = interp.eval(stmt.test)
        if cond is poison:
            return
        truth = interp.truth(cond, stmt.test)
        if isinstance(truth, Node):  # known only at run time from here on
            loop = ast.For(target=ast.Name(f"_while{interp.while_depth}_trip", ast.Store()),
                           iter=ast.Constant(None), body=stmt.body, orelse=[])
            ast.fix_missing_locations(ast.copy_location(loop, stmt))
            loops.run_loop(interp, loop, None, poison, stmt.test)
            return
        if not truth:
            return
        interp.run_block(stmt.body)
    raise UserError(f"while loop of more than {max_unroll} iterations is too long to unroll",
                    interp.span(stmt.test), COUNTED_HINT)


def as_counted_for(stmt: ast.While, depth: int) -> list[ast.stmt] | None:
    """``stmt`` as the statements of the ``for`` loop it counts (the counter's value after
    it saved in ``_while{depth}_exit`` first), or None where it is no counted loop."""
    if stmt.orelse or not isinstance(stmt.test, ast.Compare) or len(stmt.test.ops) != 1:
        return None
    left, compare, right = stmt.test.left, type(stmt.test.ops[0]), stmt.test.comparators[0]
    if compare not in _COMPARISONS:
        return None
    for side, op, bound in ((left, compare, right), (right, _FLIPPED[compare], left)):
        if not isinstance(side, ast.Name):
            continue
        counter = side.id
        found = _step(stmt.body, counter)
        stop_shift, sign = _COMPARISONS[op]
        if found is not None and found[1] * sign > 0 and not _changes(stmt.body) & _reads(bound):
            return _counted(stmt, counter, bound, stop_shift, *found, depth)
    return None


def _counted(stmt: ast.While, counter: str, right: ast.expr, stop_shift: int, at: int,
             step: int, depth: int) -> list[ast.stmt]:
    stop: ast.expr = right
    if stop_shift:
        stop = ast.BinOp(right, ast.Add(), ast.Constant(stop_shift))
    exit_name = f"_while{depth}_exit"
    runs = _arith(counter, ast.Sub(), ast.BinOp(ast.Constant(step), ast.Mult(), ast.BinOp(
        ast.BinOp(ast.Name(counter, ast.Load()), ast.Sub(), copy.deepcopy(stop)),
        ast.FloorDiv(), ast.Constant(step))))
    after = [_stepped(s, counter, step) for s in stmt.body[at + 1:]]
    statements: list[ast.stmt] = [
        ast.Assign([ast.Name(exit_name, ast.Store())],
                   ast.IfExp(copy.deepcopy(stmt.test), runs, ast.Name(counter, ast.Load()))),
        ast.For(target=ast.Name(counter, ast.Store()),
                iter=ast.Call(ast.Name("range", ast.Load()),
                              [ast.Name(counter, ast.Load()), stop, ast.Constant(step)], []),
                body=stmt.body[:at] + after or [ast.Pass()], orelse=[]),
        ast.Assign([ast.Name(counter, ast.Store())], ast.Name(exit_name, ast.Load())),
    ]
    for new in statements:  # diagnostics about them point at the while's condition
        for node in ast.walk(new):
            if not hasattr(node, "lineno"):
                ast.copy_location(node, stmt.test)
    return statements


def _arith(name: str, op: ast.operator, right: ast.expr) -> ast.expr:
    return ast.BinOp(ast.Name(name, ast.Load()), op, right)


def _step(body: list[ast.stmt], counter: str) -> tuple[int, int] | None:
    """(where, constant) of the one ``counter += c`` (or ``-=``) at the top level of
    ``body``, where nothing else in it assigns ``counter``; else None."""
    steps = [i for i, s in enumerate(body) if isinstance(s, ast.AugAssign)
             and isinstance(s.target, ast.Name) and s.target.id == counter]
    if len(steps) != 1:
        return None
    stmt = body[steps[0]]
    assert isinstance(stmt, ast.AugAssign)
    value = stmt.value
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and \
            isinstance(value.operand, ast.Constant) and type(value.operand.value) is int:
        value = ast.Constant(-value.operand.value)
    if not isinstance(stmt.op, ast.Add | ast.Sub) or not isinstance(value, ast.Constant) or \
            type(value.value) is not int:
        return None
    if counter in _assigns(body[:steps[0]] + body[steps[0] + 1:]):
        return None
    return steps[0], value.value if isinstance(stmt.op, ast.Add) else -value.value


class _Stepped(ast.NodeTransformer):
    """Reads of the counter after its step: ``i`` -> ``(i + step)``."""

    def __init__(self, counter: str, step: int):
        self.counter, self.step = counter, step

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id != self.counter or not isinstance(node.ctx, ast.Load):
            return node
        return ast.copy_location(
            ast.BinOp(ast.Name(node.id, ast.Load()), ast.Add(), ast.Constant(self.step)), node)


def _stepped(stmt: ast.stmt, counter: str, step: int) -> ast.stmt:
    new: ast.stmt = _Stepped(counter, step).visit(copy.deepcopy(stmt))
    return ast.fix_missing_locations(new)


def _assigns(body: list[ast.stmt]) -> set[str]:
    return {n.id for s in body for n in ast.walk(s)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _changes(body: list[ast.stmt]) -> set[str]:
    """Names whose values the body may change: assigned, assigned into, or whose methods
    it calls (``q.pop()`` shortens ``len(q)``)."""
    changed = _assigns(body)
    for node in (n for s in body for n in ast.walk(s)):
        target = node.func.value if isinstance(node, ast.Call) and \
            isinstance(node.func, ast.Attribute) else node.value \
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) else None
        if isinstance(target, ast.Name):
            changed.add(target.id)
    return changed


def _reads(expr: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
