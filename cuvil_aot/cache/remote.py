"""A remote cache tier shared by many machines: the backend protocol, its URL, and the
one blob an entry travels as.

``CUVIL_AOT_REMOTE_CACHE`` names the remote: ``redis://host:port/db`` (remote_redis.py)
or ``s3://bucket/prefix`` (remote_s3.py). A backend stores opaque blobs under names:

    entry/<key digest>   an entry as one gzipped tar (``pack``): its manifest.json,
                         manifest.sig and content-addressed files, flat
    lease/<key digest>   who is building the key now (``lease``): a token with a TTL

Nothing that comes back is trusted: ``unpack`` writes regular files with plain names
into a private folder (no paths, no links, no ``..``, sizes capped), and the store
verifies the result as it would its own entry, with a signature required
(``Store.adopt``). A backend's client library is imported when the remote is first
used (on a local miss), never by ``import cuvil_aot`` or a local hit.

Errors: ``RemoteError`` when the remote cannot be used (down, slow past the timeout,
full, refusing us); BadEntry (entry.py) when what it returned is not a usable entry.
"""

from __future__ import annotations

import io
import os
import tarfile
import zlib
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from .entry import MANIFEST, BadEntry, Entry, open_entry
from .errors import CacheError
from .fsutil import NOFOLLOW
from .key import CacheKey
from .manifest import MAX_BYTES as MAX_MANIFEST
from .manifest import check_file_name, parse_manifest
from .remote_types import Config, RemoteError, RemoteFull
from .signing import SIG_FILE, Policy

__all__ = ["Config", "Remote", "RemoteError", "RemoteFull", "check_url", "entry_name",
           "key_of", "lease_name", "open_remote", "pack", "unpack"]

SCHEMES = ("redis", "rediss", "s3")
MAX_BLOB_BYTES = 1 << 30
"""The most an entry may unpack to (a fatbin for many GPUs is tens of MiB)."""
MAX_MEMBERS = 64


class Remote(Protocol):
    """A backend. Every method raises RemoteError, and only that, when the remote fails."""

    where: str
    """The remote, for messages (no credentials)."""

    def get(self, name: str) -> bytes | None:
        """The blob stored under ``name`` (refreshing its TTL), or None."""

    def put(self, name: str, data: bytes) -> None:
        """Store ``data`` under ``name``, replacing what is there."""

    def lease(self, name: str, token: str, ttl_s: float) -> bool:
        """Create ``name`` holding ``token`` for ``ttl_s`` seconds unless it exists
        (an expired one does not count); whether we did."""

    def release(self, name: str, token: str) -> None:
        """Remove ``name`` if it still holds ``token``."""

    def count(self, field: str, by: int = 1) -> None:
        """Add to a shared counter (hits, misses, puts), best effort."""

    def usage(self) -> dict[str, int]:
        """Counters and sizes for ``cache info``: entries, bytes, and the counters."""

    def names(self) -> list[str]:
        """The digests of the entries stored."""


def entry_name(digest: str) -> str:
    return f"entry/{digest}"


def lease_name(digest: str) -> str:
    return f"lease/{digest}"


def check_url(url: str) -> str:
    """``url`` if it names a remote cuvil_aot can use; CacheError saying why not."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise CacheError(f"CUVIL_AOT_REMOTE_CACHE={url!r}: expected redis://host:port/db or "
                         "s3://bucket/prefix")
    if not parts.hostname:
        raise CacheError(f"CUVIL_AOT_REMOTE_CACHE={url!r}: no host or bucket")
    return url


def open_remote(config: Config) -> Remote:
    """The backend for ``config.url``; CacheError if its client library is missing or the
    URL is malformed (nothing is contacted yet)."""
    scheme = urlsplit(check_url(config.url)).scheme
    try:
        if scheme == "s3":
            from .remote_s3 import S3Remote

            return S3Remote(config)
        from .remote_redis import RedisRemote

        return RedisRemote(config)
    except ImportError as exc:
        raise CacheError(f"the remote cache {config.url} needs the {exc.name!r} package "
                         "(pip install 'cuvil-aot[remote]')") from None


# --- one entry as one blob ---------------------------------------------------------------


def _read_file(folder: Path, name: str) -> bytes:
    fd = os.open(folder / name, os.O_RDONLY | NOFOLLOW)
    with os.fdopen(fd, "rb") as src:
        return src.read()


def pack(entry: Entry, rules: Policy) -> bytes:
    """The gzipped tar of a local entry, re-verified (every file's hash, its key, its
    signature by ``rules``, which should require one); BadEntry if it fails."""
    fresh = open_entry(entry.path, entry.manifest.key, verify=True, rules=rules)
    names = [MANIFEST, SIG_FILE, *sorted(r.path for r in fresh.manifest.files.values())]
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=6) as tar:
        for name in names:
            data = _read_file(entry.path, name)
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o400, 0
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _member_name(name: str) -> str:
    try:
        return check_file_name(name)  # a plain name: no '/', no leading '.', no '..'
    except CacheError:
        raise BadEntry(f"its blob holds a member named {name[:80]!r}") from None


def _extract(tar: tarfile.TarFile, member: tarfile.TarInfo, folder: Path) -> None:
    src = tar.extractfile(member)
    if src is None:
        raise BadEntry(f"its blob's member {member.name!r} cannot be read")
    fd = os.open(folder / member.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o400)
    with os.fdopen(fd, "wb") as out:
        left = member.size
        while left and (chunk := src.read(min(left, 1 << 20))):
            out.write(chunk)
            left -= len(chunk)
    if left:
        raise BadEntry(f"its blob's member {member.name!r} is truncated")


def unpack(blob: bytes, folder: Path, limit: int = MAX_BLOB_BYTES) -> None:
    """Write the files of an entry's blob into the empty private ``folder``: regular
    files with plain names only, each once, ``limit`` bytes in all; BadEntry otherwise
    (garbage, truncated, a link, a path). What is written is then verified as an entry."""
    seen: set[str] = set()
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
            for member in tar:
                name = _member_name(member.name)
                if not member.isreg():
                    raise BadEntry(f"its blob's member {name!r} is not a regular file")
                if name in seen or len(seen) >= MAX_MEMBERS:
                    raise BadEntry(f"its blob holds {name!r} twice, or too many members")
                total += member.size
                if total > limit:
                    raise BadEntry(f"its blob unpacks to over {limit} bytes")
                seen.add(name)
                _extract(tar, member, folder)
    except (tarfile.TarError, EOFError, zlib.error, OSError, ValueError) as exc:
        raise BadEntry(f"its blob is not a whole entry ({type(exc).__name__}: "
                       f"{str(exc)[:120]})") from None
    if MANIFEST not in seen:
        raise BadEntry("its blob holds no manifest")


def key_of(blob: bytes) -> CacheKey:
    """The key an entry's blob says it is for (its manifest's components); BadEntry if it
    holds no readable manifest. Nothing else is checked: ``Store.adopt`` does that."""
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
            member = tar.getmember(MANIFEST)
            src = tar.extractfile(member)
            if not member.isreg() or member.size > MAX_MANIFEST or src is None:
                raise BadEntry("its blob's manifest is not a small regular file")
            manifest = parse_manifest(src.read(member.size))
    except (tarfile.TarError, EOFError, zlib.error, OSError, ValueError, KeyError) as exc:
        raise BadEntry(f"its blob is not a whole entry ({type(exc).__name__})") from None
    except CacheError as exc:
        raise BadEntry(f"its blob's manifest: {exc}") from None
    return CacheKey(manifest.components)
