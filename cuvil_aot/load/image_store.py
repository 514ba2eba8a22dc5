"""The compiler's GPU image cache (toolchain/nvcc.ImageCache) kept in the store: each
compiled unit image is an entry of its own, verified (and signed, where the store signs)
like an extension's, evicted like one. A cache that fails is only a slower build: a
lookup that fails is a miss, a put that fails is skipped."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path

from cuvil_aot.cache import CacheError, CacheKey, Store

IMAGE = "image"
"""The file name of an image in its entry."""


class StoreImages:
    def __init__(self, store: Store, module: str) -> None:
        self.store, self.module = store, module

    def get(self, key: Mapping[str, str]) -> bytes | None:
        try:
            entry = self.store.lookup(CacheKey(key))
            if entry is None or IMAGE not in entry.manifest.files:
                return None
            with entry.verified(IMAGE) as (path, _):
                return path.read_bytes()
        except (CacheError, OSError):
            return None

    def put(self, key: Mapping[str, str], data: bytes) -> None:
        def write(folder: Path) -> dict[str, object]:
            (folder / IMAGE).write_bytes(data)
            return {"image of": self.module}

        with contextlib.suppress(CacheError, OSError):
            self.store.publish(CacheKey(key), write, self.module)
