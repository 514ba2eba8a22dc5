"""Per-key advisory locks with flock(2).

The lock only keeps two processes from building one key at the same time; the
store stays correct without it (publish is an atomic rename). Lock files may be
unlinked by whoever holds them, so after each flock the holder checks that the
path still names the file it locked, and retries on a fresh file if not. A waiter
that gives up can ask the kernel (/proc/locks) which process holds the lock.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from .fsutil import NOFOLLOW

_POLL_MIN_S = 0.002
_POLL_MAX_S = 0.05


def _same_file(path: Path, fd: int) -> bool:
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    here = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (here.st_dev, here.st_ino)


def _try_once(path: Path) -> int | None:
    """The descriptor holding the lock, or None if another holder has it."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        if _same_file(path, fd):
            return fd
        os.close(fd)  # we locked a file its holder had just unlinked: take the new one


def acquire(path: Path, timeout: float) -> int | None:
    """Wait up to ``timeout`` seconds for the lock; polling keeps the wait bounded."""
    deadline = time.monotonic() + timeout
    pause = _POLL_MIN_S
    while (fd := _try_once(path)) is None:
        if time.monotonic() >= deadline:
            return None
        time.sleep(pause)
        pause = min(pause * 2, _POLL_MAX_S)
    return fd


def holder(path: Path) -> int:
    """The PID holding the flock on ``path`` as /proc/locks tells it; 0 if unknown."""
    try:
        st = os.stat(path, follow_symlinks=False)
        with open("/proc/locks") as locks:
            lines = locks.read().splitlines()
    except OSError:
        return 0
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in lines:  # "1: FLOCK  ADVISORY  WRITE 4242 fe:00:2150010 0 EOF"
        fields = line.split()
        if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == want:
            return int(fields[4]) if fields[4].isdigit() else 0
    return 0


def release(fd: int) -> None:
    os.close(fd)  # closing the only descriptor releases the flock
