"""``python -m cuvil_aot verify``: check installed wheels that cuvil_aot's PEP 517 backend
built against the files on disk.

Such a wheel's ``.dist-info`` holds ``cuvil_aot_build.json`` (build/aot.py), which names
each prebuilt extension and its manifest (prebuilt.py) with the extension's SHA-256
and size, and ``RECORD``, which the installer wrote with every file's hash. ``verify``
re-hashes every file RECORD lists, requires the build manifest and each prebuilt file
to be listed there, and checks that the build manifest, each prebuilt manifest and
each extension agree. It reads and hashes; it never imports or loads what it checks.

What it catches is damage and tampering after installation by someone who did not
also rewrite RECORD and the manifests (see SECURITY.md).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

from cuvil_aot.cache import CacheError
from cuvil_aot.load import prebuilt

BUILD_MANIFEST = "cuvil_aot_build.json"
"""As build/aot.py names it (not imported: that pulls in the build machinery)."""
FORMAT = "cuvil_aot.wheel"
_CHUNK = 1 << 20


class Report(NamedTuple):
    name: str
    version: str
    modules: int
    files: int
    problems: list[str]


def _sha256(path: Path) -> tuple[bytes, int]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as data:
        while chunk := data.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.digest(), size


def _check_record(dist: metadata.Distribution) -> tuple[dict[str, Path], list[str]]:
    """Every hashed RECORD row against its file: ({listed name: path}, problems)."""
    listed: dict[str, Path] = {}
    problems = []
    for item in dist.files or []:
        if item.hash is None:
            continue  # RECORD itself, and files written after installation (.pyc)
        path = Path(str(item.locate()))
        listed[item.as_posix()] = path
        if item.hash.mode != "sha256":
            problems.append(f"{item}: RECORD uses {item.hash.mode}, not sha256")
            continue
        try:
            digest, size = _sha256(path)
        except OSError as exc:
            problems.append(f"{item}: cannot be read ({exc.strerror})")
            continue
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != item.hash.value:
            problems.append(f"{item}: its SHA-256 differs from RECORD")
        elif item.size is not None and size != item.size:
            problems.append(f"{item}: {size} bytes, RECORD says {item.size}")
    return listed, problems


def _check_module(record: Any, listed: dict[str, Path]) -> list[str]:
    """One module of the build manifest: its files listed, hashed and consistent."""
    if not isinstance(record, dict) or not all(
            isinstance(record.get(k), str) for k in ("module", "extension", "manifest", "sha256")):
        return [f"{BUILD_MANIFEST}: malformed module record {record!r:.80}"]
    name, ext, man = record["module"], record["extension"], record["manifest"]
    missing = [f"{name}: {f} is not listed in RECORD" for f in (ext, man) if f not in listed]
    if missing:
        return missing
    try:
        pre = prebuilt.parse(listed[man], listed[man].read_bytes())
        digest, size = _sha256(listed[ext])
    except OSError as exc:
        return [f"{name}: cannot read {exc.filename}: {exc.strerror}"]
    except CacheError as exc:
        return [f"{name}: {man}: {exc}"]
    agree = {  # each: (what the file says,) what the build manifest says, what the prebuilt says
        "extension SHA-256": (digest.hex(), record["sha256"], pre.sha256),
        "extension size": (size, record.get("size"), pre.size),
        "module name": (name, pre.module),
        "extension file name": (Path(ext).name, pre.file),
        "extension module name": (record.get("ext_name"), pre.ext_name),
    }
    return [f"{name}: {what} disagrees: {' vs '.join(map(repr, values))}"
            for what, values in agree.items() if len(set(values)) != 1]


def check(dist: metadata.Distribution) -> Report:
    """Verify one installed distribution that carries a cuvil_aot build manifest."""
    name, version = dist.metadata["Name"], dist.version
    listed, problems = _check_record(dist)
    text = dist.read_text(BUILD_MANIFEST)
    modules: list[Any] = []
    if text is None:
        problems.append(f"no {BUILD_MANIFEST} in its .dist-info")
    elif not any(p.endswith("/" + BUILD_MANIFEST) for p in listed):
        problems.append(f"{BUILD_MANIFEST} is not listed in RECORD")
    else:
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or \
                not isinstance(doc.get("modules"), list):
            problems.append(f"{BUILD_MANIFEST} is not a {FORMAT} document")
        else:
            modules = doc["modules"]
    for record in modules:
        problems += _check_module(record, listed)
    return Report(name, version, len(modules), len(listed), problems)


def built_by_cuvil_aot(dists: Iterable[metadata.Distribution]) -> list[metadata.Distribution]:
    return [d for d in dists if any(str(f).endswith("/" + BUILD_MANIFEST) for f in d.files or [])]


def cmd_verify(args: argparse.Namespace) -> int:
    """Print one line per distribution (and one per problem); 1 if any problem."""
    if args.distributions:
        try:
            dists = [metadata.distribution(n) for n in args.distributions]
        except metadata.PackageNotFoundError as exc:
            print(f"error: no installed distribution named {exc.args[0]!r}")
            return 1
    else:
        dists = built_by_cuvil_aot(metadata.distributions())
        if not dists:
            print("no installed distribution carries a cuvil_aot build manifest")
            return 0
    status = 0
    for dist in dists:
        report = check(dist)
        head = f"{report.name} {report.version}"
        if report.problems:
            status = 1
            print(f"BAD {head}: {len(report.problems)} problem(s)")
            for problem in report.problems:
                print(f"  {problem}")
        else:
            print(f"OK  {head}: {report.modules} compiled module(s), {report.files} files match")
    return status
