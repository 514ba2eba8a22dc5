"""The cache's exception and warning types."""

from __future__ import annotations


class CacheError(Exception):
    """The cache cannot be used as asked: an unsafe or unwritable directory, a bad entry.

    Callers fall back to a private store (``private_store()``) or to building
    without a cache; a ``CacheError`` never means the user's code is wrong.
    """


class CacheWarning(Warning):
    """Something in the cache was wrong and has been set aside (quarantined, skipped).

    The message names the entry and the reason; the operation carried on as a miss.
    """


class LockTimeout(CacheError):
    """Another process has held a key's lock for longer than the store waits (it may be
    stopped or hung): the caller builds elsewhere. ``holder`` is its PID, 0 if unknown."""

    def __init__(self, module: str, digest: str, holder: int, waited: float) -> None:
        who = f"process {holder}" if holder else "another process"
        super().__init__(f"module {module!r}: its cache key {digest[:16]}… has been locked by "
                         f"{who} for over {waited:g} s (stopped or hung? CUVIL_AOT_LOCK_TIMEOUT)")
        self.module, self.holder = module, holder
