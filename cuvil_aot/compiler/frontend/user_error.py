"""Errors in the user's code: ``UserError``, and ``checked`` for builder calls.

Builders raise plain ``ShapeError``/``DtypeError`` without positions;
``checked`` runs one and turns its error into a ``UserError`` at the span of
the expression that asked for it, which the interpreter records as a
diagnostic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from cuvil_aot.compiler.frontend.builder import DtypeError
from cuvil_aot.compiler.ir.construct import ShapeError
from cuvil_aot.errors import Diagnostic, SourceSpan

T = TypeVar("T")


class UserError(Exception):
    """An error in the user's code at ``span``; becomes a Diagnostic."""

    def __init__(self, message: str, span: SourceSpan | None, hint: str = "",
                 notes: tuple[tuple[SourceSpan, str], ...] = ()):
        super().__init__(message)
        self.diagnostic = Diagnostic(span, message, hint, notes)


def checked(fn: Callable[..., T], *args: Any, span: SourceSpan,
            notes: tuple[tuple[SourceSpan, str], ...] = ()) -> T:
    """``fn(*args)``, its shape or dtype error reported at ``span`` (with ``notes``)."""
    try:
        return fn(*args)
    except (ShapeError, DtypeError) as exc:
        raise UserError(str(exc), span, notes=notes) from None
