"""Shortcuts from a cheap key (prekey.py) to the full cache key recorded at build time.

One small JSON file per module, ``<cache root>/shortcuts/<sha256(module)[:32]>.json``,
replaced atomically (last writer wins), holding the newest few records:

    {"format": "cuvil_aot.shortcuts", "schema": 1, "module": "pkg.mod",
     "records": [{"prekey": "<sha256 of the cheap components>",
                  "compiler": {"command": ..., "cc": ..., "nvcc": ...} | null,
                  "components": {<the full key's components>}}]}

A record only names a key; the entry it leads to is verified by the store as usual,
so a wrong or stale record costs a miss, never a wrong load. Unreadable files count
as empty. The directory lives beside the store's own and follows its rules (0700,
ours, no symlinks); temp files are named like the store's so its sweep removes
the ones a killed process leaves.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from cuvil_aot.cache import CacheError, CacheKey
from cuvil_aot.cache.fsutil import check_private_dir, read_doc
from cuvil_aot.cache.key import check_components
from cuvil_aot.cache.manifest import load_json

FORMAT = "cuvil_aot.shortcuts"
SCHEMA = 1
KEEP = 8
MAX_BYTES = 1 << 18
DIRNAME = "shortcuts"
_STAMP_FIELDS = frozenset({"command", "cc", "nvcc"})


class Record(NamedTuple):
    prekey: str
    compiler: Mapping[str, str] | None
    key: CacheKey

    def to_json(self) -> dict[str, object]:
        return {
            "prekey": self.prekey,
            "compiler": dict(self.compiler) if self.compiler is not None else None,
            "components": dict(self.key.components),
        }


def _file(root: Path, module: str) -> Path:
    return root / DIRNAME / f"{hashlib.sha256(module.encode()).hexdigest()[:32]}.json"


def _stamp(raw: object) -> Mapping[str, str] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) != _STAMP_FIELDS:
        raise CacheError("bad compiler stamp")
    if not all(isinstance(v, str) for v in raw.values()):
        raise CacheError("bad compiler stamp")
    return dict(raw)


def _record(raw: object) -> Record:
    if not isinstance(raw, dict) or set(raw) != {"prekey", "compiler", "components"}:
        raise CacheError("bad shortcut record")
    prekey, components = raw["prekey"], raw["components"]
    if not isinstance(prekey, str) or not isinstance(components, dict):
        raise CacheError("bad shortcut record")
    return Record(prekey, _stamp(raw["compiler"]), CacheKey(check_components(components)))


def load(root: Path, module: str) -> list[Record]:
    """The module's records, newest first; [] if there are none or they cannot be read."""
    doc = read_doc(_file(root, module), MAX_BYTES, load_json, FORMAT, module)
    records = doc.get("records") if doc is not None and doc.get("schema") == SCHEMA else None
    if not isinstance(records, list):
        return []
    try:
        return [_record(r) for r in records]
    except CacheError:
        return []


def find(
    root: Path, module: str, prekey: str, compiler: Mapping[str, str] | None, any_compiler: bool
) -> list[CacheKey]:
    """Full keys recorded for ``prekey``, best first: built with ``compiler`` (the one a
    build would use now), then, if ``any_compiler``, built with any other."""
    records = [r for r in load(root, module) if r.prekey == prekey]
    same = [r.key for r in records if r.compiler == compiler]
    other = [r.key for r in records if r.compiler != compiler] if any_compiler else []
    return same + other


def record(root: Path, module: str, new: Record) -> None:
    """Put ``new`` first among the module's records (best effort: CacheError/OSError)."""
    folder = root / DIRNAME
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    check_private_dir(folder)
    older = [r for r in load(root, module) if (r.prekey, r.compiler) != (new.prekey, new.compiler)]
    doc = {
        "format": FORMAT,
        "schema": SCHEMA,
        "module": module,
        "records": [r.to_json() for r in [new, *older][:KEEP]],
    }
    fd, tmp = tempfile.mkstemp(prefix=f"shortcut-{os.getpid()}-", dir=root / "tmp")
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(doc, out, sort_keys=True)
        os.replace(tmp, _file(root, module))
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def clear(root: Path) -> int:
    """Remove every shortcut file; the number removed."""
    removed = 0
    with contextlib.suppress(FileNotFoundError):
        for name in os.listdir(root / DIRNAME):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(root / DIRNAME / name)
                removed += 1
    return removed
