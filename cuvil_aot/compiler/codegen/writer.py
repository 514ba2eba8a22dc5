"""An indentation-aware buffer for emitting C."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class Writer:
    def __init__(self, indent: int = 0):
        self.lines: list[str] = []
        self.level = indent

    def line(self, text: str = "") -> None:
        self.lines.append(("    " * self.level + text) if text else "")

    @contextmanager
    def block(self, header: str, footer: str = "}") -> Iterator[None]:
        self.line(header + " {")
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1
            self.line(footer)

    def extend(self, other: Writer) -> None:
        self.lines.extend("    " * self.level + line if line else "" for line in other.lines)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def c_string(text: str) -> str:
    """``text`` as a C string literal (a NUL as three octal digits: no digit after it joins)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") \
        .replace("\0", "\\000") + '"'
