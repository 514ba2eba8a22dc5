"""The content-addressed store: lookup, publish, evict, verify, explain.

Layout under ``root`` (each directory 0700 and owned by the current user):

    entries/<digest>/            one immutable entry: manifest.json (written last, then
                                 manifest.sig when signing), and files named
                                 <sha256[:16]>-<name the build gave them>
    tmp/build-<pid>-<random>/    private build directory, renamed to entries/<digest>
    tmp/trash-<pid>-<random>/    an entry being deleted: renamed out of entries/ first,
                                 so no reader ever sees half an entry
    locks/<digest>.lock          flock held while a key is built or evicted
    quarantine/<digest>-<ns>-<pid>/  bad entries set aside, with a CacheWarning
    index/<sha256(module)>.json  the newest keys built per module, for explain
    shortcuts/                   the loader's records (load/shortcuts.py): the store
                                 only creates it and checks it like the others

The manifest's mtime is the entry's last use (LRU); lookups bump it with utime.
Nothing depends on the lock for correctness: a publish is one atomic rename, and
the loser of a race uses the winner's entry. A holder that is stopped or hung blocks
others for ``lock_timeout`` seconds at most; then they build anyway, or raise
LockTimeout if the store was opened with ``aside_on_timeout`` (the loader then builds
in a private store).

A publish passes four named steps, in order (PUBLISH_STEPS): ``written`` (the build
callback returned), ``sealed`` (files renamed, manifest written and fsynced),
``before-rename`` and ``after-rename`` (the entry is visible; the index is not yet
updated). The store calls ``on_step(name)`` at each: tests stop the process there and
kill it (CUVIL_AOT_TEST_STOP_AT, see artifacts.py).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from . import index
from .entry import MANIFEST, BadEntry, Entry, open_entry
from .errors import CacheError, CacheWarning, LockTimeout
from .fsutil import (
    check_private_dir,
    flat_size,
    fsync_dir,
    listdir,
    make_private_dirs,
    owner_pid,
    pid_alive,
    remove_path,
)
from .key import CacheKey
from .lock import acquire, holder, release
from .manifest import check_module
from .seal import seal
from .signing import NO_SIGNING, SIG_FILE, Policy
from .stats import PROCESS, CacheStats, Counters

DEFAULT_MAX_BYTES = 4 << 30
STALE_TMP_S = 3600.0
"""A temp directory this old whose owner is dead is swept."""
EVICT_GRACE_S = 10.0
"""Entries used or published more recently are never evicted: someone is loading them."""
QUARANTINE_KEEP_S = 86400.0
SUBDIRS = ("entries", "tmp", "locks", "quarantine", "index", "shortcuts")
PUBLISH_STEPS = ("written", "sealed", "before-rename", "after-rename")
_DIGEST = re.compile(r"[0-9a-f]{64}")

Build = Callable[[Path], Mapping[str, object]]
OnStep = Callable[[str], None]


class Problem(NamedTuple):
    path: Path
    reason: str


class Store:
    def __init__(
        self,
        root: Path,
        max_bytes: int = DEFAULT_MAX_BYTES,
        *,
        lock_timeout: float = 600.0,
        rules: Policy = NO_SIGNING,
        on_step: OnStep | None = None,
        aside_on_timeout: bool = False,
    ) -> None:
        """Open (creating, 0700) the store at ``root``; CacheError if it is unsafe or
        unusable (an existing unsafe store is refused before anything is created in it).

        ``lock_timeout``: how long publish waits for another builder of the same key
        before building anyway (with a CacheWarning), or, with ``aside_on_timeout``,
        raising LockTimeout. ``rules``: which signatures new entries get and lookups
        require (signing.py). ``on_step``: called with each name of PUBLISH_STEPS as a
        publish passes it.
        """
        self.root = Path(os.path.abspath(os.path.expanduser(root)))  # no resolve: see symlinks
        self.max_bytes = max_bytes
        self.lock_timeout = lock_timeout
        self.aside_on_timeout = aside_on_timeout
        self.rules = rules
        self._on_step = on_step
        self._stats = Counters()
        self._entries = self.root / "entries"
        self._tmp = self.root / "tmp"
        self._ensure_layout()

    # --- layout ---------------------------------------------------------------------

    def _ensure_layout(self) -> None:
        try:
            make_private_dirs(self.root)
            check_private_dir(self.root)
            for name in SUBDIRS:  # all that exist are checked before anything is created
                with contextlib.suppress(FileNotFoundError):
                    check_private_dir(self.root / name)
            for name in SUBDIRS:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(self.root / name, 0o700)
                check_private_dir(self.root / name)
        except OSError as exc:
            raise CacheError(f"cannot use cache directory {self.root}: {exc}") from None

    def _present(self) -> bool:
        """False if the store was deleted; CacheError if it became unsafe."""
        try:
            check_private_dir(self.root)
            check_private_dir(self._entries)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise CacheError(f"cannot use cache directory {self.root}: {exc}") from None
        return True

    def _lock_path(self, digest: str) -> Path:
        return self.root / "locks" / f"{digest}.lock"

    def _count(self, **deltas: float) -> None:
        self._stats.add(**deltas)
        PROCESS.add(**deltas)

    # --- lookup ---------------------------------------------------------------------

    def lookup(self, key: CacheKey) -> Entry | None:
        """The verified entry for ``key``, or None. A bad entry is quarantined with a
        CacheWarning and is a miss; a store that became unsafe raises CacheError."""
        found = self._find(key)
        self._count(**({"hits": 1} if found else {"misses": 1}))
        return found

    def _find(self, key: CacheKey) -> Entry | None:
        if not self._present():
            return None
        path = self._entries / key.digest
        try:
            found = open_entry(path, key.digest, rules=self.rules)
        except FileNotFoundError:
            return None
        except BadEntry as exc:
            self._quarantine(path, str(exc), exc.ident)
            return None
        with contextlib.suppress(OSError):  # a read-only cache still serves hits
            os.utime(path / MANIFEST, follow_symlinks=False)
        return found

    def discard(self, entry: Entry, reason: str) -> None:
        """Set aside an entry its user found bad (``reason``), as a lookup sets aside one
        that fails its checks: quarantined with a CacheWarning, unless replaced meanwhile."""
        self._quarantine(entry.path, reason, entry.ident)

    def _quarantine(self, path: Path, reason: str, ident: tuple[int, int] | None) -> None:
        dest = self.root / "quarantine" / f"{path.name}-{time.time_ns()}-{os.getpid()}"
        try:
            st = os.lstat(path)
            if ident is not None and (st.st_dev, st.st_ino) != ident:
                return  # replaced meanwhile: not the entry we judged
            os.rename(path, dest)
        except FileNotFoundError:
            return  # evicted while we read it: a plain miss
        except OSError as exc:
            where = f"it could not be moved aside ({exc.strerror})"
        else:
            where = f"moved to {dest}"
            self._count(quarantined=1)
        warnings.warn(
            f"cuvil_aot cache entry {path} is unusable: {reason}; {where}; treating it as a miss",
            CacheWarning,
            stacklevel=4,
        )

    # --- publish --------------------------------------------------------------------

    def publish(self, key: CacheKey, build: Build, module: str) -> Entry:
        """The entry for ``key``, building it with ``build(tmp_dir)`` unless another
        process already has (or does while we wait for the key's lock).

        ``build`` writes plain files into ``tmp_dir`` and returns JSON-able metadata
        for the manifest. Its exceptions propagate and leave nothing behind. Store
        failures (disk full, read-only, unsafe directory) raise CacheError.
        """
        check_module(module)
        if self.rules.required and self.rules.signer is None:
            raise CacheError(f"cannot publish to {self.root}: it requires signed entries and "
                             "this process has no signing key (CUVIL_AOT_SIGNING_KEY)")
        try:
            return self._publish_locked(key, build, module)
        except CacheError:
            if self._present():
                raise
        return self._publish_locked(key, build, module)  # deleted meanwhile: once more

    def _publish_locked(self, key: CacheKey, build: Build, module: str) -> Entry:
        self._ensure_layout()  # recreates a deleted root
        self._sweep_tmp()
        try:
            fd = acquire(self._lock_path(key.digest), self.lock_timeout)
        except OSError as exc:
            raise CacheError(f"cannot lock {self._lock_path(key.digest)}: {exc}") from None
        if fd is None and self.aside_on_timeout:
            raise LockTimeout(module, key.digest, holder(self._lock_path(key.digest)),
                              self.lock_timeout)
        if fd is None:
            warnings.warn(
                f"cuvil_aot cache: key {key.digest[:16]}… has been locked for over "
                f"{self.lock_timeout:g} s; building it anyway",
                CacheWarning,
                stacklevel=2,
            )
        try:
            return self._find(key) or self._build(key, build, module)
        finally:
            if fd is not None:
                release(fd)

    def _build(self, key: CacheKey, build: Build, module: str) -> Entry:
        try:
            folder = Path(tempfile.mkdtemp(prefix=f"build-{os.getpid()}-", dir=self._tmp))
        except OSError as exc:
            raise CacheError(f"cannot create a build directory in {self._tmp}: {exc}") from None
        try:
            started = time.perf_counter()
            metadata = build(folder)
            self._count(builds=1, build_seconds=time.perf_counter() - started)
            self._step("written")
            try:
                manifest = seal(folder, key, module, metadata, time.time(), self.rules.signer)
                self._step("sealed")
                return self._install(folder, key, Entry(self._entries / key.digest, manifest))
            except OSError as exc:
                raise CacheError(f"cannot publish to {self.root}: {exc}") from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)  # gone already after a publish

    def _install(self, folder: Path, key: CacheKey, ours: Entry) -> Entry:
        for _ in range(3):
            self._step("before-rename")
            try:
                os.rename(folder, ours.path)
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR):
                    raise
                theirs = self._find(key)  # a bad one is quarantined and we try again
                if theirs is not None:
                    return theirs
                continue
            self._step("after-rename")
            fsync_dir(self._entries)
            with contextlib.suppress(OSError, CacheError):  # explain is best effort
                index.record_build(
                    self.root / "index", self._tmp, ours.manifest.module, key, ours.manifest.created
                )
            return ours
        raise CacheError(f"cannot publish {ours.path}: something keeps taking its place")

    def adopt(self, key: CacheKey, fill: Callable[[Path], None]) -> Entry:
        """Publish an entry made elsewhere (a remote cache): ``fill(folder)`` writes its
        manifest, signature and files into a private folder, which must then pass what a
        lookup checks, with a signature by a trusted key required, and hold nothing its
        manifest does not list, before the usual atomic rename. BadEntry (nothing left
        behind) if it fails; CacheError if the store does, or trusts no key."""
        rules = self.rules._replace(required=True)
        if not rules.trusted:
            raise CacheError("an entry made elsewhere is only taken signed by a trusted key")
        self._ensure_layout()
        try:
            folder = Path(tempfile.mkdtemp(prefix=f"build-{os.getpid()}-", dir=self._tmp))
        except OSError as exc:
            raise CacheError(f"cannot create a directory in {self._tmp}: {exc}") from None
        try:
            fill(folder)
            theirs = open_entry(folder, key.digest, rules=rules)
            listed = {MANIFEST, SIG_FILE, *(r.path for r in theirs.manifest.files.values())}
            extra = sorted(set(listdir(folder)) - listed)
            if extra:
                raise BadEntry(f"it holds files its manifest does not list: {extra[:3]}")
            try:
                return self._install(folder, key, Entry(self._entries / key.digest,
                                                        theirs.manifest))
            except OSError as exc:
                raise CacheError(f"cannot publish to {self.root}: {exc}") from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)  # gone already after a publish

    def _step(self, name: str) -> None:
        if self._on_step is not None:
            self._on_step(name)

    # --- housekeeping ---------------------------------------------------------------

    def _sweep_tmp(self) -> None:
        """Remove temp files and directories of dead processes older than STALE_TMP_S."""
        now = time.time()
        for name in listdir(self._tmp):
            path = self._tmp / name
            try:
                age = now - os.lstat(path).st_mtime
            except FileNotFoundError:
                continue
            if age > STALE_TMP_S and not pid_alive(owner_pid(name)):
                remove_path(path)

    def _sweep_quarantine(self, keep_s: float) -> None:
        now = time.time()
        for name in listdir(self.root / "quarantine"):
            path = self.root / "quarantine" / name
            with contextlib.suppress(FileNotFoundError):
                if now - os.lstat(path).st_mtime >= keep_s:
                    remove_path(path)

    def _usage(self) -> list[tuple[float, int, str]]:
        """(last use, bytes, digest) of every entry directory."""
        out = []
        for name in listdir(self._entries):
            path = self._entries / name
            if not _DIGEST.fullmatch(name) or not path.is_dir() or path.is_symlink():
                continue
            try:
                try:
                    used = os.stat(path / MANIFEST, follow_symlinks=False).st_mtime
                except FileNotFoundError:
                    used = os.lstat(path).st_mtime
                out.append((used, flat_size(path), name))
            except FileNotFoundError:
                continue  # removed meanwhile
        return out

    def _remove_entry(self, digest: str) -> bool:
        """Delete one entry unless a publisher holds its lock; False if not removed."""
        lock_path = self._lock_path(digest)
        try:
            fd = acquire(lock_path, 0.0)
            if fd is None:
                return False
            try:
                trash = self._tmp / f"trash-{os.getpid()}-{os.urandom(8).hex()}"
                os.rename(self._entries / digest, trash)
                shutil.rmtree(trash, ignore_errors=True)
                lock_path.unlink(missing_ok=True)  # safe while held: see lock.py
                return True
            finally:
                release(fd)
        except FileNotFoundError:
            return False  # gone already, or the whole store was deleted

    def evict(self, max_bytes: int | None = None) -> list[str]:
        """Remove least recently used entries until the store fits ``max_bytes``
        (default: the store's cap). Returns the digests removed."""
        cap = self.max_bytes if max_bytes is None else max_bytes
        try:
            if not self._present():
                return []
            self._sweep_tmp()
            self._sweep_quarantine(QUARANTINE_KEEP_S)
            usage = sorted(self._usage())
            total = sum(size for _, size, _ in usage)
            removed: list[str] = []
            now = time.time()
            for used, size, digest in usage:
                if total <= cap:
                    break
                if now - used >= EVICT_GRACE_S and self._remove_entry(digest):
                    total -= size
                    removed.append(digest)
            return removed
        except OSError as exc:
            raise CacheError(f"cannot evict from {self.root}: {exc}") from None

    def clear(self) -> int:
        """Remove every entry not being published, the quarantine and the index."""
        try:
            removed = [d for _, _, d in self._usage() if self._remove_entry(d)]
            self._sweep_quarantine(0.0)
            for name in listdir(self.root / "index"):
                remove_path(self.root / "index" / name)
            return len(removed)
        except OSError as exc:
            raise CacheError(f"cannot clear {self.root}: {exc}") from None

    # --- inspection -----------------------------------------------------------------

    def size(self) -> int:
        return sum(size for _, size, _ in self._usage())

    def in_grace(self) -> tuple[int, int]:
        """(entries, bytes) used or published in the last EVICT_GRACE_S seconds: eviction
        keeps them, since a process may be loading them."""
        now = time.time()
        recent = [size for used, size, _ in self._usage() if now - used < EVICT_GRACE_S]
        return len(recent), sum(recent)

    def entries(self) -> list[Entry]:
        """Entries whose manifest reads, most recently used first (files not re-hashed)."""
        found = []
        for _, _, digest in sorted(self._usage(), reverse=True):
            with contextlib.suppress(FileNotFoundError, BadEntry):
                found.append(open_entry(self._entries / digest, digest, False, self.rules))
        return found

    def verify_all(self) -> list[Problem]:
        """Re-hash every entry and check the index; report, without changing anything,
        what is wrong."""
        problems = [Problem(path, why) for path, why in index.problems(self.root / "index")]
        for name in listdir(self._entries):
            path = self._entries / name
            if not _DIGEST.fullmatch(name):
                problems.append(Problem(path, "not a cache entry"))
                continue
            try:
                entry = open_entry(path, name, rules=self.rules)
            except FileNotFoundError:
                continue
            except BadEntry as exc:
                problems.append(Problem(path, str(exc)))
                continue
            listed = {MANIFEST, SIG_FILE, *(r.path for r in entry.manifest.files.values())}
            problems += [
                Problem(path / n, "file not listed in the manifest")
                for n in listdir(path)
                if n not in listed
            ]
        return problems

    def explain(self, module: str, key: CacheKey) -> str:
        """Which key components differ from the newest other build recorded for ``module``."""
        return index.explain(index.load_history(self.root / "index", module), module, key)

    def stats(self) -> CacheStats:
        """This store's counters in this process (``cuvil_aot.cache.stats()`` sums all)."""
        return self._stats.snapshot()
