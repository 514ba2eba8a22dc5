"""Get or build a module's extension through the cache: the one path every entry point
takes (the import hook, the lazy first call, the command line).

In order, cheapest first:

1. an extension already loaded in this process for the same key (``importlib.reload``
   of an unchanged module);
2. a prebuilt extension next to the module whose cheap key matches (prebuilt.py);
3. the cache entry a shortcut names for the cheap key (prekey.py, shortcuts.py): no
   compiler is imported or run;
4. the full key from ``driver.key_components``, looked up in the store; on a miss,
   built by ``driver.build`` inside ``Store.publish`` (one build per key across
   processes) unless the mode is ``strict``.

Knobs are read by the caller (``Settings.from_knobs``) and passed down.
"""

from __future__ import annotations

import contextlib
import os
import textwrap
import threading
import time
import types
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from cuvil_aot import prebuilt, prekey, shortcuts, toolstamp
from cuvil_aot.api import Dispatcher
from cuvil_aot.cache import (
    DEFAULT_MAX_BYTES,
    CacheError,
    CacheKey,
    CacheWarning,
    Entry,
    Store,
    default_cache_dir,
    private_store,
)
from cuvil_aot.cache.key import digest_of
from cuvil_aot.errors import BuildError, SignatureError

if TYPE_CHECKING:
    from cuvil_aot.driver import Options
    from cuvil_aot.knobs import Knobs


class MissingExtension(ImportError):
    """strict mode: no prebuilt or cached extension matches, and nothing may be compiled."""


# NamedTuples, not dataclasses: each dataclass costs ~0.5 ms of start-up (DESIGN.md's
# cold-start budget is 50 ms for everything).
class Settings(NamedTuple):
    """What the entry point decided; nothing below reads the environment."""

    mode: str = "import"
    """strict: never compile; import and lazy: compile on a miss (lazy only defers when)."""
    cache_dir: Path | None = None
    """The store's root; None means cache.default_cache_dir()."""
    max_bytes: int = DEFAULT_MAX_BYTES
    cc: str = ""
    """CUVIL_AOT_CC: the compiler a build would use, when options.cc is empty."""
    options: Options | None = None
    """driver.Options for builds and for the key; None means the defaults."""
    use_prebuilt: bool = True
    """Consider extensions shipped next to the module (the CLI's build turns it off)."""
    cuda_archs: str = ""
    """CUVIL_AOT_CUDA_ARCHS, when options.cuda_archs is None."""
    cuda_home: str = ""
    """CUDA_HOME: where a build looks for nvcc."""

    @classmethod
    def from_knobs(cls, knobs: Knobs, options: Options | None = None) -> Settings:
        return cls(knobs.mode, knobs.cache_dir, knobs.cache_max_bytes, knobs.cc, options,
                   cuda_archs=getattr(knobs, "cuda_archs", ""),
                   cuda_home=getattr(knobs, "cuda_home", ""))

    @property
    def cuda_request(self) -> str:
        """The GPU targets asked for, as the cheap key records them."""
        archs = getattr(self.options, "cuda_archs", None)
        if archs is not None:
            return ",".join(archs) or "none"
        return self.cuda_archs.replace(" ", "").replace(";", ",") or "default"

    @property
    def compiler_override(self) -> str:
        return (self.options.cc if self.options is not None else "") or self.cc

    @property
    def cpu_levels(self) -> tuple[int, ...]:
        return tuple(self.options.cpu_levels) if self.options is not None else ()


class Outcome(NamedTuple):
    module: str
    how: str
    """nothing, loaded (already in this process), prebuilt, shortcut, cached or built."""
    key: CacheKey | None = None
    seconds: float = 0.0


_registry_lock = threading.Lock()
_stores: dict[Path, Store] = {}
_private: list[Store] = []
_loaded: dict[str, types.ModuleType] = {}
_outcomes: dict[str, Outcome] = {}


def last_outcome(module: str) -> Outcome | None:
    """How ``module`` was last bound in this process (for tests, the CLI and debugging)."""
    with _registry_lock:
        return _outcomes.get(module)


# --- stores ---------------------------------------------------------------------------


def open_store(settings: Settings) -> Store:
    """The store at the settings' root, or (with one warning) a private one if unusable."""
    root = Path(os.path.abspath(settings.cache_dir or default_cache_dir()))
    with _registry_lock:
        store = _stores.get(root)
        if store is None:
            try:
                store = Store(root, settings.max_bytes)
            except CacheError as exc:
                store = _private_locked(exc, settings.max_bytes)
            _stores[root] = store
        return store


def _private_locked(exc: CacheError, max_bytes: int) -> Store:
    if not _private:
        warnings.warn(
            f"cuvil_aot: {exc}; using a private cache for this process instead",
            CacheWarning,
            stacklevel=4,
        )
        _private.append(private_store(max_bytes))
    return _private[0]


def _fall_back(store: Store, exc: CacheError) -> Store:
    """Replace a store that failed mid-process by the private one."""
    with _registry_lock:
        fallback = _private_locked(exc, store.max_bytes)
        for root, known in list(_stores.items()):
            if known is store:
                _stores[root] = fallback
        return fallback


# --- loading ----------------------------------------------------------------------------


def _metadata_str(entry: Entry, name: str) -> str:
    value = entry.manifest.metadata.get(name)
    if not isinstance(value, str):
        raise CacheError(f"entry {entry.path} has no {name!r} in its metadata")
    return value


def _load_from(entry: Entry) -> types.ModuleType:
    return entry.load_extension(_metadata_str(entry, "ext_file"), _metadata_str(entry, "ext_name"))


def _already(key: CacheKey) -> types.ModuleType | None:
    """The extension of ``key`` if this process loaded it before (a reload)."""
    with _registry_lock:
        return _loaded.get(key.digest)


def _load_entry(store: Store, key: CacheKey) -> types.ModuleType | None:
    """The extension of ``key``'s entry (verified bytes), or None on a miss."""
    ext = _already(key)
    if ext is not None:
        return ext
    entry = store.lookup(key)
    if entry is None:
        return None
    try:
        ext = _load_from(entry)
    except CacheError:
        store.lookup(key)  # evicted or damaged since: the store quarantines a bad one
        return None
    with _registry_lock:
        return _loaded.setdefault(key.digest, ext)


def _try_prebuilt(module: types.ModuleType, cheap: Mapping[str, str]) -> types.ModuleType | None:
    source = prekey.source_file(module)
    if source is None:
        return None
    manifest_path, _ = prebuilt.paths(source, prekey.ext_suffix())
    try:
        found = prebuilt.read(manifest_path)
        if found is None:
            return None
        reasons = prebuilt.mismatch(found, module.__name__, cheap, prekey.host_level())
        if not reasons:
            return _load_prebuilt(found)
    except (CacheError, OSError, ImportError) as exc:
        reasons = [str(exc)]
    warnings.warn(
        f"cuvil_aot: ignoring the prebuilt extension {manifest_path} for module "
        f"{module.__name__!r}: " + "; ".join(reasons),
        prebuilt.PrebuiltWarning,
        stacklevel=4,
    )
    return None


def _load_prebuilt(found: prebuilt.Prebuilt) -> types.ModuleType:
    tag = "prebuilt:" + found.sha256
    with _registry_lock:
        ext = _loaded.get(tag)
    if ext is None:
        ext = prebuilt.load(found)
        with _registry_lock:
            ext = _loaded.setdefault(tag, ext)
    return ext


# --- building ---------------------------------------------------------------------------


def _build_callback(
    module: types.ModuleType, options: Options
) -> Callable[[Path], dict[str, object]]:
    def build(folder: Path) -> dict[str, object]:
        from cuvil_aot import driver

        artifact = driver.build(module, options, folder)
        for name in os.listdir(folder):  # only the extension goes into the entry
            if name != artifact.path.name:
                os.unlink(folder / name)
        return {"ext_name": artifact.ext_name, "ext_file": artifact.path.name,
                "build": artifact.manifest}

    return build


def full_key(module: types.ModuleType, settings: Settings) -> CacheKey:
    """The full cache key (imports the compiler and asks the C compiler its version)."""
    from cuvil_aot import driver

    return CacheKey(driver.key_components(module, settings.options or driver.Options()))


def _publish(
    store: Store, key: CacheKey, module: types.ModuleType, settings: Settings
) -> tuple[Entry, bool]:
    """The published entry for ``key`` and whether this process built it."""
    from cuvil_aot import driver

    inner = _build_callback(module, settings.options or driver.Options())
    ran: list[bool] = []

    def build(folder: Path) -> dict[str, object]:
        ran.append(True)
        return inner(folder)

    try:
        entry = store.publish(key, build, module.__name__)
    except CacheError as exc:
        entry = _fall_back(store, exc).publish(key, build, module.__name__)
    return entry, bool(ran)


def _strict_miss(module: types.ModuleType, store: Store, detail: str) -> MissingExtension:
    return MissingExtension(
        f"cuvil_aot: no compiled extension for module {module.__name__!r} matches its source, "
        f"and CUVIL_AOT_MODE=strict never compiles.\n  cache {store.root}:\n"
        + textwrap.indent(detail, "    ")
        + f"\n  build it ahead of time: python -m cuvil_aot build {module.__name__}",
        name=module.__name__,
    )


def _by_full_key(
    module: types.ModuleType, settings: Settings, store: Store
) -> tuple[types.ModuleType, CacheKey, str]:
    strict = settings.mode == "strict"
    try:
        key = full_key(module, settings)
    except BuildError as exc:  # no compiler to ask for its identity
        if strict:
            raise _strict_miss(module, store, f"the key needs the C compiler: {exc}") from None
        raise
    try:
        ext = _load_entry(store, key)
    except CacheError as exc:
        store = _fall_back(store, exc)
        ext = _load_entry(store, key)
    if ext is not None:
        return ext, key, "cached"
    if strict:
        raise _strict_miss(module, store, store.explain(module.__name__, key))
    entry, built = _publish(store, key, module, settings)
    ext = _load_from(entry)
    with _registry_lock:
        ext = _loaded.setdefault(key.digest, ext)
    if built:  # the cache grew: keep it under its cap (recent entries are never evicted)
        with contextlib.suppress(CacheError):
            store.evict()
    return ext, key, "built" if built else "cached"


# --- the one entry point ------------------------------------------------------------------


def get_extension(
    module: types.ModuleType, settings: Settings
) -> tuple[types.ModuleType, Outcome]:
    """The compiled extension for ``module``, from wherever is cheapest (see above)."""
    started = time.perf_counter()
    cheap = prekey.components(module, settings.cpu_levels, settings.cuda_request)

    def done(ext: types.ModuleType, how: str, key: CacheKey | None = None) -> tuple[
            types.ModuleType, Outcome]:
        outcome = Outcome(module.__name__, how, key, time.perf_counter() - started)
        with _registry_lock:
            _outcomes[module.__name__] = outcome
        return ext, outcome

    if cheap is not None and settings.use_prebuilt:
        ext = _try_prebuilt(module, cheap)
        if ext is not None:
            return done(ext, "prebuilt")
    store = open_store(settings)
    stamp = _stamp(settings) if cheap is not None else None
    if cheap is not None:
        any_cc = settings.mode == "strict" or stamp is None  # nothing will be compiled
        for key in shortcuts.find(store.root, module.__name__, digest_of(cheap), stamp, any_cc):
            if (ext := _already(key)) is not None:
                return done(ext, "loaded", key)
            try:
                ext = _load_entry(store, key)
            except CacheError:
                break
            if ext is not None:
                return done(ext, "shortcut", key)
    ext, key, how = _by_full_key(module, settings, store)
    if cheap is not None:
        _remember(store, module.__name__, shortcuts.Record(digest_of(cheap), stamp, key))
    return done(ext, how, key)


def _stamp(settings: Settings) -> dict[str, str] | None:
    with_nvcc = settings.cuda_request != "none"
    return toolstamp.compiler_stamp(settings.compiler_override, settings.cuda_home, with_nvcc)


def _remember(store: Store, module: str, record: shortcuts.Record) -> None:
    # A read-only or full cache still works, only without the shortcut.
    with contextlib.suppress(CacheError, OSError):
        shortcuts.record(store.root, module, record)


_module_locks: dict[str, threading.Lock] = {}


def ensure_bound(module: types.ModuleType) -> None:
    """The lazy first call: bind ``module`` once per process, whichever thread asks first
    (32 threads calling at once compile once). An entry point, so it reads the knobs."""
    from cuvil_aot import knobs

    with _registry_lock:
        lock = _module_locks.setdefault(module.__name__, threading.Lock())
    with lock:
        if all(d.compiled is not None for d in prekey.marked(module).values()):
            return
        bind_module(module, Settings.from_knobs(knobs.read()))


def bind_module(module: types.ModuleType, settings: Settings) -> Outcome:
    """Point every marked function of ``module`` at its compiled code (see get_extension).

    Binds as driver.bind does, without importing the compiler on the fast path.
    """
    marked = prekey.marked(module)
    if not marked:
        return Outcome(module.__name__, "nothing")
    ext, outcome = get_extension(module, settings)
    missing = [name for name in marked if not hasattr(ext, name)]
    if missing:
        raise ImportError(
            f"cuvil_aot: the extension loaded for {module.__name__!r} lacks {missing}",
            name=module.__name__,
        )
    bind_extension(module, ext, marked)
    return outcome


def bind_extension(
    module: types.ModuleType, ext: types.ModuleType, marked: Mapping[str, Dispatcher]
) -> None:
    """Module globals become CompiledFunction objects (vectorcall straight to the
    extension), and the dispatchers forward to them. The one binding, shared with
    driver.bind; it imports nothing of the compiler."""
    from cuvil_aot._runtime import (  # type: ignore[attr-defined,import-untyped,unused-ignore]
        CompiledFunction,
    )

    for name, dispatcher in marked.items():
        fallback = SignatureError if dispatcher.fallback == "python" else None
        fast = CompiledFunction(getattr(ext, name), dispatcher.py_func, fallback)
        fast.dispatcher = dispatcher
        fast.signatures = dispatcher.signatures
        dispatcher.compiled = fast
        setattr(module, name, fast)

