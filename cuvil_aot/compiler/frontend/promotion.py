"""A float32 array made float64 by a NumPy float64 scalar: a warning at the user's line.

NumPy 2 types its own scalars strongly (NEP 50), so ``q @ k.T / np.sqrt(d)`` is float64
where ``q`` is float32: np.sqrt of a Python number is an np.float64. cuvil_aot computes what
NumPy computes, so everything after runs in float64 (GEMMs at a quarter of the float32
rate), which inference code almost never means. The frontend's elementwise builder notes
each such promotion (a float32, float16 or bfloat16 array with a float64 0-d operand that
is no Python number); the build warns once per place, with a caret, and says how to stay
in float32. Silence it with ``warnings.filterwarnings("ignore",
category=cuvil_aot.PromotionWarning)``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.errors import SourceSpan

NARROW = ("float32", "float16", "bfloat16")
_found: ContextVar[list[tuple[SourceSpan, str]] | None] = ContextVar("promotions",
                                                                      default=None)


def note(args: Sequence[Node], result: str, span: SourceSpan | None) -> None:
    """Record the promotion of ``args`` to ``result`` at ``span`` where it is the pitfall,
    while a function is being lowered (``collecting``)."""
    found = _found.get()
    if found is None or span is None or result != "float64":
        return
    narrow = [a.dtype for a in args if a.dtype in NARROW and a.shape and not a.type.weak]
    scalar = any(a.dtype == "float64" and not a.shape and not a.type.weak for a in args)
    if narrow and scalar:
        found.append((span, narrow[0]))


@contextmanager
def collecting() -> Iterator[list[tuple[SourceSpan, str]]]:
    """The promotions noted while the block runs, each place once."""
    found: list[tuple[SourceSpan, str]] = []
    token = _found.set(found)
    try:
        yield found
    finally:
        _found.reset(token)
        unique = list(dict.fromkeys(found))
        found[:] = unique


def message(span: SourceSpan, narrow: str) -> str:
    """The warning, rendered as a diagnostic is."""
    return (f"{span}: warning: this {narrow} array is promoted to float64 by a NumPy float64 "
            f"scalar (NumPy's rule, NEP 50: np.sqrt(8) or np.float64(2.0) is one), so what "
            f"follows computes in float64, as in NumPy\n{span.render()}\n"
            f"    to stay in {narrow}: a Python number (math.sqrt(d), d ** 0.5, 2.0) or "
            f"np.{narrow}(...)")
