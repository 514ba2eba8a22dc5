"""Per-module build history, for ``explain``: which key components changed.

root/index/<sha256(module)[:32]>.json keeps the newest two keys built for a module,
so that right after a rebuild ``explain`` can still show what the rebuild changed.
The index only explains, it never decides what is loaded; still, its files are read
only when ours and not writable by group or others (``problems`` names those that are
not, for ``cache verify``).
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .errors import CacheError
from .fsutil import listdir, read_private, replace_file
from .key import CacheKey, check_components, diff, digest_of, summarize
from .manifest import MAX_BYTES, load_doc

FORMAT = "cuvil_aot.cache.index"
HISTORY = 2


@dataclass(frozen=True)
class Record:
    key: str
    components: Mapping[str, str]
    created: float


def file_name(module: str) -> str:
    return f"{hashlib.sha256(module.encode()).hexdigest()[:32]}.json"


def _record(raw: object) -> Record:
    if not isinstance(raw, dict) or set(raw) != {"key", "components", "created"}:
        raise CacheError("bad index record")
    components, created = raw["components"], raw["created"]
    if not isinstance(components, dict) or not isinstance(created, (int, float)):
        raise CacheError("bad index record")
    if not 0 <= created < 1e11:  # also rejects NaN; keeps datetime in range
        raise CacheError("bad index record time")
    checked = check_components(components)
    if raw["key"] != digest_of(checked):
        raise CacheError("index record key does not match its components")
    return Record(digest_of(checked), checked, float(created))


def _read(index_dir: Path, name: str) -> tuple[str, list[Record]] | None:
    """(module, history) of one index file; None if missing, CacheError if bad."""
    data = read_private(index_dir, name, MAX_BYTES)
    if data is None:
        return None
    doc = load_doc(data, FORMAT)
    module, history = str(doc["module"]), doc.get("history")
    if not isinstance(history, list) or name != file_name(module):
        raise CacheError("bad index file")
    return module, [_record(raw) for raw in history]


def load_history(index_dir: Path, module: str) -> list[Record]:
    """Newest first; an unreadable, unsafe or foreign index counts as no history."""
    try:
        found = _read(index_dir, file_name(module))
    except CacheError:
        return []
    return found[1] if found is not None else []


def problems(index_dir: Path) -> list[tuple[Path, str]]:
    """(path, why) for each index file that would be ignored."""
    bad = []
    for name in listdir(index_dir):
        try:
            _read(index_dir, name)
        except CacheError as exc:
            bad.append((index_dir / name, str(exc)))
    return bad


def record_build(index_dir: Path, tmp_dir: Path, module: str, key: CacheKey, now: float) -> None:
    """Put ``key`` first in the module's history (atomic replace; last writer wins)."""
    older = [r for r in load_history(index_dir, module) if r.key != key.digest]
    history = [Record(key.digest, key.components, now), *older][:HISTORY]
    doc = {
        "format": FORMAT,
        "module": module,
        "history": [
            {"key": r.key, "components": dict(r.components), "created": r.created} for r in history
        ],
    }
    replace_file(index_dir / file_name(module), json.dumps(doc, sort_keys=True).encode(), tmp_dir)


def _when(created: float) -> str:
    stamp = datetime.datetime.fromtimestamp(created, tz=datetime.timezone.utc)
    return stamp.isoformat(timespec="seconds")


def explain(history: list[Record], module: str, key: CacheKey) -> str:
    """Say which components of ``key`` differ from the newest other build of ``module``."""
    others = [r for r in history if r.key != key.digest]
    if not others:
        if history:
            return (
                f"module {module!r}: key {key.digest[:16]}… is the only build recorded;"
                " nothing to compare it with"
            )
        return f"module {module!r}: no build is recorded in this cache"
    base = others[0]
    ours = f"key {key.digest[:16]}…"
    theirs = f"key {base.key[:16]}…, built {_when(base.created)}"
    if history[0].key == key.digest:
        head = f"module {module!r}: the newest build ({ours}) differs from the one before"
        head += f" ({theirs})"
    else:
        head = f"module {module!r}: {ours} differs from the newest recorded build ({theirs})"
    lines = [head + " in:"]
    lines += [
        f"  {n}: {summarize(old)} -> {summarize(new)}"
        for n, old, new in diff(base.components, key.components)
    ]
    return "\n".join(lines)
