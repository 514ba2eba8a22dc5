"""A published entry: reading and verifying it, and handing out its verified files.

Verification goes through descriptors opened relative to the entry directory's own
descriptor with O_NOFOLLOW, so a symlink or a swapped directory cannot redirect it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import manifest as mf
from . import signing
from .errors import CacheError
from .fsutil import NOFOLLOW, hash_fd, read_capped, unsafe_reason

MANIFEST = "manifest.json"


class BadEntry(CacheError):
    """An entry that must not be used; the message says why."""

    def __init__(self, reason: str, ident: tuple[int, int] | None = None) -> None:
        super().__init__(reason)
        self.ident = ident
        """(st_dev, st_ino) of the entry directory that was judged, when it was opened."""


class _MissingFile(BadEntry):
    """A file the entry should hold is not there."""


@dataclass(frozen=True)
class Entry:
    path: Path
    manifest: mf.Manifest
    ident: tuple[int, int] | None = field(default=None, compare=False)
    """(st_dev, st_ino) of the directory that was read, when it was read."""

    def file(self, logical_name: str) -> Path:
        """Path of a file by the name the build wrote it under (KeyError if none)."""
        return self.path / self.manifest.files[logical_name].path

    @property
    def size(self) -> int:
        return sum(record.size for record in self.manifest.files.values())

    @contextlib.contextmanager
    def verified(self, logical_name: str) -> Iterator[tuple[Path, Path]]:
        """(a path to the very bytes verified, the file's real path), for loading.

        The file is opened once and hashed through that descriptor; the path given is
        /proc/self/fd/N (the same inode, whatever happens to the real path) through a
        symlink with a fresh name, since CPython caches extensions by path and
        /proc/self/fd/N names differ only by N. Without /proc the verified bytes are
        copied to a private file. Raises CacheError, before anything can be loaded, if
        the file is missing (evicted meanwhile: treat it as a miss) or does not match
        the manifest. The path is valid inside the ``with`` block only.
        """
        record = self.manifest.files[logical_name]
        path = self.path / record.path
        try:
            fd = os.open(path, os.O_RDONLY | NOFOLLOW)
        except OSError as exc:
            raise BadEntry(f"cannot open {path}: {exc.strerror}") from None
        try:
            with _private_dir() as folder:
                origin = folder / path.name
                proc_path = _proc_fd_path(fd)
                if proc_path is not None:
                    check_file(fd, logical_name, record)
                    origin.symlink_to(proc_path)
                else:
                    with open(origin, "xb") as out:
                        check_file(fd, logical_name, record, sink=out.write)
                yield origin, path
        finally:
            os.close(fd)


def _proc_fd_path(fd: int) -> str | None:
    path = f"/proc/self/fd/{fd}"
    return path if os.path.exists(path) else None


@contextlib.contextmanager
def _private_dir() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="cuvil_aot-load-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def check_file(
    fd: int, logical: str, record: mf.FileRecord, sink: Callable[[bytes], object] | None = None
) -> None:
    """Raise BadEntry unless ``fd`` is a safe regular file with the recorded size and hash."""
    st = os.fstat(fd)
    reason = unsafe_reason(st, want_dir=False)
    if reason is not None:
        raise BadEntry(f"file {logical!r} {reason}")
    size = st.st_size
    if size != record.size:
        raise BadEntry(f"file {logical!r} is {size} bytes, the manifest says {record.size}")
    sha, _ = hash_fd(fd, sink)
    if sha != record.sha256:
        raise BadEntry(f"file {logical!r} does not match its SHA-256 in the manifest")


def _open_in(dfd: int, name: str, what: str) -> int:
    try:
        return os.open(name, os.O_RDONLY | NOFOLLOW, dir_fd=dfd)
    except FileNotFoundError:
        raise _MissingFile(f"{what} is missing") from None
    except OSError as exc:
        raise BadEntry(f"{what} cannot be opened: {exc.strerror}") from None


def _read_small(dfd: int, name: str, limit: int) -> bytes:
    """The bytes of a small file of the entry, checked like every file of it."""
    fd = _open_in(dfd, name, name)
    try:
        st = os.fstat(fd)
        reason = unsafe_reason(st, want_dir=False)
        if reason is not None:
            raise BadEntry(f"{name} {reason}")
        if st.st_size > limit:
            raise BadEntry(f"{name} is {st.st_size} bytes, over the {limit} limit")
        return read_capped(fd, limit)
    except BadEntry:
        raise
    except CacheError as exc:
        raise BadEntry(f"{name}: {exc}") from None
    finally:
        os.close(fd)


def _read_manifest(dfd: int, rules: signing.Policy) -> mf.Manifest:
    data = _read_small(dfd, MANIFEST, mf.MAX_BYTES)
    try:
        manifest = mf.parse_manifest(data)
    except CacheError as exc:
        raise BadEntry(f"{MANIFEST}: {exc}") from None
    if rules.trusted:  # checked over the very bytes just parsed
        try:
            sig: bytes | None = _read_small(dfd, signing.SIG_FILE, signing.MAX_BYTES)
        except _MissingFile:
            sig = None
        reason = signing.check(rules, data, sig)
        if reason is not None:
            raise BadEntry(f"refused by the signing policy: {reason}")
    return manifest


def _check_entry(dfd: int, digest: str, verify: bool, rules: signing.Policy) -> mf.Manifest:
    reason = unsafe_reason(os.fstat(dfd), want_dir=True)
    if reason is not None:
        raise BadEntry(f"entry directory {reason}")
    manifest = _read_manifest(dfd, rules)
    if manifest.key != digest:
        raise BadEntry(f"{MANIFEST} is for key {manifest.key[:16]}…, not {digest[:16]}…")
    for logical, record in manifest.files.items() if verify else ():
        fd = _open_in(dfd, record.path, f"file {logical!r} ({record.path})")
        try:
            check_file(fd, logical, record)
        finally:
            os.close(fd)
    return manifest


def open_entry(
    path: Path, digest: str, verify: bool = True, rules: signing.Policy = signing.NO_SIGNING
) -> Entry:
    """Read the entry at ``path`` for ``digest``, checking every file's hash if ``verify``
    and its signature as ``rules`` say.

    FileNotFoundError if there is no entry; BadEntry (carrying the directory's
    identity) if there is one that must not be used.
    """
    try:
        dfd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW)
    except FileNotFoundError:
        raise
    except OSError as exc:  # ELOOP: a symlink; ENOTDIR: a plain file
        raise BadEntry(f"entry cannot be opened as a directory: {exc.strerror}") from None
    try:
        st = os.fstat(dfd)
        ident = (st.st_dev, st.st_ino)
        try:
            return Entry(path, _check_entry(dfd, digest, verify, rules), ident)
        except BadEntry as exc:
            raise BadEntry(str(exc), ident) from None
    finally:
        os.close(dfd)
