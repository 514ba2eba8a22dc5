"""The wrapper's functions of a module of many versions in translation units of their own.

A function of many versions has tens of thousands of lines of match and exec C (BERT's
port, 32 versions: module.c took 13.3 s alone at -O3), which one compiler process took
while the others waited; past PART_LINES those functions go into ``module_cpu_{n}.c``
parts, compiled beside module.c and kernels.c, and declared in module.h. Below it they
stay in module.c: a part costs the parse of its headers (Python's and NumPy's).
"""

from __future__ import annotations

from cuvil_aot.compiler.codegen.writer import Writer

PART_LINES = 6000  # lines of C a part holds, at least (all but the last)


def split(pieces: list[str]) -> list[list[str]]:
    """``pieces`` (C functions, each ``static`` and defined whole) by part, in order; none
    where they are PART_LINES or fewer in all."""
    if sum(p.count("\n") for p in pieces) <= PART_LINES:
        return []
    parts: list[list[str]] = [[]]
    lines = 0
    for piece in pieces:
        if lines >= PART_LINES:
            parts.append([])
            lines = 0
        parts[-1].append(piece)
        lines += piece.count("\n")
    return parts


def source(pieces: list[str]) -> str:
    """A part: its functions, no longer static (module.h declares them: ``prototype``)."""
    w = Writer()
    w.line("#define CV_WRAPPER_PART")
    w.line('#include "module.h"')
    for piece in pieces:
        w.line(piece.removeprefix("static "))
    return w.text()


def prototype(piece: str) -> str:
    """The declaration of a piece's function: its first line, up to the body."""
    return piece.split("\n", 1)[0].removeprefix("static ").removesuffix(" {") + ";"
