"""The remote cache tier behind the local store (cache/remote.py): pulled on a local
miss, pushed after a local build, never on the call path; a lease so that a fleet
missing the same key builds it a bounded number of times.

On a local miss of a full key (artifacts.py), ``fetch``:

1. gets ``entry/<digest>`` from the remote; a blob is unpacked into the local store's
   temp folder and published by ``Store.adopt``, which verifies it as a lookup would,
   with a signature by a trusted key required: a blob that is garbage, truncated,
   another key's entry or unsigned is a miss, with a CacheWarning naming it;
2. on a miss, takes the key's lease (``lease/<digest>``, TTL the lock-wait knob) and
   returns: this process builds, pushes the entry (``Pending.push``), releases;
3. when another process holds the lease, polls the local store and the remote until
   CUVIL_AOT_LOCK_TIMEOUT has passed (taking the lease if it expires: a builder that
   died), then builds here.

The remote's faults (down, past CUVIL_AOT_REMOTE_CACHE_TIMEOUT, full, dropping the
connection mid-transfer) cost one CacheWarning per process; then it is skipped for the
rest of the process (a full one: only pushes are). Without a trusted signing key the
tier is off, with one warning saying why. A process that can verify but not sign
(CUVIL_AOT_VERIFY_KEY only) pulls and never pushes.
"""

from __future__ import annotations

import json
import os
import threading
import time
import warnings
from typing import NamedTuple

from cuvil_aot.cache import CacheError, CacheKey, CacheWarning, Entry, Store
from cuvil_aot.cache.entry import BadEntry
from cuvil_aot.cache.manifest import load_doc
from cuvil_aot.cache.remote import (
    Config,
    Remote,
    RemoteError,
    RemoteFull,
    entry_name,
    key_of,
    lease_name,
    open_remote,
    pack,
    unpack,
)
from cuvil_aot.cache.signing import Policy, check, signature_doc
from cuvil_aot.load.settings import Settings
from cuvil_aot.load.shortcuts import Record, parse_record

_SHORTCUT = "cuvil_aot.remote.shortcut"
_DOMAIN = b"cuvil_aot.remote.shortcut.v1\0"
"""Prefixed to a remote shortcut's signed bytes: its signature fits nothing else."""
_POLL_MIN_S = 0.05
_POLL_MAX_S = 0.5
_lock = threading.Lock()
_tiers: dict[Config, Tier | None] = {}
_warned: list[str] = []


def _warn_once(message: str) -> None:
    with _lock:
        if _warned:
            return
        _warned.append(message)
    warnings.warn(message, CacheWarning, stacklevel=4)


class Tier:
    """One remote, as this process uses it: what failed so far, and what it counted."""

    def __init__(self, remote: Remote, rules: Policy, wait_s: float) -> None:
        self.remote = remote
        self.rules = rules._replace(required=True)
        self.wait_s = wait_s
        self.down = False
        """A fault was seen: the remote is skipped for the rest of the process."""
        self.no_pushes = rules.signer is None
        """Nothing is pushed: no signer here, or the remote is full."""
        self.bad: set[str] = set()
        """Digests whose remote value proved unusable: warned about once."""
        self.counts: dict[str, int] = {}
        """This process's hits, misses, bad blobs, pushes and bytes moved."""

    def fault(self, exc: RemoteError, pushes_only: bool = False) -> None:
        if pushes_only or isinstance(exc, RemoteFull):  # a full remote still serves reads
            self.no_pushes = True
            what = "entries built here are not shared for the rest of this process"
        else:
            self.down = True
            what = "this process carries on without it (building on a miss)"
        _warn_once(f"cuvil_aot: {exc}; {what}")

    def _count(self, field: str, by: int = 1) -> None:
        self.counts[field] = self.counts.get(field, 0) + by
        if field in ("hits", "misses", "bad", "pushes"):
            try:
                self.remote.count(field, by)
            except RemoteError as exc:
                self.fault(exc)

    def pull(self, store: Store, key: CacheKey, count: bool = True) -> Entry | None:
        """The key's entry from the remote, verified and published into ``store``; None
        on a miss, a bad blob (with a warning) or a fault."""
        blob = self._get(key.digest)
        if blob is None:
            if count and not self.down:
                self._count("misses")
            return None
        return self._adopt(store, key, blob)

    def pull_digest(self, store: Store, digest: str) -> Entry | None:
        """``pull`` by a key's digest alone (``cache pull KEY``): the blob names its key."""
        blob = self._get(digest)
        if blob is None:
            return None
        try:
            key = key_of(blob)
        except BadEntry as exc:
            self._bad(digest, exc)
            return None
        return self._adopt(store, key, blob) if key.digest == digest else None

    def _get(self, digest: str) -> bytes | None:
        if self.down:
            return None
        try:
            return self.remote.get(entry_name(digest))
        except RemoteError as exc:
            self.fault(exc)
            return None

    def _bad(self, digest: str, exc: CacheError) -> None:
        if digest in self.bad:
            return
        self.bad.add(digest)
        self._count("bad")
        warnings.warn(f"cuvil_aot: the remote cache {self.remote.where} holds an unusable "
                      f"entry for key {digest[:16]}…: {exc}; building it here instead",
                      CacheWarning, stacklevel=4)

    def _adopt(self, store: Store, key: CacheKey, blob: bytes) -> Entry | None:
        try:
            entry = store.adopt(key, lambda folder: unpack(blob, folder))
        except BadEntry as exc:
            self._bad(key.digest, exc)
            return None
        except CacheError:
            return None  # the local store failed: the caller falls back as on any miss
        self._count("hits")
        self._count("bytes_in", len(blob))
        return entry

    def lease(self, key: CacheKey) -> str | None:
        """A token if this process now holds the key's lease, else None."""
        if self.down:
            return None
        token = f"{os.uname().nodename}:{os.getpid()}:{os.urandom(8).hex()}"
        try:
            got = self.remote.lease(lease_name(key.digest), token, max(self.wait_s, 1.0))
        except RemoteError as exc:
            self.fault(exc)
            return None
        return token if got else None

    def release(self, key: CacheKey, token: str) -> None:
        if not self.down:
            try:
                self.remote.release(lease_name(key.digest), token)
            except RemoteError as exc:
                self.fault(exc)

    def push(self, entry: Entry) -> bool:
        """Store a local entry on the remote (signed: re-verified first); whether it was."""
        if self.down or self.no_pushes:
            return False
        try:
            blob = pack(entry, self.rules)
        except (CacheError, OSError):
            return False  # unsigned, changed or gone: nothing a reader could take
        try:
            self.remote.put(entry_name(entry.manifest.key), blob)
        except RemoteError as exc:
            self.fault(exc, pushes_only=True)
            return False
        self._count("pushes")
        self._count("bytes_out", len(blob))
        return True

    def wait_for(self, store: Store, key: CacheKey) -> tuple[Entry | None, str | None]:
        """Another process holds the lease: poll until its entry appears here or on the
        remote, or the lease is ours (its holder died), or the wait is over."""
        deadline = time.monotonic() + self.wait_s
        pause = _POLL_MIN_S
        while not self.down and time.monotonic() < deadline:
            time.sleep(pause)
            pause = min(pause * 1.5, _POLL_MAX_S)
            if (store.root / "entries" / key.digest).exists():  # a builder on this machine
                found = store.lookup(key)
                if found is not None:
                    return found, None
            found = self.pull(store, key, count=False)
            if found is not None:
                return found, None
            token = self.lease(key)
            if token is not None:  # its holder pushed and released, or died
                return self.pull(store, key, count=False), token
        return None, None


class Pending(NamedTuple):
    """A key this process builds after a remote miss: push it, then release the lease."""

    tier: Tier
    key: CacheKey
    token: str | None

    def push(self, entry: Entry) -> None:
        self.tier.push(entry)

    def release(self) -> None:
        if self.token is not None:
            self.tier.release(self.key, self.token)


def config(settings: Settings) -> Config:
    return Config(settings.remote_cache, settings.remote_timeout, settings.remote_ttl,
                  settings.remote_endpoint)


def open_tier(settings: Settings, rules: Policy) -> Tier | None:
    """This process's tier for the settings' remote; None (with one warning) when it
    cannot be used: no trusted key, a bad URL, its client library missing."""
    wanted = config(settings)
    with _lock:
        if wanted in _tiers:
            return _tiers[wanted]
    tier = None
    if not rules.trusted:
        _warn_once(f"cuvil_aot: CUVIL_AOT_REMOTE_CACHE={wanted.url} is off: entries from a "
                   "remote cache are only taken signed, and no key is set to check them "
                   "(CUVIL_AOT_SIGNING_KEY, or CUVIL_AOT_VERIFY_KEY on machines that only read)")
    else:
        try:
            tier = Tier(open_remote(wanted), rules, float(settings.lock_timeout))
        except CacheError as exc:
            _warn_once(f"cuvil_aot: {exc}; the remote cache is off")
    with _lock:
        return _tiers.setdefault(wanted, tier)


def fetch(settings: Settings, store: Store, key: CacheKey,
          wait: bool) -> tuple[Entry | None, Pending | None]:
    """After a local miss: the key's entry from the remote (published into ``store``), or
    what to do after building it here (None: no usable remote). ``wait``: this process
    may build (not strict mode), so it leases the key or waits for its holder."""
    tier = open_tier(settings, store.rules)
    if tier is None:
        return None, None
    entry = tier.pull(store, key)
    if entry is not None or not wait or tier.down:
        return entry, None
    if tier.no_pushes:  # what we build here is not shared: no lease, nobody waits for us
        return None, Pending(tier, key, None)
    token = tier.lease(key)
    if tier.down or tier.no_pushes:
        return None, Pending(tier, key, None)
    if token is not None and key.digest not in tier.bad:
        entry = tier.pull(store, key, count=False)  # pushed just before we leased?
    else:
        entry, token = tier.wait_for(store, key)
    if entry is not None:
        Pending(tier, key, token).release()
        return entry, None
    return None, Pending(tier, key, token)


# --- shortcuts: a machine like the builder skips the compiler (the full key) -------------


def shortcut_name(module: str, prekey: str) -> str:
    return f"shortcut/{prekey}-{module}"


def remember(settings: Settings, store: Store, module: str, record: Record) -> None:
    """After a build: store the record (cheap key, compiler stamp -> full key), signed,
    so that a machine with the same sources and toolchain loads without the compiler."""
    tier = open_tier(settings, store.rules)
    if tier is None or tier.down or tier.no_pushes or tier.rules.signer is None:
        return
    line = json.dumps({"format": _SHORTCUT, "module": module, **record.to_json()},
                      sort_keys=True).encode()
    data = line + b"\n" + signature_doc(tier.rules.signer, _DOMAIN + line)
    try:
        tier.remote.put(shortcut_name(module, record.prekey), data)
    except RemoteError as exc:
        tier.fault(exc, pushes_only=True)


def shortcut(settings: Settings, store: Store, module: str, prekey: str,
             stamp: dict[str, str] | None) -> tuple[CacheKey, Entry] | None:
    """Before the full key: the entry a signed remote record names for this cheap key and
    this compiler stamp, pulled and verified; None otherwise (the full key decides)."""
    tier = open_tier(settings, store.rules)
    if tier is None or tier.down or stamp is None:
        return None
    try:
        data = tier.remote.get(shortcut_name(module, prekey))
    except RemoteError as exc:
        tier.fault(exc)
        return None
    if data is None:
        return None
    line, _, sig = data.partition(b"\n")
    try:
        if check(tier.rules, _DOMAIN + line, sig.strip() or None) is not None:
            return None
        doc = load_doc(line, _SHORTCUT)
        found = parse_record({k: v for k, v in doc.items() if k not in ("format", "module")},
                             module)
    except CacheError:
        return None
    if found.prekey != prekey or found.compiler != stamp:
        return None
    entry = tier.pull(store, found.key, count=False)
    return (found.key, entry) if entry is not None else None
