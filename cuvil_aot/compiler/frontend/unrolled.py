"""Iteration known at compile time, unrolled: what a ``for`` over a constant range or a
tuple iterates, and list and dict comprehensions.

A loop over ``range`` of constants, a tuple or a list runs its body once per item as the
interpreter goes; so does one over ``enumerate``, ``zip`` or ``reversed`` of those (the
builtins ran on compile-time sequences; their items are listed). A list comprehension is
the same loop with ``append``: ``[xp[:, i:i + n] for i in range(3)]``, ``[x @ w for w in
ws if ...]``, its filters known at compile time, its names local to it as in Python 3.
A generator expression is the same items behind an iterator, used up once as Python's:
Python's builtins take it (``tuple(d // 2 for d in x.shape)``, ``sum(w * h for ...)``),
NumPy's functions refuse it where they want a sequence (``np.stack(x for ...)``: calls.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from typing import Any, cast

from cuvil_aot.compiler.frontend import loops
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import GENERATED, is_dict_key
from cuvil_aot.compiler.ir.node import Node

ITERATORS: tuple[type, ...] = (enumerate, zip, reversed, type(reversed([])),
                               type(reversed(range(0))), GENERATED)
LOOP_HINT = "for t in range(x.shape[0]): ... x[t] ..."
RUN_TIME_HINT = ("a loop that writes into an array made before it: out = np.empty((n, N), "
                 "x.dtype); for i in range(n): out[i] = ...")

MAX_UNROLL = 4096
"""the most iterations or items a loop or comprehension known at compile time unrolls"""


def items(value: Any) -> list[Any] | None:
    """The items of a compile-time iterable (range, tuple, list, a dict's keys, or
    enumerate, zip or reversed of them), None for anything else."""
    if isinstance(value, (range, tuple, list, Mapping, *ITERATORS)):
        return list(cast(Iterable[Any], value))
    return None


def list_comp(interp: Any, expr: ast.ListComp, poison: Any, max_items: int) -> Any:
    """``[elt for target in iter if cond ...]``, unrolled; the targets' names as they were
    before it afterwards."""
    scope = interp.frames[-1].scope
    names = {n.id for g in expr.generators for n in ast.walk(g.target)
             if isinstance(n, ast.Name)}
    saved = {n: scope[n] for n in names if n in scope}
    out: list[Any] = []
    try:
        if not _clauses(interp, expr, 0, out, poison, max_items):
            return poison
    finally:
        for n in names:
            scope.pop(n, None)
        scope.update(saved)
    return out


def generator(interp: Any, expr: ast.GeneratorExp, poison: Any, max_items: int) -> Any:
    """``(elt for target in iter if cond ...)``: its items now (nothing the code does can
    change them before they are read), behind an iterator."""
    listed = list_comp(interp, ast.copy_location(ast.ListComp(expr.elt, expr.generators), expr),
                       poison, max_items)
    return poison if listed is poison else iter(listed)


def dict_comp(interp: Any, expr: ast.DictComp, poison: Any, max_items: int) -> Any:
    """``{key: value for target in iter if cond ...}``, unrolled as the list of its pairs."""
    pair = ast.copy_location(ast.Tuple([expr.key, expr.value], ast.Load()), expr.key)
    pairs = list_comp(interp, ast.copy_location(ast.ListComp(pair, expr.generators), expr),
                      poison, max_items)
    if pairs is poison:
        return poison
    if not all(is_dict_key(k) for k, _ in pairs):
        raise UserError("a dict key must be known at compile time", interp.span(expr.key))
    return dict(pairs)


def _clauses(interp: Any, expr: ast.ListComp, k: int, out: list[Any], poison: Any,
             max_items: int) -> bool:
    """Generator k and the ones after it; False where a value was poisoned."""
    if k == len(expr.generators):
        value = interp.eval(expr.elt)
        out.append(value)
        return value is not poison
    gen = expr.generators[k]
    if gen.is_async:
        raise UserError("async comprehensions are not supported", interp.span(gen.iter))
    if loops.run_time_range(gen.iter, interp.eval) is not None:
        raise UserError("a comprehension over a range known only at run time is not "
                        "supported", interp.span(gen.iter), RUN_TIME_HINT)
    source = interp.eval(gen.iter)
    if source is poison:
        return False
    listed = items(source)
    if listed is None:
        raise UserError("only comprehensions over range() of constants or a tuple or list "
                        "known at compile time are supported", interp.span(gen.iter),
                        LOOP_HINT)
    for item in listed:
        interp.assign(gen.target, item)
        if not all(_kept(interp, cond, poison) for cond in gen.ifs):
            continue
        if not _clauses(interp, expr, k + 1, out, poison, max_items):
            return False
        if len(out) > max_items:
            raise UserError(f"comprehension of more than {max_items} items is too long to "
                            "unroll", interp.span(expr))
    return True


def _kept(interp: Any, cond: ast.expr, poison: Any) -> bool:
    value = interp.eval(cond)
    if value is poison:
        return False
    truth = interp.truth(value, cond)
    if isinstance(truth, Node):
        raise UserError("a comprehension's condition must be known at compile time; this one "
                        "depends on run-time values", interp.span(cond),
                        "np.where(cond, a, b) to select elementwise")
    return bool(truth)
