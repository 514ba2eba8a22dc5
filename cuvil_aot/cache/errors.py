"""The cache's two exception types."""

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
