"""Cache keys: named string components hashed into one SHA-256 digest.

A key must depend only on what changes the built artifact. The caller supplies the
components and must keep timestamps, absolute paths, PIDs, host names and anything
else that differs between two equivalent builds out of them: a cache built in one
directory or container has to hit when copied to another. Long values (a source
text, a compiler's version banner) may be given whole or as their own hash.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from types import MappingProxyType

from .errors import CacheError

_NAME = re.compile(r"[a-z][a-z0-9_.-]{0,63}")
_SUMMARY_LIMIT = 240


def canonical_json(components: Mapping[str, str]) -> bytes:
    """The bytes a digest is taken over: sorted keys, no whitespace, ASCII only."""
    return json.dumps(
        dict(components), sort_keys=True, separators=(",", ":"), ensure_ascii=True
    ).encode("ascii")


def digest_of(components: Mapping[str, str]) -> str:
    return hashlib.sha256(canonical_json(components)).hexdigest()


def check_components(components: Mapping[str, object]) -> dict[str, str]:
    """Return a plain copy of ``components`` if every name and value is well formed."""
    out: dict[str, str] = {}
    for name, value in components.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise CacheError(f"bad key component name {name!r}: expected [a-z][a-z0-9_.-]*")
        if not isinstance(value, str):
            raise CacheError(f"key component {name!r} must be a str, got {type(value).__name__}")
        out[name] = value
    return out


class CacheKey:
    """An immutable mapping of component name to value, identified by ``digest``."""

    __slots__ = ("_components", "digest")

    def __init__(self, components: Mapping[str, str]) -> None:
        plain = check_components(components)
        self._components = MappingProxyType(dict(sorted(plain.items())))
        self.digest = digest_of(plain)

    @property
    def components(self) -> Mapping[str, str]:
        return self._components

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CacheKey) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:
        return f"CacheKey({self.digest[:16]}…, {', '.join(self._components)})"


def diff(
    old: Mapping[str, str], new: Mapping[str, str]
) -> list[tuple[str, str | None, str | None]]:
    """Components that differ, sorted by name: (name, old or None, new or None)."""
    names = sorted(set(old) | set(new))
    return [(n, old.get(n), new.get(n)) for n in names if old.get(n) != new.get(n)]


def summarize(value: str | None) -> str:
    """A value short enough for one line of ``explain``; long ones by their hash."""
    if value is None:
        return "(absent)"
    if len(value) <= _SUMMARY_LIMIT:
        return repr(value)
    sha = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    return f"<{len(value)} chars, sha256 {sha[:16]}…>"
