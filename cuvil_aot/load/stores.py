"""The stores of this process: the cache at the settings' root, or a private fallback.

One ``Store`` per root for the whole process. A root that cannot be used (unsafe,
read-only, full, gone bad mid-process, or no home directory to put it in) is replaced
by one private store in a fresh temp directory, with one ``CacheWarning`` per process:
the import still works, it just does not share its build. A key locked by a stopped or
hung builder is built in that private store too, for that key only (``build_aside``).
The command line opens the root itself with ``open_shared``: no fallback, a refused
cache is an error there.
"""

from __future__ import annotations

import os
import signal
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from cuvil_aot.cache import CacheError, CacheWarning, Store, default_cache_dir, private_store
from cuvil_aot.cache.signing import Policy, policy
from cuvil_aot.cache.store import PUBLISH_STEPS, OnStep

if TYPE_CHECKING:
    from cuvil_aot.load.artifacts import Settings

_lock = threading.Lock()
_stores: dict[Path, Store] = {}
_private: list[Store] = []


def signing_policy(settings: Settings) -> Policy:
    """The signing rules the settings ask for; CacheError if a key cannot be used."""
    if not (settings.signing_key or settings.verify_key or settings.require_signed):
        return Policy()
    return policy(settings.signing_key, settings.verify_key, settings.require_signed)


def stopper(step: str) -> OnStep | None:
    """CUVIL_AOT_TEST_STOP_AT: stop this process at a publish step, for a test to kill it.

    SIGSTOP, not a self-kill: the test sends the SIGKILL, as an operator's kill -9 would,
    and may look at the cache while the process stands still."""
    if not step:
        return None
    if step not in PUBLISH_STEPS:
        raise CacheError(f"CUVIL_AOT_TEST_STOP_AT={step!r}: expected one of {PUBLISH_STEPS}")

    def on_step(name: str) -> None:
        if name == step:
            os.kill(os.getpid(), signal.SIGSTOP)

    return on_step


def _root(settings: Settings) -> Path:
    return Path(os.path.abspath(settings.cache_dir or default_cache_dir()))


def _open(root: Path, settings: Settings, rules: Policy, on_step: OnStep | None) -> Store:
    return Store(root, settings.max_bytes, lock_timeout=settings.lock_timeout, rules=rules,
                 on_step=on_step, aside_on_timeout=True)


def open_shared(settings: Settings) -> Store:
    """The store at the settings' root; CacheError (nothing created) if it is refused."""
    return _open(_root(settings), settings, signing_policy(settings), stopper(settings.stop_at))


def open_store(settings: Settings) -> Store:
    """The store at the settings' root, or (with one warning) a private one if unusable."""
    rules = signing_policy(settings)  # a bad key is the user's error: never silently unsigned
    on_step = stopper(settings.stop_at)
    try:
        root = _root(settings)
    except CacheError as exc:  # no home directory
        with _lock:
            return _private_locked(exc, settings.max_bytes, rules)
    with _lock:
        store = _stores.get(root)
        if store is None:
            try:
                store = _open(root, settings, rules, on_step)
            except CacheError as exc:
                store = _private_locked(exc, settings.max_bytes, rules)
            _stores[root] = store
        return store


def _private_locked(exc: CacheError, max_bytes: int, rules: Policy, warn: bool = True) -> Store:
    if not _private:
        if warn:
            warnings.warn(f"cuvil_aot: {exc}; using a private cache for this process instead",
                          CacheWarning, stacklevel=5)
        # Our own fresh 0700 directory: its entries need no signature to be trusted.
        _private.append(private_store(max_bytes, rules._replace(required=False)))
    return _private[0]


def build_aside(store: Store, exc: CacheError) -> Store:
    """The private store, for one key ``store`` cannot give us now (``exc`` says why: a
    LockTimeout names the module and the holder's PID); warns once, with that reason.
    ``store`` stays this process's store for everything else."""
    warnings.warn(f"cuvil_aot: {exc}; building it in a private cache instead",
                  CacheWarning, stacklevel=4)
    with _lock:
        return _private_locked(exc, store.max_bytes, store.rules, warn=False)


def fall_back(store: Store, exc: CacheError) -> Store:
    """Replace a store that failed mid-process by the private one (the same one if the
    private store itself failed: its CacheError then reaches the caller)."""
    with _lock:
        if store in _private:
            raise exc
        fallback = _private_locked(exc, store.max_bytes, store.rules)
        for root, known in list(_stores.items()):
            if known is store:
                _stores[root] = fallback
        return fallback
