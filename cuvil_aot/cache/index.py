"""Per-module build history, for ``explain``: which key components changed.

root/index/<sha256(module)[:32]>.json keeps the newest two keys built for a module,
so that right after a rebuild ``explain`` can still show what the rebuild changed.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .errors import CacheError
from .fsutil import read_doc
from .key import CacheKey, check_components, diff, digest_of, summarize
from .manifest import MAX_BYTES, load_json

FORMAT = "cuvil_aot.cache.index"
HISTORY = 2


@dataclass(frozen=True)
class Record:
    key: str
    components: Mapping[str, str]
    created: float


def index_file(index_dir: Path, module: str) -> Path:
    return index_dir / f"{hashlib.sha256(module.encode()).hexdigest()[:32]}.json"


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


def load_history(index_dir: Path, module: str) -> list[Record]:
    """Newest first; an unreadable or foreign index counts as no history."""
    doc = read_doc(index_file(index_dir, module), MAX_BYTES, load_json, FORMAT, module)
    history = doc.get("history") if doc is not None else None
    if not isinstance(history, list):
        return []
    try:
        return [_record(raw) for raw in history]
    except CacheError:
        return []


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
    fd, tmp = tempfile.mkstemp(prefix=f"index-{os.getpid()}-", dir=tmp_dir)
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(doc, out, sort_keys=True)
        os.replace(tmp, index_file(index_dir, module))
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
