"""Get or build a module's extension through the cache: the one path every entry point
takes (the import hook, the lazy first call, the command line).

In order, cheapest first:

1. an extension already loaded in this process for the same key (``importlib.reload``
   of an unchanged module);
2. a prebuilt extension next to the module whose cheap key matches (prebuilt.py);
3. the cache entry a shortcut names for the cheap key (prekey.py, shortcuts.py; a
   record only ever names a key of this module): no compiler is imported or run;
4. the full key (``builder.full_key``), looked up in the store; on a miss, the remote
   cache tier if one is set (remote_tier.py: pulled, verified, published locally; or
   leased, built here and pushed); then built by ``builder.build_bytes`` inside
   ``Store.publish`` (one build per key across processes) unless the mode is ``strict``.
   A key another process keeps locked for ``settings.lock_timeout`` seconds (a stopped
   builder) is built in the private store.

A module compiles function by function: the build manifest in an entry's metadata names
the functions the compiler refused (``refused``, each with its rendered diagnostics);
``bind_module`` binds those to ``binding.Refused``, which raises them at the call.

An entry whose metadata cannot be right (``ext_name``, ``ext_file``) is set aside like
a damaged one and rebuilt; one that goes away or bad between publish and load (a
``cache clear``) is a miss, published again.

Knobs are read by the caller (``Settings.from_knobs``) and passed down. The compiler is
reached through ``builder`` only, which imports it on a miss.
"""

from __future__ import annotations

import contextlib
import shlex
import tempfile
import textwrap
import threading
import time
import types
import warnings
from collections.abc import Mapping
from pathlib import Path

from cuvil_aot import host, marks
from cuvil_aot.cache import CacheError, CacheKey, Entry, LockTimeout, Store
from cuvil_aot.cache.fsutil import sweep_dead
from cuvil_aot.cache.key import digest_of
from cuvil_aot.cache.store import STALE_TMP_S
from cuvil_aot.errors import BuildError, CompileError
from cuvil_aot.load import builder, prebuilt, prekey, shortcuts, toolstamp
from cuvil_aot.load.settings import BUILD_DIR_PREFIX, MissingExtension, Outcome, Settings
from cuvil_aot.load.stores import build_aside, fall_back
from cuvil_aot.load.stores import open_store as open_store  # entry points open it from here
from cuvil_aot.runtime import binding, extension

__all__ = ["MissingExtension", "Outcome", "Settings", "bind_module", "build_next_to",
           "check_refused", "ensure_bound", "get_extension", "last_outcome", "open_store",
           "refused"]


_registry_lock = threading.Lock()
_loaded: dict[str, types.ModuleType] = {}
_outcomes: dict[str, Outcome] = {}
_refused: dict[str, dict[str, str]] = {}  # key digest -> refused function -> diagnostics


def last_outcome(module: str) -> Outcome | None:
    """How ``module`` was last bound in this process (for tests, the CLI and debugging)."""
    with _registry_lock:
        return _outcomes.get(module)


# --- loading ----------------------------------------------------------------------------


class _BadMetadata(CacheError):
    """An entry whose metadata cannot be what a build wrote: set it aside and rebuild."""


def _ext_of(entry: Entry) -> tuple[str, str]:
    """(ext_name, ext_file) of an entry, as the build recorded them (_BadMetadata if not)."""
    name, file = entry.manifest.metadata.get("ext_name"), entry.manifest.metadata.get("ext_file")
    if not isinstance(name, str) or not name.isidentifier():
        raise _BadMetadata(f"its metadata's ext_name {name!r} is not an extension's name")
    if not isinstance(file, str) or file not in entry.manifest.files:
        raise _BadMetadata(f"its metadata's ext_file {file!r} names none of its files")
    if file.partition(".")[0] != name:  # the build writes <ext_name><EXT_SUFFIX>
        raise _BadMetadata(f"its metadata's ext_name {name!r} is not that of {file!r}")
    return name, file


def _refused_of(entry: Entry) -> dict[str, str]:
    """The functions the build of ``entry`` refused, with their diagnostics (_BadMetadata
    if that record is not what a build writes)."""
    build = entry.manifest.metadata.get("build")
    found = build.get("refused", {}) if isinstance(build, dict) else {}
    if not isinstance(found, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in found.items()):
        raise _BadMetadata("its metadata's refused functions are not names and texts")
    return dict(found)


def _load_from(entry: Entry, key: CacheKey) -> types.ModuleType:
    """Load the verified extension of ``entry``: _BadMetadata if its metadata is wrong,
    CacheError if its file is gone or damaged."""
    name, file = _ext_of(entry)
    refused_here = _refused_of(entry)
    with entry.verified(file) as (origin, real_path):
        ext = extension.load(name, origin, real_path)
    with _registry_lock:
        _refused[key.digest] = refused_here
        return _loaded.setdefault(key.digest, ext)


def refused(outcome: Outcome) -> dict[str, str]:
    """The marked functions of ``outcome``'s module that its build refused -> their
    rendered diagnostics (a prebuilt extension never has any)."""
    with _registry_lock:
        return dict(_refused.get(outcome.key.digest, {})) if outcome.key is not None else {}


def check_refused(outcome: Outcome) -> None:
    """CompileError with every refused function's diagnostics: what a build that ships
    (``build``, a wheel) must not get past."""
    found = refused(outcome)
    if found:
        raise CompileError([], rendered="\n\n".join(found.values()))


def _open(store: Store, key: CacheKey, entry: Entry) -> types.ModuleType | None:
    """The extension of an entry just looked up or published, or None (a miss) when it
    went away or proved bad meanwhile (a bad one is set aside, with a CacheWarning)."""
    try:
        return _load_from(entry, key)
    except _BadMetadata as exc:
        store.discard(entry, str(exc))
    except CacheError:
        store.lookup(key)  # evicted (a miss) or damaged (quarantined) since
    return None


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
    return None if entry is None else _open(store, key, entry)


def _try_prebuilt(module: types.ModuleType, cheap: Mapping[str, str]) -> types.ModuleType | None:
    source = prekey.source_file(module)
    if source is None:
        return None
    manifest_path, _ = prebuilt.paths(source, host.ext_suffix())
    try:
        found = prebuilt.read(manifest_path)
        if found is None:
            return None
        reasons = prebuilt.mismatch(found, module.__name__, cheap, host.cpu_level())
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
        with prebuilt.verified(found) as origin:
            ext = extension.load(found.ext_name, origin, found.ext_path)
        with _registry_lock:
            ext = _loaded.setdefault(tag, ext)
    return ext


# --- building ---------------------------------------------------------------------------


class _PrivateBuild:
    """The store's build callback. It compiles once, in a private temp directory (a full
    or read-only cache must not fail the compiler), then writes the extension's bytes
    into each folder a store gives it: when the cache cannot take them (CacheError), the
    private fallback store gets the same build, not a second compile. Before compiling
    it sweeps the build directories that killed processes left (BUILD_DIR_PREFIX)."""

    def __init__(self, module: types.ModuleType, settings: Settings) -> None:
        self._module, self._settings = module, settings
        self._done: builder.Built | None = None

    @property
    def built(self) -> bool:
        return self._done is not None

    def __call__(self, folder: Path) -> dict[str, object]:
        if self._done is None:
            sweep_dead(Path(tempfile.gettempdir()), BUILD_DIR_PREFIX, STALE_TMP_S)
            self._done = builder.build_bytes(self._module, self._settings)
        try:
            with open(folder / self._done.file_name, "xb") as out:
                out.write(self._done.data)
        except OSError as exc:
            raise CacheError(f"cannot write the extension into {folder}: {exc}") from None
        return self._done.metadata


def _publish(store: Store, key: CacheKey, build: _PrivateBuild, module: str) -> tuple[Store, Entry]:
    """The entry for ``key`` and the store that holds it: ``store``, or the private one
    when ``store`` fails (read-only, full, gone unsafe) or its key stays locked."""
    try:
        return store, store.publish(key, build, module)
    except LockTimeout as exc:  # a stopped or hung builder: ours is private, for this key
        store = build_aside(store, exc)
    except CacheError as exc:
        store = fall_back(store, exc)
    return store, store.publish(key, build, module)


def _build_and_load(
    store: Store, key: CacheKey, module: types.ModuleType, settings: Settings
) -> tuple[types.ModuleType, bool, Entry]:
    """The extension of ``key``, whether this process built it, and its entry.

    An entry that vanishes or goes bad between publish and load (a ``cache clear``) is
    a miss: published again (the build is kept: no second compile), then privately."""
    build = _PrivateBuild(module, settings)
    for _ in range(2):
        store, entry = _publish(store, key, build, module.__name__)
        ext = _open(store, key, entry)
        if ext is not None:
            return ext, build.built, entry
    store = build_aside(store, CacheError(
        f"module {module.__name__!r}: its cache entry went away or bad before it loaded, twice"))
    entry = store.publish(key, build, module.__name__)
    return _load_from(entry, key), build.built, entry  # a private entry of ours: errors are real


def _strict_miss(module: types.ModuleType, store: Store, detail: str) -> MissingExtension:
    return MissingExtension(
        f"cuvil_aot: no compiled extension for module {module.__name__!r} matches its source, "
        f"and CUVIL_AOT_MODE=strict never compiles.\n  cache {store.root}:\n"
        + textwrap.indent(detail, "    ")
        + f"\n  build it ahead of time: python -m cuvil_aot build {_build_target(module)}",
        name=module.__name__,
    )


def _build_target(module: types.ModuleType) -> str:
    """What to pass to ``python -m cuvil_aot build`` from any directory: the module's
    file, else its name."""
    source = prekey.source_file(module)
    return shlex.quote(str(source.resolve())) if source is not None else module.__name__


def _by_full_key(
    module: types.ModuleType, settings: Settings, store: Store
) -> tuple[types.ModuleType, CacheKey, str]:
    strict = settings.mode == "strict"
    try:
        key = builder.full_key(module, settings)
    except BuildError as exc:  # no compiler to ask for its identity
        if strict:
            raise _strict_miss(module, store, f"the key needs the C compiler: {exc}") from None
        raise
    try:
        ext = _load_entry(store, key)
    except CacheError as exc:
        store = fall_back(store, exc)
        ext = _load_entry(store, key)
    if ext is not None:
        return ext, key, "cached"
    pending = None
    if settings.remote_cache:  # the shared tier, imported on a local miss only
        from cuvil_aot.load import remote_tier

        entry, pending = remote_tier.fetch(settings, store, key, wait=not strict)
        if entry is not None and (ext := _open(store, key, entry)) is not None:
            return ext, key, "remote"
    if strict:
        raise _strict_miss(module, store, store.explain(module.__name__, key))
    try:
        ext, built, entry = _build_and_load(store, key, module, settings)
        if built and pending is not None:
            pending.push(entry)
    finally:
        if pending is not None:
            pending.release()
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
        for key in shortcuts.find(store.root, module.__name__, digest_of(cheap), stamp, any_cc,
                                  store.rules):
            if (ext := _already(key)) is not None:
                return done(ext, "loaded", key)
            try:
                ext = _load_entry(store, key)
            except CacheError:
                break
            if ext is not None:
                return done(ext, "shortcut", key)
    if cheap is not None and settings.remote_cache:  # a machine like the one that built it
        from cuvil_aot.load import remote_tier

        found = remote_tier.shortcut(settings, store, module.__name__, digest_of(cheap), stamp)
        if found is not None and (ext := _open(store, found[0], found[1])) is not None:
            _remember(store, module.__name__, shortcuts.Record(digest_of(cheap), stamp, found[0]))
            return done(ext, "remote", found[0])
    ext, key, how = _by_full_key(module, settings, store)
    if cheap is not None:
        record = shortcuts.Record(digest_of(cheap), stamp, key)
        _remember(store, module.__name__, record)
        if how == "built" and settings.remote_cache:
            from cuvil_aot.load import remote_tier

            remote_tier.remember(settings, store, module.__name__, record)
    return done(ext, how, key)


def _stamp(settings: Settings) -> dict[str, str] | None:
    with_nvcc = settings.cuda_request != "none"
    return toolstamp.compiler_stamp(settings.compiler_override, settings.cuda_home, with_nvcc)


def _remember(store: Store, module: str, record: shortcuts.Record) -> None:
    # A read-only or full cache still works, only without the shortcut.
    with contextlib.suppress(CacheError, OSError):
        shortcuts.record(store.root, module, record, store.rules)


_module_locks: dict[str, threading.Lock] = {}


def ensure_bound(module: types.ModuleType, settings: Settings) -> None:
    """The lazy first call: bind ``module`` once per process, whichever thread asks first
    (32 threads calling at once compile once)."""
    with _registry_lock:
        lock = _module_locks.setdefault(module.__name__, threading.Lock())
    with lock:
        if all(m.compiled is not None for m in marks.marked(module).values()):
            return
        bind_module(module, settings)


def bind_module(module: types.ModuleType, settings: Settings) -> Outcome:
    """Point every marked function of ``module`` at its compiled code (see get_extension).

    Nothing of the compiler is imported on a hit.
    """
    marked = marks.marked(module)
    if not marked:
        return Outcome(module.__name__, "nothing")
    ext, outcome = get_extension(module, settings)
    refusals = refused(outcome)
    missing = [name for name in marked if name not in refusals and not hasattr(ext, name)]
    if missing:
        raise ImportError(
            f"cuvil_aot: the extension loaded for {module.__name__!r} lacks {missing}",
            name=module.__name__,
        )
    binding.bind(module, ext, marked, refusals)
    return outcome


def build_next_to(module: types.ModuleType, settings: Settings) -> tuple[Path, Outcome]:
    """Get or build ``module``'s extension through the cache, then write it and its
    manifest next to the module's source: what ``build --inplace`` and the PEP 517
    backend ship. Raises CacheError if the module has no cheap key (no .py file, or a
    dependency without one), CompileError if a function was refused (nothing is written:
    what ships compiles whole)."""
    outcome = get_extension(module, settings._replace(use_prebuilt=False))[1]
    check_refused(outcome)
    source = prekey.source_file(module)
    cheap = prekey.components(module, settings.cpu_levels, settings.cuda_request)
    if source is None or cheap is None or outcome.key is None:
        raise CacheError(f"{module.__name__}: a prebuilt extension needs the module and its "
                         "dependencies in .py files")
    entry = open_store(settings).lookup(outcome.key)
    if entry is None:
        raise CacheError(f"{module.__name__}: the entry just built was evicted; try again")
    ext_name, ext_file = _ext_of(entry)
    path = prebuilt.write(source, module.__name__, ext_name, entry.file(ext_file).read_bytes(),
                          cheap, outcome.key.components, host.ext_suffix())
    return path, outcome
