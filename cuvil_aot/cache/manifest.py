"""The entry manifest: a strictly validated JSON document, never pickle.

An entry's manifest names the key it was built for and every file with its SHA-256
and size. ``parse_manifest`` accepts exactly the schema below and raises only
``CacheError``; anything else in the file is a reason to distrust the entry.

    {"format": "cuvil_aot.cache.entry", "schema": 1,
     "key": "<sha256 hex of the canonical components>",
     "components": {"source": "...", ...},
     "module": "pkg.mod", "created": 1700000000.0,
     "files": {"mod.cpython-311-x86_64-linux-gnu.so":
               {"path": "<sha256[:16]>-mod.cpython-311-x86_64-linux-gnu.so",
                "sha256": "<hex>", "size": 12345}},
     "metadata": {...}}
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeVar

from .errors import CacheError
from .key import check_components, digest_of

FORMAT = "cuvil_aot.cache.entry"
SCHEMA = 1
MAX_BYTES = 1 << 20
PREFIX_LEN = 16
FIELDS = frozenset(
    {"format", "schema", "key", "components", "module", "created", "files", "metadata"}
)
_HEX64 = re.compile(r"[0-9a-f]{64}")
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}")
_T = TypeVar("_T")


@dataclass(frozen=True)
class FileRecord:
    path: str
    """File name inside the entry directory: ``<sha256[:16]>-<logical name>``."""
    sha256: str
    size: int


@dataclass(frozen=True)
class Manifest:
    key: str
    components: Mapping[str, str]
    module: str
    created: float
    files: Mapping[str, FileRecord]
    """Logical name (the name the build wrote) to the stored file."""
    metadata: Mapping[str, object]
    """Whatever JSON object the build callback returned."""

    def to_json(self) -> bytes:
        doc = {
            "format": FORMAT,
            "schema": SCHEMA,
            "key": self.key,
            "components": dict(self.components),
            "module": self.module,
            "created": self.created,
            "files": {n: vars(r) for n, r in self.files.items()},
            "metadata": dict(self.metadata),
        }
        return json.dumps(doc, sort_keys=True, indent=1, allow_nan=False).encode() + b"\n"


def stored_name(logical: str, sha256: str) -> str:
    """Content-addressed file name; keeps the logical name's suffix (e.g. an
    EXTENSION_SUFFIX) so the file stays importable."""
    return f"{sha256[:PREFIX_LEN]}-{logical}"


def check_file_name(name: object) -> str:
    if not isinstance(name, str) or not _FILE_NAME.fullmatch(name):
        raise CacheError(f"bad file name {name!r}: expected a plain name of [A-Za-z0-9_.+-]")
    return name


def check_module(name: object) -> str:
    if not isinstance(name, str) or len(name) > 512:
        raise CacheError(f"bad module name {name!r}")
    if not all(part.isidentifier() for part in name.split(".")):
        raise CacheError(f"bad module name {name!r}")
    return name


def _reject_constant(token: str) -> object:
    raise CacheError(f"non-finite number {token}")


def load_json(data: bytes) -> object:
    """Decode at most MAX_BYTES of strict JSON (no NaN/Infinity); CacheError otherwise."""
    if len(data) > MAX_BYTES:
        raise CacheError(f"document is larger than {MAX_BYTES} bytes")
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise CacheError(f"not valid JSON: {type(exc).__name__}") from None


def load_doc(data: bytes, fmt: str) -> dict[str, object]:
    """A small JSON object whose "format" is ``fmt`` (index and shortcut files), about
    the module its "module" names; CacheError otherwise."""
    doc = load_json(data)
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        raise CacheError(f"not a {fmt} document")
    check_module(doc.get("module"))
    return doc


def _field(doc: Mapping[str, object], name: str, kind: type[_T]) -> _T:
    value = doc[name]
    if isinstance(value, bool) or not isinstance(value, kind):
        raise CacheError(f"manifest field {name!r} has type {type(value).__name__}")
    return value


def _created(raw: object) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise CacheError("manifest field 'created' is not a number")
    try:
        value = float(raw)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        raise CacheError("manifest field 'created' is not a finite number")
    return value


def _file_record(logical: str, raw: object) -> FileRecord:
    if not isinstance(raw, dict) or set(raw) != {"path", "sha256", "size"}:
        raise CacheError(f"manifest file {logical!r}: expected exactly path, sha256, size")
    sha, size, path = raw["sha256"], raw["size"], raw["path"]
    if not isinstance(sha, str) or not _HEX64.fullmatch(sha):
        raise CacheError(f"manifest file {logical!r}: bad sha256")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise CacheError(f"manifest file {logical!r}: bad size")
    if path != stored_name(logical, sha):
        raise CacheError(f"manifest file {logical!r}: path {path!r} is not content-addressed")
    return FileRecord(path=path, sha256=sha, size=size)


def _files(raw: object) -> Mapping[str, FileRecord]:
    if not isinstance(raw, dict) or not raw:
        raise CacheError("manifest field 'files' must be a non-empty object")
    return MappingProxyType({check_file_name(n): _file_record(n, r) for n, r in raw.items()})


def _components(raw: object, key: str) -> Mapping[str, str]:
    if not isinstance(raw, dict):
        raise CacheError("manifest field 'components' must be an object")
    components = check_components(raw)
    if digest_of(components) != key:
        raise CacheError("manifest key does not match its own components")
    return MappingProxyType(components)


def parse_manifest(data: bytes) -> Manifest:
    """Parse and validate a manifest; raises CacheError (only) on anything unexpected."""
    doc = load_json(data)
    if not isinstance(doc, dict):
        raise CacheError("manifest is not a JSON object")
    if set(doc) != FIELDS:
        missing, extra = sorted(FIELDS - set(doc)), sorted(set(doc) - FIELDS)
        raise CacheError(f"manifest fields: missing {missing}, unexpected {extra}")
    if doc["format"] != FORMAT or _field(doc, "schema", int) != SCHEMA:
        raise CacheError(
            f"manifest format/schema {doc['format']!r}/{doc['schema']!r} is not {FORMAT!r}/{SCHEMA}"
        )
    key = _field(doc, "key", str)
    if not _HEX64.fullmatch(key):
        raise CacheError("manifest field 'key' is not a SHA-256 hex digest")
    return Manifest(
        key=key,
        components=_components(doc["components"], key),
        module=check_module(doc["module"]),
        created=_created(doc["created"]),
        files=_files(doc["files"]),
        metadata=MappingProxyType(_field(doc, "metadata", dict)),
    )
