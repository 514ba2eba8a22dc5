"""User-facing errors: compile diagnostics with a caret, signature mismatches."""

from __future__ import annotations

import os
import sys
import traceback
import warnings
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SourceSpan:
    """A range in a user's source file (1-based lines, 0-based columns)."""

    file: str
    line: int
    col: int
    end_line: int
    end_col: int
    text: str  # the source line at ``line``

    def render(self) -> str:
        """The source line and a caret marking the span under it."""
        same_line = self.end_line == self.line
        width = (self.end_col - self.col) if same_line else len(self.text) - self.col
        stripped = self.text.rstrip()
        caret = " " * self.col + "^" + "~" * max(0, width - 1)
        return f"    {stripped}\n    {caret}"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    span: SourceSpan | None
    message: str
    hint: str = ""
    notes: tuple[tuple[SourceSpan, str], ...] = ()

    def render(self) -> str:
        where = f"{self.span}: " if self.span else ""
        out = [f"{where}error: {self.message}"]
        if self.span:
            out.append(self.span.render())
        for span, text in self.notes:
            out.append(f"{span}: note: {text}")
            out.append(span.render())
        if self.hint:
            out.append(f"    supported instead: {self.hint}")
        return "\n".join(out)


class CompileError(Exception):
    """One or more errors in the user's code, each with file:line:col and a caret.

    ``rendered`` is the text of diagnostics rendered earlier (a refused function's, kept in
    its module's build manifest); ``diagnostics`` is then empty."""

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic, rendered: str | None = None):
        self.diagnostics = diagnostics if isinstance(diagnostics, list) else [diagnostics]
        text = rendered if rendered is not None else render_all(self.diagnostics)
        super().__init__("\n" + text)


def render_all(diagnostics: list[Diagnostic]) -> str:
    """Diagnostics as a CompileError shows them, each once, blank lines between."""
    return "\n\n".join(dict.fromkeys(d.render() for d in diagnostics))


INTERNAL = "internal cuvil_aot error (this is a bug in cuvil_aot, please report it)"


class InternalCompilerError(RuntimeError):
    """A bug in cuvil_aot itself, not in the user's code."""

    def __init__(self, message: str):
        super().__init__(f"{INTERNAL}: {message}")


def internal_diagnostic(span: SourceSpan | None, exc: BaseException) -> Diagnostic:
    """A crash of the compiler while it compiled the code at ``span``: the user's line,
    the exception, and where in cuvil_aot it was raised (for the report)."""
    where = ""
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        inside = os.path.relpath(last.filename, os.path.dirname(_PACKAGE.rstrip(os.sep))) \
            if last.filename.startswith(_PACKAGE) else os.path.basename(last.filename)
        where = f" (raised at {inside}:{last.lineno} in {last.name})"
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    if isinstance(exc, InternalCompilerError):
        text = str(exc).removeprefix(f"{INTERNAL}: ")
    return Diagnostic(span, f"{INTERNAL}: {text}{where}")


class SignatureError(TypeError):
    """A call whose arguments match none of the compiled signatures."""


class BuildError(RuntimeError):
    """The C compiler failed; carries its command line and output."""


class CudaError(RuntimeError):
    """A GPU call failed: no driver or device, a CUDA error (named, with the kernel), or a
    context lost to an earlier fault."""


class SignatureShapeError(SignatureError, ValueError):
    """No signature matches because of array shapes (a TypeError and a ValueError)."""


class PromotionWarning(UserWarning):
    """A float32 array made float64 by a NumPy float64 scalar (NEP 50) in compiled code:
    correct, as NumPy computes it, and rarely meant (compiler/frontend/promotion.py)."""


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn, attributed to the first caller outside cuvil_aot (the user's import or call),
    so the message never shows one of cuvil_aot's own source lines."""
    level, frame = 2, sys._getframe(1)  # stacklevel 2 is our caller
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back  # type: ignore[assignment]
    warnings.warn(message, category, stacklevel=level)
