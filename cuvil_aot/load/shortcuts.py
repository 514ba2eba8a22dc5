"""Shortcuts from a cheap key (prekey.py) to the full cache key recorded at build time.

One small file per module, ``<cache root>/shortcuts/<sha256(module)[:32]>.json``,
replaced atomically (last writer wins), holding the newest few records on its first
line and, when this process signs cache entries, a signature of that line on the next:

    {"format": "cuvil_aot.shortcuts", "schema": 2, "module": "pkg.mod",
     "records": [{"prekey": "<sha256 of the cheap components>",
                  "compiler": {"command": ..., "cc": ..., "nvcc": ...} | null,
                  "components": {<the full key's components>}}]}
    {"format": "cuvil_aot.cache.signature", ...}        (cache/signing.py)

What makes a planted record useless:

- the file is read as an entry's files are (fsutil.read_private): folder and file ours,
  not writable by group or others, no symlinks;
- a record's key must name the file's module (its "module" component), and the file
  must be the importing module's: a record can only lead to an entry built for that
  module, whose manifest is verified by the store as usual (and signed, if required);
- where signatures are trusted (CUVIL_AOT_SIGNING_KEY, CUVIL_AOT_VERIFY_KEY) the
  signature is checked as an entry's is, over a domain of its own: with
  CUVIL_AOT_REQUIRE_SIGNED=1 an unsigned or altered file is ignored, so a record
  cannot tie this cheap key to another (older) build of the module either.

A file that fails any check counts as empty: the full key decides, and the file is
rewritten. ``problems`` names such files for ``cache verify``. Temp files are named like
the store's, so its sweep removes the ones a killed process leaves.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from cuvil_aot.cache import CacheError, CacheKey, signing
from cuvil_aot.cache.fsutil import check_private_dir, listdir, read_private, replace_file
from cuvil_aot.cache.key import check_components
from cuvil_aot.cache.manifest import load_doc

FORMAT = "cuvil_aot.shortcuts"
SCHEMA = 2
KEEP = 8
MAX_BYTES = 1 << 18
DIRNAME = "shortcuts"
_STAMP_FIELDS = frozenset({"command", "cc", "nvcc"})
_FIELDS = frozenset({"format", "schema", "module", "records"})
_DOMAIN = b"cuvil_aot.shortcuts.v2\0"
"""Prefixed to the signed bytes: a shortcut's signature never fits a manifest, nor back."""


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


def file_name(module: str) -> str:
    return f"{hashlib.sha256(module.encode()).hexdigest()[:32]}.json"


def _stamp(raw: object) -> Mapping[str, str] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) != _STAMP_FIELDS:
        raise CacheError("bad compiler stamp")
    if not all(isinstance(v, str) for v in raw.values()):
        raise CacheError("bad compiler stamp")
    return dict(raw)


def parse_record(raw: object, module: str) -> Record:
    """One record of ``module`` as ``Record.to_json`` wrote it; CacheError if it is not,
    or names a key of another module."""
    if not isinstance(raw, dict) or set(raw) != {"prekey", "compiler", "components"}:
        raise CacheError("bad shortcut record")
    prekey, components = raw["prekey"], raw["components"]
    if not isinstance(prekey, str) or not isinstance(components, dict):
        raise CacheError("bad shortcut record")
    key = CacheKey(check_components(components))
    if key.components.get("module") != module:
        raise CacheError(f"a record of module {module!r} names a key of module "
                         f"{key.components.get('module')!r}")
    return Record(prekey, _stamp(raw["compiler"]), key)


def _parse(data: bytes, rules: signing.Policy) -> tuple[str, list[Record]]:
    """(module, records) of a shortcut file; CacheError saying why it may not be used."""
    doc_bytes, _, sig = data.partition(b"\n")
    reason = signing.check(rules, _DOMAIN + doc_bytes, sig.strip() or None)
    if reason is not None:
        raise CacheError(f"refused by the signing policy: {reason}")
    doc = load_doc(doc_bytes, FORMAT)
    if set(doc) != _FIELDS or doc["schema"] != SCHEMA or not isinstance(doc["records"], list):
        raise CacheError(f"not a {FORMAT} file of schema {SCHEMA}")
    module = str(doc["module"])
    return module, [parse_record(raw, module) for raw in doc["records"]]


def _read(root: Path, name: str, rules: signing.Policy) -> tuple[str, list[Record]] | None:
    data = read_private(root / DIRNAME, name, MAX_BYTES)
    if data is None:
        return None
    module, records = _parse(data, rules)
    if name != file_name(module):
        raise CacheError(f"it holds the records of module {module!r} under another name")
    return module, records


def load(root: Path, module: str, rules: signing.Policy = signing.NO_SIGNING) -> list[Record]:
    """The module's records, newest first; [] if there are none or they may not be used."""
    try:
        found = _read(root, file_name(module), rules)
    except CacheError:
        return []
    return found[1] if found is not None and found[0] == module else []


def find(
    root: Path, module: str, prekey: str, compiler: Mapping[str, str] | None, any_compiler: bool,
    rules: signing.Policy = signing.NO_SIGNING,
) -> list[CacheKey]:
    """Full keys recorded for ``prekey``, best first: built with ``compiler`` (the one a
    build would use now), then, if ``any_compiler``, built with any other."""
    records = [r for r in load(root, module, rules) if r.prekey == prekey]
    same = [r.key for r in records if r.compiler == compiler]
    other = [r.key for r in records if r.compiler != compiler] if any_compiler else []
    return same + other


def record(root: Path, module: str, new: Record,
           rules: signing.Policy = signing.NO_SIGNING) -> None:
    """Put ``new`` first among the module's records, signed if ``rules`` has a signer
    (best effort: CacheError/OSError). Without a signer where signatures are required,
    nothing is written: no reader would use it."""
    if rules.required and rules.signer is None:
        return
    folder = root / DIRNAME
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    check_private_dir(folder)
    # A signer keeps only records someone trusted signed: it never signs what it read unsigned.
    keep = load(root, module, rules._replace(required=True) if rules.signer else rules)
    older = [r for r in keep if (r.prekey, r.compiler) != (new.prekey, new.compiler)]
    doc = {
        "format": FORMAT,
        "schema": SCHEMA,
        "module": module,
        "records": [r.to_json() for r in [new, *older][:KEEP]],
    }
    data = json.dumps(doc, sort_keys=True).encode() + b"\n"
    if rules.signer is not None:
        data += signing.signature_doc(rules.signer, _DOMAIN + data[:-1])
    replace_file(folder / file_name(module), data, root / "tmp")


def problems(root: Path, rules: signing.Policy) -> list[tuple[Path, str]]:
    """(path, why) for each shortcut file that would be ignored, for ``cache verify``."""
    bad = []
    for name in listdir(root / DIRNAME):
        try:
            _read(root, name, rules)
        except CacheError as exc:
            bad.append((root / DIRNAME / name, str(exc)))
    return bad


def clear(root: Path) -> int:
    """Remove every shortcut file; the number removed."""
    removed = 0
    with contextlib.suppress(FileNotFoundError):
        for name in os.listdir(root / DIRNAME):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(root / DIRNAME / name)
                removed += 1
    return removed
