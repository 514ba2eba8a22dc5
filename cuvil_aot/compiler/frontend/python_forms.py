"""Python's smaller forms, as the interpreter runs them: ``assert test, message`` (the
``if not test: raise AssertionError(message)`` it stands for: a check at the call where the
test reads dimensions or int arguments, a diagnostic where it fails for every call of the
signature), ``del`` of names and of list or dict items, the walrus ``(n := x.shape[-1])``,
unpacking with a starred name (``*lead, c = x.shape``), f-strings of values known at
compile time, dict comprehensions (unrolled.py), ``import`` inside the function and
``with np.errstate(...):``; ``STATEMENTS`` and ``EXPRESSIONS`` are what the interpreter
runs them by."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from cuvil_aot.compiler.frontend import branches, messages, unrolled
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import GENERATED, fold
from cuvil_aot.compiler.ir.node import Node


def assert_statement(interp: Any, stmt: ast.Assert, poison: Any) -> None:
    test = interp.eval(stmt.test)
    if test is poison:
        return
    truth = interp.truth(test, stmt.test)
    if not isinstance(truth, Node):
        if not truth:
            message = "" if stmt.msg is None else messages.text(interp, stmt.msg)
            raise UserError(f"AssertionError: {message}".rstrip(": "), interp.span(stmt),
                            "this assert fails for every call of this signature")
        return
    name = ast.Name("AssertionError", ast.Load())
    # the message as written where it is an f-string (its ints known at the call printed
    # there: messages.py), else as Python formats it now
    text = stmt.msg if isinstance(stmt.msg, ast.JoinedStr) else ast.Constant(
        "" if stmt.msg is None else messages.text(interp, stmt.msg))
    call = ast.Call(func=name, args=[text], keywords=[])
    failure, negation = ast.Raise(exc=call), ast.UnaryOp(ast.Not(), stmt.test)
    check = ast.If(test=negation, body=[failure], orelse=[])
    for node in (check, negation, failure, call, name):
        ast.copy_location(node, stmt)
    if isinstance(text, ast.Constant):
        ast.copy_location(text, stmt)
    branches.if_statement(interp, check, poison)


def joined_str(interp: Any, expr: ast.JoinedStr, poison: Any) -> str:
    """``f"layer{i}"``: the string, of values known at compile time."""
    for part in expr.values:
        if isinstance(part, ast.FormattedValue) and (part.format_spec or part.conversion != -1):
            raise UserError("an f-string's format spec or conversion is not supported",
                            interp.span(part), 'f"{name}"')
    text = messages.text(interp, expr)
    for part in expr.values:
        if isinstance(part, ast.FormattedValue) and "{" + ast.unparse(part.value) + "}" in text:
            raise UserError("an f-string of a value known only at run time is not supported",
                            interp.span(part.value))
    return text


def delete(interp: Any, stmt: ast.Delete, poison: Any) -> None:
    """``del name``, ``del items[i]`` of a list or dict built in the function."""
    for target in stmt.targets:
        span = interp.span(target)
        if isinstance(target, ast.Name):
            try:
                del interp.frames[-1].scope[target.id]
            except KeyError:
                raise UserError(f"NameError: name '{target.id}' is not defined", span) from None
        elif isinstance(target, ast.Subscript):
            container, key = interp.eval(target.value), interp.eval(target.slice)
            if not isinstance(container, list | dict):
                raise UserError(f"del of an item of {interp.describe(container)} is not "
                                "supported", span, "del of a list's or dict's item")
            try:
                del container[fold(key)]
            except (TypeError, IndexError, KeyError) as exc:
                raise UserError(f"{type(exc).__name__}: {exc}", span) from None
        else:
            raise UserError("del of this kind of target is not supported", span, "del name")


def named(interp: Any, expr: ast.NamedExpr, poison: Any) -> Any:
    """``(name := value)``: bound in the function's scope, as Python binds it."""
    value = interp.eval(expr.value)
    interp.assign(expr.target, value)
    return value


def unpacked(interp: Any, target: ast.Tuple | ast.List, values: Any) -> list[tuple[ast.expr, Any]]:
    """(name, value) pairs of ``a, *rest, b = values``, with Python's errors."""
    span, elts = interp.span(target), target.elts
    if isinstance(values, GENERATED | range | Mapping):  # any iterable Python unpacks
        values = list(values)
    if not isinstance(values, tuple | list):
        raise UserError(f"cannot unpack {interp.describe(values)} into {len(elts)} names", span)
    stars = [i for i, e in enumerate(elts) if isinstance(e, ast.Starred)]
    if len(stars) > 1:
        raise UserError("multiple starred expressions in assignment", span)
    if not stars:
        if len(values) != len(elts):
            raise UserError(f"ValueError: {'too many' if len(values) > len(elts) else 'not enough'}"
                            f" values to unpack (expected {len(elts)}, got {len(values)})", span)
        return list(zip(elts, values))
    i, after = stars[0], len(elts) - stars[0] - 1
    if len(values) < len(elts) - 1:
        raise UserError(f"ValueError: not enough values to unpack (expected at least "
                        f"{len(elts) - 1}, got {len(values)})", span)
    middle = list(values[i:len(values) - after])
    star = elts[i]
    assert isinstance(star, ast.Starred)
    return [*zip(elts[:i], values[:i]), (star.value, middle),
            *zip(elts[i + 1:], values[len(values) - after:])]


def import_statement(interp: Any, stmt: ast.Import | ast.ImportFrom, poison: Any) -> None:
    """``import math``, ``from scipy.special import erf`` in the function: the names bound
    as Python binds them at the call, the modules imported now; each bound value goes into
    the cache key as a global read would (an edit to an imported table is a miss)."""
    frame, span = interp.frames[-1], interp.span(stmt)
    try:
        if isinstance(stmt, ast.Import):
            bound, owner = [_imported(a) for a in stmt.names], "<import>"
        else:
            module = importlib.import_module("." * stmt.level + (stmt.module or ""),
                                             frame.globals.get("__package__"))
            bound = [(a.asname or a.name, _attribute(module, a.name)) for a in stmt.names]
            owner = module.__name__
    except ImportError as exc:
        raise UserError(f"{type(exc).__name__}: {exc}", span) from None
    for name, value in bound:
        interp.record_global(owner, name, value, stmt)
        frame.scope[name] = value


def _imported(alias: ast.alias) -> tuple[str, Any]:
    """``import a.b`` binds ``a`` (a.b loaded), ``import a.b as c`` binds ``c`` to a.b."""
    module = importlib.import_module(alias.name)
    if alias.asname:
        return alias.asname, module
    top = alias.name.partition(".")[0]
    return top, importlib.import_module(top)


def _attribute(module: Any, name: str) -> Any:
    """``from module import name``: an attribute, else a submodule (as Python looks)."""
    if hasattr(module, name):
        return getattr(module, name)
    try:
        return importlib.import_module(f"{module.__name__}.{name}")
    except ModuleNotFoundError:
        raise ImportError(f"cannot import name {name!r} from {module.__name__!r}") from None


_ERRSTATE = ("all", "divide", "over", "under", "invalid")


def with_statement(interp: Any, stmt: ast.With, poison: Any) -> None:
    """``with np.errstate(divide="ignore"):``: the body as it stands. Compiled code warns of
    nothing, so every setting but "raise" (a FloatingPointError, which it does not raise)
    means what NumPy's does."""
    for item in stmt.items:
        call, span = item.context_expr, interp.span(item.context_expr)
        if not isinstance(call, ast.Call) or interp.eval(call.func) is not np.errstate \
                or item.optional_vars is not None or call.args:
            raise UserError("of with statements only `with np.errstate(...):` is supported",
                            span, "the body without the with")
        for kw in call.keywords:
            value = fold(interp.eval(kw.value))
            if kw.arg not in _ERRSTATE or value not in ("ignore", "warn", "print", "log"):
                raise UserError(f"np.errstate({kw.arg}={value!r}) is not supported: compiled "
                                "code raises no FloatingPointError", interp.span(kw),
                                'np.errstate(divide="ignore") and the like')
    interp.run_block(stmt.body)


STATEMENTS: dict[type, Callable[[Any, Any, Any], None]] = {
    ast.Assert: assert_statement, ast.Delete: delete, ast.Import: import_statement,
    ast.ImportFrom: import_statement, ast.With: with_statement,
    ast.Pass: lambda interp, stmt, poison: None}
EXPRESSIONS: dict[type, Callable[[Any, Any, Any], Any]] = {
    ast.Constant: lambda interp, expr, poison: expr.value,
    ast.NamedExpr: named, ast.JoinedStr: joined_str,
    ast.DictComp: lambda interp, expr, poison: unrolled.dict_comp(interp, expr, poison,
                                                                  unrolled.MAX_UNROLL)}
