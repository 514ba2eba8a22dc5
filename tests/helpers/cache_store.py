"""Shared pieces of the cache store tests (tests/test_cache_store*.py)."""

from __future__ import annotations

import importlib.machinery
import multiprocessing
import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from cuvil_aot import cache
from cuvil_aot.cache import CacheKey, Store

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
EXT = "mod" + SUFFIX
FORK = multiprocessing.get_context("fork") if sys.platform == "linux" else None
needs_fork = pytest.mark.skipif(FORK is None, reason="needs fork (Linux)")


def make_key(**changes: str) -> CacheKey:
    base = {
        "source": "def f(x):\n    return x + 1\n",
        "signatures": "f(f32[B,128])",
        "options": "opt=2",
        "cuvil_aot_version": "0.1.0",
        "python_abi": "cp311",
    }
    return CacheKey({**base, **changes})


def writer(
    files: Mapping[str, bytes] | None = None,
    counter: Path | None = None,
    delay: float = 0.0,
    metadata: Mapping[str, object] | None = None,
) -> Callable[[Path], Mapping[str, object]]:
    """A build callback: counts itself in ``counter``, then writes ``files``."""
    files = (
        {EXT: b"\x7fELF" + b"code" * 256, "kernels.fatbin": b"fatbin"} if files is None else files
    )

    def build(folder: Path) -> Mapping[str, object]:
        if counter is not None:
            with open(counter, "a") as out:
                out.write(f"{os.getpid()}\n")
        time.sleep(delay)
        for name, data in files.items():
            (folder / name).write_bytes(data)
        return {"functions": ["f"]} if metadata is None else metadata

    return build


def publish(store: Store, key: CacheKey | None = None, **kw: Any) -> cache.Entry:
    return store.publish(key or make_key(), writer(**kw), "pkg.mod")


def rewrite(path: Path, data: bytes) -> None:
    """Write over a read-only cache file, as an attacker or a bad disk would."""
    os.chmod(path, 0o600)
    path.write_bytes(data)
    os.chmod(path, 0o400)


def leftovers(root: Path) -> list[str]:
    return sorted(os.listdir(root / "tmp"))


def run_child(target: Callable[[], None]) -> int:
    """Run ``target`` in a forked child; its exit code (a crash fails only the child)."""
    assert FORK is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        child = FORK.Process(target=target)
        child.start()
    child.join(60)
    assert child.exitcode is not None
    return child.exitcode
