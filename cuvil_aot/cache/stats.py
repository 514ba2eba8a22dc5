"""Hit, miss and build counters for this process."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class CacheStats:
    hits: int = 0
    misses: int = 0
    builds: int = 0
    """Build callbacks that returned (whether or not their entry won the publish)."""
    build_seconds: float = 0.0
    quarantined: int = 0
    """Bad entries moved aside."""


class Counters:
    """Thread-safe accumulation of CacheStats."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value = CacheStats()

    def add(self, **deltas: float) -> None:
        with self._lock:
            now = self._value
            self._value = replace(now, **{k: getattr(now, k) + v for k, v in deltas.items()})

    def snapshot(self) -> CacheStats:
        return self._value


PROCESS = Counters()
"""Every store of this process adds to these; ``cuvil_aot.cache.stats()`` reads them."""
