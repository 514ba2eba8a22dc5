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
    """$XDG_CACHE_HOME/cuvil_aot (when an absolute path), else ~/.cache/cuvil_aot
    (~/Library/Caches on macOS). The home directory is looked up only when needed:
    CacheError when there is none (HOME unset and no passwd entry for this uid)."""
    env = os.environ if env is None else env
    xdg = env.get("XDG_CACHE_HOME", "")
    if sys.platform != "darwin" and os.path.isabs(xdg):
        return Path(xdg) / "cuvil_aot"
    home = _home(env)
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "cuvil_aot"
    return home / ".cache" / "cuvil_aot"


def _home(env: Mapping[str, str]) -> Path:
    if env.get("HOME"):
        return Path(env["HOME"])
    try:
        return Path.home()
    except (RuntimeError, KeyError):  # no passwd entry for this uid
        raise CacheError(f"no home directory for the cache (HOME is unset and uid "
                         f"{os.getuid()} has no passwd entry); set CUVIL_AOT_CACHE_DIR or "
                         "XDG_CACHE_HOME") from None


def private_store(max_bytes: int = DEFAULT_MAX_BYTES, rules: Policy = NO_SIGNING) -> Store:
    """A store in a fresh private temp directory, removed at exit: the fallback when
    the main cache is unusable (unsafe, read-only, full). The caller warns once."""
    try:
        root = Path(tempfile.mkdtemp(prefix="cuvil_aot-cache-"))
    except OSError as exc:
        raise CacheError(f"cannot create a private cache directory: {exc}") from None
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return Store(root, max_bytes, rules=rules)
