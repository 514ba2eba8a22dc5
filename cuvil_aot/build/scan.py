"""Which modules of a wheel to compile: ``include``/``exclude`` globs, then a byte scan."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

from cuvil_aot.importer import is_marked_source


@lru_cache(maxsize=64)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """``**`` spans directories (also none), ``*`` and ``?`` stay within one."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            char = pattern[i]
            out.append({"*": "[^/]*", "?": "[^/]"}.get(char, re.escape(char)))
            i += 1
    return re.compile("".join(out))


def matches(path: str, patterns: Iterable[str]) -> bool:
    return any(glob_regex(p).fullmatch(path) for p in patterns)


def module_name(arcname: str) -> str | None:
    """'pkg/sub/mod.py' -> 'pkg.sub.mod', 'pkg/__init__.py' -> 'pkg'; None if the path
    cannot be imported by that name (a data directory, a dash in a name)."""
    parts = arcname[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


def marked_modules(files: Mapping[str, bytes], include: Iterable[str],
                   exclude: Iterable[str]) -> list[tuple[str, str]]:
    """(path in the wheel, module name) of each module that may define marked functions,
    sorted by path. False positives (the markers in a comment) are dropped later, once
    the module is imported."""
    include, exclude = tuple(include), tuple(exclude)
    found = []
    for arcname in sorted(files):
        if not arcname.endswith(".py") or not matches(arcname, include):
            continue
        if matches(arcname, exclude) or not is_marked_source(files[arcname]):
            continue
        name = module_name(arcname)
        if name is not None:
            found.append((arcname, name))
    return found
