"""Where the cache lives: the per-user default, and a private fallback store."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from .errors import CacheError
from .signing import NO_SIGNING, Policy
from .store import DEFAULT_MAX_BYTES, Store


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """$XDG_CACHE_HOME/cuvil_aot, else ~/.cache/cuvil_aot (~/Library/Caches on macOS)."""
    env = os.environ if env is None else env
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "cuvil_aot"
    xdg = env.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else home / ".cache") / "cuvil_aot"


def private_store(max_bytes: int = DEFAULT_MAX_BYTES, rules: Policy = NO_SIGNING) -> Store:
    """A store in a fresh private temp directory, removed at exit: the fallback when
    the main cache is unusable (unsafe, read-only, full). The caller warns once."""
    try:
        root = Path(tempfile.mkdtemp(prefix="cuvil_aot-cache-"))
    except OSError as exc:
        raise CacheError(f"cannot create a private cache directory: {exc}") from None
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return Store(root, max_bytes, rules=rules)
