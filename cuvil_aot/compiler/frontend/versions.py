"""Versions of a signature, decided by conditions the call knows before its kernels.

An ``if`` (or ``a if c else b``) on int arguments and sizes runs both blocks and picks
each name per call (branches.py), which needs both values to be arrays or numbers of one
shape and dtype.
Where they are not (``mask = None; if T > 1: mask = np.triu(...)``; ``if n_rep == 1:
return x`` beside a reshaped return; a block that writes into an array), the condition is
decided at build instead: the signature is lowered once where it holds and once where it
does not, and each version checks it at the call, a failed check sending the call on to
the next version (ir/run_time.CallCheck without an error). A decision names its condition
by the condition's structure (ir/run_time.describe), so that ifs on one condition (a helper
called for K and for V) go the same way in a version.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, TypeVar

from cuvil_aot.compiler.frontend import call_checks
from cuvil_aot.compiler.frontend.user_error import UserError
from cuvil_aot.compiler.frontend.values import apply
from cuvil_aot.compiler.ir.node import Node, toposort
from cuvil_aot.compiler.ir.ops import Op
from cuvil_aot.compiler.ir.run_time import CallCheck, describe
from cuvil_aot.compiler.ir.signature import Signature

MAX_DECIDED = 3  # conditions decided a signature: up to 8 versions of it
T = TypeVar("T")


class Undecided(Exception):
    """The condition ``key`` (its source ``text``) could not be picked per call: lower the
    signature again with it decided each way."""

    def __init__(self, key: str, text: str):
        super().__init__(text)
        self.key, self.text = key, text


_CURRENT: ContextVar[dict[str, bool] | None] = ContextVar("cuvil_aot_versions", default=None)
_LABELS: ContextVar[dict[str, str] | None] = ContextVar("cuvil_aot_version_labels", default=None)


@contextmanager
def deciding(sig: Signature) -> Iterator[None]:
    """The lowering of ``sig`` in this block follows its decisions."""
    token = _CURRENT.set({key: taken for key, taken, _ in sig.decisions})
    labels = _LABELS.set({p.name: p.shown for p in sig.params})
    try:
        yield
    finally:
        _LABELS.reset(labels)
        _CURRENT.reset(token)


def decided(interp: Any, stmt: ast.If | ast.IfExp, truth: Node) -> tuple[str | None, bool | None]:
    """(the condition's key, or None where the call cannot decide it; the block this
    version takes, or None where it decides nothing here). A decision is checked at the call."""
    decisions = _CURRENT.get()
    if decisions is None or interp.loop_depth or not call_checks.known_before_the_kernels(truth):
        return None, None
    key = describe(truth)
    taken = decisions.get(key)
    if taken is not None:
        text = ast.unparse(stmt.test)
        cond = truth if not taken else apply(Op.INVERT, [truth], interp.span(stmt.test))
        interp.run_time.append(CallCheck.of(cond, "", f"this version is for calls where "
                                                      f"{text} is {taken}"))
    return key, taken


def undecided(key: str | None, stmt: ast.If | ast.IfExp, truth: Node,
              error: UserError) -> Exception:
    """What to raise where the blocks of an if on condition ``key`` cannot be picked per
    call: `Undecided`, while the signature has room for another decision, else ``error``."""
    decisions = _CURRENT.get()
    if key is None or decisions is None:
        return error
    if len(decisions) >= MAX_DECIDED:
        d = error.diagnostic
        return UserError(d.message, d.span, f"{d.hint + '; ' if d.hint else ''}{MAX_DECIDED} "
                         f"conditions of this version are decided at build already, the most "
                         f"there may be{_as_class_constants(truth)}", d.notes)
    return Undecided(key, ast.unparse(stmt.test))


def _as_class_constants(truth: Node) -> str:
    """A hint where the condition reads an instance's attributes (a model's settings, as
    transformers' ``is_decoder``): constants of its class decide it at build."""
    labels = _LABELS.get() or {}
    shown = [labels.get(str(n.attrs[1]), "") for n in toposort([truth])
             if n.op is Op.PARAM]
    attributes = sorted({label.rpartition(".")[2] for label in shown if "." in label})
    if not attributes:
        return ""
    names, body = " and ".join(map(repr, attributes)), ", ".join(f"{a} = ..." for a in attributes)
    if len(attributes) == 1:
        return (f"; or, where {names} is a setting of the model, make it a constant of its class "
                f"({body} in the class body, not declared with a type): the build decides it, "
                "and an instance that sets it must set the class's value")
    return (f"; or, where {names} are settings of the model, make them constants of their "
            f"classes ({body} in the class bodies, not declared with a type): the build "
            "decides them, and an instance that sets them must set the classes' values")


def lowered(sig: Signature, lower: Callable[[Signature], T]) -> list[tuple[Signature, T]]:
    """``lower`` of ``sig``, and of each version of it its ifs need (depth first: where the
    condition holds, then where it does not)."""
    done: list[tuple[Signature, T]] = []
    pending = [sig]
    while pending:
        version = pending.pop(0)
        try:
            done.append((version, lower(version)))
        except Undecided as u:
            pending[:0] = [replace(version, decisions=(*version.decisions, (u.key, taken,
                                                                           u.text)))
                           for taken in (True, False)]
    return done
