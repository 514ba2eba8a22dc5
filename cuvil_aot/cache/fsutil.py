"""Small file-system helpers: private directories, ownership checks, hashing, fsync.

Everything here works on one path or one descriptor and knows nothing about the
store's layout.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from .errors import CacheError

CHUNK = 1 << 20
NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def unsafe_reason(st: os.stat_result, want_dir: bool) -> str | None:
    """Why an lstat/fstat result may not be trusted, or None when it may."""
    if stat.S_ISLNK(st.st_mode):
        return "is a symlink"
    if want_dir and not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if not want_dir and not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if st.st_uid != os.geteuid():
        return f"is owned by uid {st.st_uid}, not by the current user ({os.geteuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def check_private_dir(path: Path) -> None:
    """Raise CacheError unless ``path`` is a real directory, ours, not writable by others."""
    reason = unsafe_reason(os.lstat(path), want_dir=True)
    if reason is not None:
        raise CacheError(f"refusing cache directory {path}: it {reason}")


def make_private_dirs(path: Path) -> None:
    """Create ``path`` and any missing parents with mode 0700 (os.makedirs would not)."""
    missing: list[Path] = []
    probe = path
    while not os.path.lexists(probe):
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process was first; caller checks
            os.mkdir(directory, 0o700)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def hash_fd(fd: int, sink: Callable[[bytes], object] | None = None) -> tuple[str, int]:
    """SHA-256 hex and size of everything readable from ``fd``, from offset 0.

    ``sink`` receives each chunk, so a caller can copy exactly the bytes hashed.
    """
    sha = hashlib.sha256()
    offset = 0
    while chunk := os.pread(fd, CHUNK, offset):
        sha.update(chunk)
        if sink is not None:
            sink(chunk)
        offset += len(chunk)
    return sha.hexdigest(), offset


def read_capped(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes of ``fd``; CacheError if it holds more."""
    data = bytearray()
    while len(data) <= limit and (chunk := os.read(fd, limit + 1 - len(data))):
        data += chunk
    if len(data) > limit:
        raise CacheError(f"file is larger than {limit} bytes")
    return bytes(data)


def write_new_file(path: Path, data: bytes, mode: int = 0o400) -> None:
    """Write ``data`` to a file that must not exist yet, and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_file(path: Path, data: bytes, tmp_dir: Path | None = None, mode: int = 0o600,
                 durable: bool = False) -> None:
    """Write ``data`` under a temp name in ``tmp_dir`` (default: ``path``'s folder) and
    rename it over ``path``: readers see the old file or the new one, never a part, and a
    process that has the old file open or loaded keeps its inode. ``durable`` fsyncs the
    bytes before the rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-{os.getpid()}-", dir=tmp_dir or path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False  # kill(0 or -n) would signal a whole process group
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, belongs to someone else
    except OSError as exc:
        return exc.errno != errno.ESRCH
    return True


def listdir(path: Path) -> list[str]:
    """Sorted names in ``path``; [] if it is gone."""
    try:
        return sorted(os.listdir(path))
    except (FileNotFoundError, NotADirectoryError):
        return []


def remove_path(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)


def owner_pid(name: str) -> int:
    """The PID in '<kind>-<pid>-<random>' (the kind may hold dashes, the random part
    never does), or 0 (never alive) for other names."""
    parts = name.split("-")
    return int(parts[-2]) if len(parts) > 2 and parts[-2].isdigit() else 0


def flat_size(path: Path) -> int:
    with os.scandir(path) as items:
        return sum(i.stat(follow_symlinks=False).st_size for i in items)


def _check_fd(fd: int, what: str, want_dir: bool) -> None:
    reason = unsafe_reason(os.fstat(fd), want_dir)
    if reason is not None:
        raise CacheError(f"{what} {reason}")


def read_private(folder: Path, name: str, limit: int) -> bytes | None:
    """The bytes of ``folder/name``, trusted as an entry's files are: the folder and the
    file ours, not writable by group or others, not symlinks (opened with O_NOFOLLOW,
    the file relative to the folder's descriptor), at most ``limit`` bytes.

    None if either is missing; otherwise CacheError saying why the file ("it ...") or its
    folder may not be trusted.
    """
    try:
        dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CacheError(f"its folder cannot be opened as a directory: {exc.strerror}") from None
    try:
        _check_fd(dfd, "its folder", want_dir=True)
        try:
            fd = os.open(name, os.O_RDONLY | NOFOLLOW, dir_fd=dfd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            why = "a symlink" if exc.errno == errno.ELOOP else f"unreadable: {exc.strerror}"
            raise CacheError(f"it is {why}") from None
        try:
            _check_fd(fd, "it", want_dir=False)
            return read_capped(fd, limit)
        finally:
            os.close(fd)
    finally:
        os.close(dfd)


def sweep_dead(folder: Path, prefix: str, min_age: float) -> None:
    """Remove what dead processes left in a shared ``folder``: the entries named
    ``<prefix><pid>-<random>`` that are ours, untouched for ``min_age`` seconds (a
    process of another PID namespace may look dead) and whose process is gone. A name
    without a PID is never touched. One listing and an lstat per match: cheap enough
    before each build."""
    now = time.time()
    for name in listdir(folder):
        pid = owner_pid(name) if name.startswith(prefix) else 0
        if pid == 0:
            continue
        path = folder / name
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if st.st_uid == os.geteuid() and now - st.st_mtime > min_age and not pid_alive(pid):
            remove_path(path)
