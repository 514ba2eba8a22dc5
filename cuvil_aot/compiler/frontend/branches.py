"""Python's branches: ``a if c else b``, ``a and b``, ``a or b``, and ``if`` statements.

A condition known at compile time picks what Python would evaluate. One known only at
run time computes both branches and picks one per call (np.where): ``a and b`` computes
``b`` too; an ``if`` statement runs both blocks on copies of the names and picks each
name they assign. The two values of a pick must have one shape and dtype (else which
one Python has is known only at run time: refused), and an ``if`` block cannot break,
raise or write into an array; it can return where the other block returns too (the rest
of a block after ``if c: return a`` is the if's else: early_returns). ``if c: raise
ValueError("...")`` on a condition the wrapper knows before the kernels (int arguments,
dimensions) is that check at the call (ir/run_time.CallCheck).

Gathers in a branch Python may not run (``x[t] if t < n else x[0]``) are guarded: an
index out of range there must not raise, as Python never evaluates it. So each gather a
branch adds reads index 0 where the branch is not taken, its indices ``where(c, i, 0)``;
where it is taken, its own indices, checked as any. A gather computed before the branch
(a value the branch only reads) stays as it is: Python ran it.

Before (``x[t] if t < n else x[0]``)::

    where(lt(%t, N), gather(%x, %t), gather(%x, 0))

After::

    where(lt(%t, N), gather(%x, where(lt(%t, N), %t, 0)), gather(%x, 0))

The checks at the call that code in a branch records (a division by a number that is
zero there, call_checks.py) are made only where the branch is taken, as Python runs it.

Not guarded: a gather along an empty axis (index 0 is out of range too), and the call's
own checks of sizes (an assumption ``A == B`` or a constant index past a symbolic axis,
made in a branch): these still raise where the branch is not taken.
"""

from __future__ import annotations

import ast
from typing import Any

from cuvil_aot.compiler.frontend import call_checks, messages, ufunc_out, versions
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import Unbound, apply, run_time_origin, to_node
from cuvil_aot.compiler.ir.node import Node, rewrite, toposort
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.run_time import CallCheck, Text
from cuvil_aot.errors import SourceSpan

IF_HINT = "compute both values and pick one: y = np.where(cond, a, b)"


class FunctionReturn(Exception):
    """A ``return`` being interpreted: the value the function returns."""

    def __init__(self, value: Any):
        self.value = value


# what a statement raises that is no error in it: up through the statements around it
PASSING = (FunctionReturn, versions.Undecided)


def early_returns(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """``if c: ...; return a`` then the rest of the block, as ``if c: ...; return a``
    ``else: <the rest>``: the rest runs only where c is false, as in Python, and an if on
    a run-time condition then sees both of its returns."""
    for i, stmt in enumerate(stmts[:-1]):
        if isinstance(stmt, ast.If) and stmt.body and isinstance(stmt.body[-1], ast.Return):
            joined = ast.copy_location(ast.If(stmt.test, stmt.body,
                                              [*stmt.orelse, *stmts[i + 1:]]), stmt)
            return [*stmts[:i], joined]
    return stmts


def if_statement(interp: Any, stmt: ast.If, poison: Any) -> None:
    """``if test: body else: orelse``. On a run-time condition both blocks run, on copies
    of the names, and each name either assigns is the one its taken block leaves, picked
    per call (np.where); a name only one block assigns cannot be read after."""
    cond = interp.eval(stmt.test)
    if cond is poison:
        return
    truth = interp.truth(cond, stmt.test)
    if not isinstance(truth, Node):
        interp.run_block(stmt.body if truth else stmt.orelse)
        return
    raised = _raised(interp, stmt)
    if raised is not None:  # if cond: raise E("..."): checked at the call
        if interp.loop_depth or not call_checks.known_before_the_kernels(truth):
            raise UserError(f"this raise depends on {run_time_origin(truth)}: the call checks "
                            "a condition on int arguments and dimensions only", interp.span(
                                stmt.test), "check it in Python before the call")
        interp.run_time.append(CallCheck.of(truth, *raised))
        return
    key, taken = versions.decided(interp, stmt, truth)
    if taken is not None:  # this version of the signature is for calls where it is `taken`
        interp.run_block(stmt.body if taken else stmt.orelse)
        return
    try:
        _both_blocks(interp, stmt, truth, poison)
    except UserError as err:  # not picked per call: decided at build, where the call knows it
        raise versions.undecided(key, stmt, truth, err) from None


def _both_blocks(interp: Any, stmt: ast.If, truth: Node, poison: Any) -> None:
    """Both blocks of an if on a run-time condition, each name they assign picked per call."""
    _refuse_effects(interp, stmt)
    span = interp.span(stmt.test)
    scope = interp.frames[-1].scope
    before = computed([f.scope for f in interp.frames], truth)
    start = dict(scope)
    lists = [(v, len(v)) for v in start.values() if isinstance(v, list)]
    ends: list[dict[str, Any]] = []
    returned: list[FunctionReturn | None] = []
    errors = len(interp.diagnostics)
    for block, taken in ((stmt.body, truth), (stmt.orelse, negated(truth, span))):
        scope.clear()
        scope.update(start)
        mark = len(interp.run_time)
        try:
            interp.run_block(block)
            returned.append(None)
        except FunctionReturn as ret:
            returned.append(ret)
        call_checks.guard(interp.run_time, mark, taken)
        ends.append(dict(scope))
        if any(len(items) != size for items, size in lists):
            raise UserError("a list changed in a block of an if on a run-time condition: its "
                            "length would be known only at run time", span, IF_HINT)
    scope.clear()
    scope.update(start)
    values = [r.value for r in returned if r is not None]
    if len(values) == 2:  # the function returns here
        raise FunctionReturn(_pick_returns(values, truth, before, span, poison))
    if values and len(interp.diagnostics) > errors:
        raise FunctionReturn(poison)  # a block was refused: no second error about it
    if values:
        raise UserError("a return in one block of an if on a run-time condition only, where "
                        "the other goes on past the block it is in", span,
                        "return from both blocks, or after the if")
    for name in sorted(set(ends[0]) | set(ends[1])):
        sides = [end.get(name, _UNSET) for end in ends]
        if sides[0] is sides[1]:
            scope[name] = sides[0]
        elif any(v is _UNSET for v in sides):
            scope[name] = Unbound(f"'{name}' is assigned in one block of an if on a "
                                        "run-time condition only: Python leaves it unbound "
                                        "when the other block runs")
        elif any(v is poison for v in sides):
            scope[name] = poison
        else:
            for v in sides:
                if v is None:
                    raise UserError(f"'{name}' is None after one block of an if on a run-time "
                                    "condition and not after the other: only arrays and "
                                    "numbers can be picked per call", span,
                                    "an array in both cases (zeros where it would be None), "
                                    "or a condition known at build (sizes of the signature)")
                if not isinstance(v, Node | bool | int | float):
                    raise UserError(f"'{name}' is {interp.describe(v)} in a block of an if on "
                                    "a run-time condition: only arrays and numbers can be "
                                    "picked per call", span, IF_HINT)
            scope[name] = _pick(truth, sides[0], sides[1], before, span, name)


_UNSET = object()  # a name a block leaves unassigned (None is a value a name may hold)


def _pick_returns(values: list[Any], truth: Node, before: set[int], span: SourceSpan,
                  poison: Any) -> Any:
    """What a function returns from one of two blocks, picked per call (a tuple: each)."""
    if any(v is poison for v in values):
        return poison
    if all(isinstance(v, tuple) for v in values) and len(values[0]) == len(values[1]):
        return tuple(_pick_returns(list(pair), truth, before, span, poison)
                     for pair in zip(*values))
    if not all(isinstance(v, Node | bool | int | float) for v in values):
        raise UserError("the two blocks of an if on a run-time condition return values that "
                        "cannot be picked per call (arrays and numbers, or tuples of as many)",
                        span, IF_HINT)
    return _pick(truth, values[0], values[1], before, span)


def _pick(truth: Node, a: Any, b: Any, before: set[int], span: SourceSpan,
          name: str = "") -> Node:
    """``a`` where ``truth``, else ``b``: of one shape and dtype, the gathers each adds to
    ``before`` guarded by its side."""
    _same_type(a, b, span, name)
    a = branch(truth, a, before, span)
    b = branch(negated(truth, span), b, before, span)
    return apply(Op.WHERE, [truth, a, b], span)


def _raised(interp: Any, stmt: ast.If) -> tuple[str, Text] | None:
    """(exception name, message) of ``if c: raise ValueError("...")`` (a builtin exception;
    a constant message, or an f-string whose ints the call may know: messages.py), else
    None."""
    if stmt.orelse or len(stmt.body) != 1 or not isinstance(stmt.body[0], ast.Raise):
        return None
    exc = stmt.body[0].exc
    call = exc if isinstance(exc, ast.Call) else None
    args = call.args if call is not None else []
    if call is not None and (call.keywords or len(args) > 1 or args and not (
            isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)
            or isinstance(args[0], ast.JoinedStr))):
        return None
    kind = interp.eval(call.func if call is not None else exc) if exc is not None else None
    if not (isinstance(kind, type) and issubclass(kind, Exception)
            and kind.__module__ == "builtins"):
        return None
    return kind.__name__, messages.parts(interp, args[0]) if args else ("",)


def _refuse_effects(interp: Any, stmt: ast.If) -> None:
    """What an if on a run-time condition cannot do: leave the function or a loop, raise,
    or write into an array (both blocks run)."""
    stack: list[ast.AST] = [*stmt.body, *stmt.orelse]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.Lambda | ast.AsyncFunctionDef):
            continue  # its own returns
        stack.extend(ast.iter_child_nodes(node))
        kinds: dict[type[ast.AST], str] = {ast.Break: "'break'", ast.Continue: "'continue'",
                                           ast.Raise: "'raise'"}
        what = kinds.get(type(node))
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) or \
                isinstance(node, ast.Call) and ufunc_out.targets(node):
            what = "assignment into an array"
        if what is not None:
            raise UserError(f"{what} inside an if on a run-time condition is not supported: "
                            "both blocks run and one's values are picked per call",
                            interp.span(node), IF_HINT)


def if_exp(interp: Any, expr: ast.IfExp, poison: Any) -> Any:
    """``body if test else orelse``."""
    cond = interp.eval(expr.test)
    if cond is poison:
        return poison
    truth = interp.truth(cond, expr.test)
    if not isinstance(truth, Node):
        return interp.eval(expr.body if truth else expr.orelse)
    key, taken = versions.decided(interp, expr, truth)
    if taken is not None:  # this version of the signature is for calls where it is `taken`
        return interp.eval(expr.body if taken else expr.orelse)
    before, span = computed([f.scope for f in interp.frames], truth), interp.span(expr)
    body = _evaluated(interp, expr.body, truth)
    orelse = _evaluated(interp, expr.orelse, negated(truth, span))
    if body is poison or orelse is poison:
        return poison
    try:
        if not all(isinstance(v, Node | bool | int | float) for v in (body, orelse)):
            raise UserError(f"{interp.describe(body)} or {interp.describe(orelse)}, by a "
                            "run-time condition: only arrays and numbers can be picked per "
                            "call", span, IF_HINT)
        return _pick(truth, body, orelse, before, span)
    except UserError as err:  # not picked per call: decided at build, where the call knows it
        raise versions.undecided(key, expr, truth, err) from None


def _evaluated(interp: Any, expr: ast.expr, taken: Node) -> Any:
    """``expr``'s value, the checks at the call it records made only where ``taken``."""
    mark = len(interp.run_time)
    value = interp.eval(expr)
    call_checks.guard(interp.run_time, mark, taken)
    return value


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
    mark = len(interp.run_time)
    rest = bool_op(interp, is_and, values[1:], poison)
    call_checks.guard(interp.run_time, mark, truth if is_and else negated(truth, span))
    if rest is poison:
        return poison
    _same_shape(result, rest, span)
    rest = branch(truth if is_and else negated(truth, span), rest, before, span)
    return apply(Op.WHERE, [truth, *([rest, result] if is_and else [result, rest])], span)


def _same_shape(a: Any, b: Any, span: SourceSpan, name: str = "") -> None:
    """Python returns one of ``a`` and ``b``: where their shapes differ, which shape the
    result has is known only at run time (np.where would broadcast them: refused)."""
    if not all(isinstance(v, Node | bool | int | float) for v in (a, b)):
        return
    shapes = [to_node(v, span).shape for v in (a, b)]
    if shapes[0] != shapes[1]:
        shown = [f"({', '.join(map(str, s))}{',' if len(s) == 1 else ''})" for s in shapes]
        what = f"'{name}' has" if name else "the two values this condition picks between have"
        raise UserError(f"{what} different shapes, {shown[0]} and {shown[1]}: which one "
                        "Python returns is known only at run time", span,
                        "np.where(cond, a, b) broadcasts them")


def _same_type(a: Any, b: Any, span: SourceSpan, name: str = "") -> None:
    """As _same_shape, and the same dtype: ``1 if c else 2.5`` is an int or a float."""
    _same_shape(a, b, span, name)
    if not all(isinstance(v, Node | bool | int | float) for v in (a, b)):
        return
    dtypes = [to_node(v, span).dtype for v in (a, b)]
    if dtypes[0] != dtypes[1]:
        what = f"'{name}' is" if name else "the two values this condition picks between are"
        raise UserError(f"{what} {dtypes[0]} and {dtypes[1]}: which dtype the result has "
                        "is known only at run time", span,
                        "give both the same dtype: .astype(...) or float(...)")


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
