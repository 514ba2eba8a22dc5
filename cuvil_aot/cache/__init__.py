"""cuvil_aot's compile cache: keys, a content-addressed store, locking, eviction, explain.

Self-contained: it stores directories of files under a key and knows nothing about
the compiler. The usual sequence is ``store.lookup(key)`` and, on a miss,
``store.publish(key, build, module)``; on CacheError, fall back to ``private_store()``
(on LockTimeout, a key locked by a stopped or hung process, too).
"""

from __future__ import annotations

from .entry import BadEntry, Entry
from .errors import CacheError, CacheWarning, LockTimeout
from .key import CacheKey, diff
from .location import default_cache_dir, private_store
from .stats import PROCESS, CacheStats
from .store import DEFAULT_MAX_BYTES, Problem, Store


def stats() -> CacheStats:
    """Hits, misses, builds and build seconds of every store in this process."""
    return PROCESS.snapshot()


__all__ = [
    "DEFAULT_MAX_BYTES",
    "BadEntry",
    "CacheError",
    "CacheKey",
    "CacheStats",
    "CacheWarning",
    "Entry",
    "LockTimeout",
    "Problem",
    "Store",
    "default_cache_dir",
    "diff",
    "private_store",
    "stats",
]
