"""Functions defined inside a compiled function (``def split_heads(y): ...``, and lambdas,
``map(lambda x: np.split(x, h, axis=-1), qkv)``): inlined where they are called, as the
user's other functions are. Their defaults are evaluated
where the ``def`` runs and the enclosing function's names are read when the body runs,
as Python's closures do (a ChainMap over the enclosing scope)."""

from __future__ import annotations

import ast
import inspect
from collections import ChainMap
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

from cuvil_aot.compiler.frontend.user_error import UserError


@dataclass(frozen=True)
class LocalFunction:
    node: ast.FunctionDef
    signature: inspect.Signature
    enclosing: MutableMapping[str, Any]  # the defining frame's scope (read at call time)

    @property
    def __name__(self) -> str:
        return self.node.name

    def scope(self, args: list[Any], kwargs: dict[str, Any]) -> MutableMapping[str, Any]:
        """The body's scope: its bound parameters over the enclosing scope; TypeError as
        Python's own when the arguments do not bind."""
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return ChainMap(dict(bound.arguments), self.enclosing)


def unsupported_parts(node: ast.FunctionDef) -> str | None:
    """What of this ``def`` the inliner does not take, or None."""
    a = node.args
    if node.decorator_list:
        return "a decorator on a nested def"
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
        return ("*args, **kwargs, keyword-only or positional-only parameters of a nested def "
                "or lambda")
    return None


def signature(node: ast.FunctionDef, defaults: list[Any]) -> inspect.Signature:
    """The signature of a plain ``def f(a, b=...)`` with its evaluated defaults."""
    names = [arg.arg for arg in node.args.args]
    first_default = len(names) - len(defaults)
    return inspect.Signature([
        inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          default=defaults[i - first_default] if i >= first_default
                          else inspect.Parameter.empty)
        for i, name in enumerate(names)])


def as_def(expr: ast.Lambda) -> ast.FunctionDef:
    """A lambda as the ``def`` it stands for: one ``return`` of its expression."""
    body = ast.copy_location(ast.Return(value=expr.body), expr.body)
    node = ast.FunctionDef(name="<lambda>", args=expr.args, body=[body], decorator_list=[],
                           returns=None)
    return ast.copy_location(node, expr)


def define(interp: Any, node: ast.FunctionDef) -> LocalFunction:
    """What a ``def`` (or a lambda) binds where it runs: its defaults evaluated now, its
    body reading the defining frame's scope when called."""
    why = unsupported_parts(node)
    if why is not None:
        raise UserError(f"{why} is not supported", interp.span(node), "def f(a, b=1):")
    defaults = [interp.eval(d) for d in node.args.defaults]
    return LocalFunction(node, signature(node, defaults), interp.frames[-1].scope)
