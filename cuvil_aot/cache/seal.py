"""Turning a finished build directory into an entry: content-addressed names, manifest last."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from .entry import MANIFEST
from .errors import CacheError
from .fsutil import NOFOLLOW, fsync_dir, hash_fd, write_new_file
from .key import CacheKey
from .manifest import FileRecord, Manifest, check_file_name, parse_manifest, stored_name
from .signing import SIG_FILE, Key, signature_doc


def _json_object(metadata: Mapping[str, object]) -> dict[str, object]:
    try:
        return dict(json.loads(json.dumps(dict(metadata), allow_nan=False)))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"build metadata must be a JSON object: {exc}") from None


def _store_file(folder: Path, name: str, taken: set[str]) -> FileRecord:
    """Hash, fsync and write-protect one output, then rename it to its content address."""
    check_file_name(name)
    if not stat.S_ISREG(os.lstat(folder / name).st_mode):
        raise CacheError(f"build output {name!r} is not a regular file")
    fd = os.open(folder / name, os.O_RDONLY | NOFOLLOW)
    try:
        sha, size = hash_fd(fd)
        os.fsync(fd)
        os.fchmod(fd, 0o400)  # an entry is never written in place
    finally:
        os.close(fd)
    final = stored_name(name, sha)
    if final in taken:
        raise CacheError(f"build outputs {name!r} and {final!r} would collide")
    os.rename(folder / name, folder / final)
    return FileRecord(path=final, sha256=sha, size=size)


def seal(
    folder: Path,
    key: CacheKey,
    module: str,
    metadata: Mapping[str, object],
    now: float,
    signer: Key | None = None,
) -> Manifest:
    """Rename every file the build wrote and write manifest.json last (then its
    signature, with ``signer``), all fsynced.

    Returns the manifest as a lookup will parse it. The build may write only plain
    files (no directories or links) directly in ``folder``.
    """
    names = sorted(os.listdir(folder))
    if not names:
        raise CacheError("the build wrote no files")
    files = {name: _store_file(folder, name, set(names)) for name in names}
    manifest = Manifest(
        key=key.digest,
        components=key.components,
        module=module,
        created=now,
        files=files,
        metadata=_json_object(metadata),
    )
    data = manifest.to_json()
    write_new_file(folder / MANIFEST, data)
    if signer is not None:
        write_new_file(folder / SIG_FILE, signature_doc(signer, data))
    os.chmod(folder, 0o700)  # whatever the build did to it
    fsync_dir(folder)
    return parse_manifest(data)
