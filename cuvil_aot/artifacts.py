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
import shutil
import tempfile
import textwrap
import threading
import time
import types
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from cuvil_aot import prebuilt, prekey, pyconfig, shortcuts, toolstamp
from cuvil_aot.api import Dispatcher
from cuvil_aot.cache import DEFAULT_MAX_BYTES, CacheError, CacheKey, Entry, Store
from cuvil_aot.cache.key import digest_of
from cuvil_aot.errors import BuildError, SignatureError
from cuvil_aot.stores import fall_back
from cuvil_aot.stores import open_store as open_store  # entry points open it from here

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
    signing_key: str = ""
    """CUVIL_AOT_SIGNING_KEY: signs new cache entries (cache/signing.py)."""
    verify_key: str = ""
    """CUVIL_AOT_VERIFY_KEY: one more key whose signatures are trusted."""
    require_signed: bool = False
    """CUVIL_AOT_REQUIRE_SIGNED: entries without a trusted signature are refused."""
    stop_at: str = ""
    """CUVIL_AOT_TEST_STOP_AT: tests only (stores.stopper)."""

    @classmethod
    def from_knobs(cls, knobs: Knobs, options: Options | None = None) -> Settings:
        return cls(knobs.mode, knobs.cache_dir, knobs.cache_max_bytes, knobs.cc, options,
                   cuda_archs=knobs.cuda_archs, cuda_home=knobs.cuda_home,
                   signing_key=knobs.signing_key, verify_key=knobs.verify_key,
                   require_signed=knobs.require_signed, stop_at=knobs.test_stop_at)

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
_loaded: dict[str, types.ModuleType] = {}
_outcomes: dict[str, Outcome] = {}


def last_outcome(module: str) -> Outcome | None:
    """How ``module`` was last bound in this process (for tests, the CLI and debugging)."""
    with _registry_lock:
        return _outcomes.get(module)


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
    manifest_path, _ = prebuilt.paths(source, pyconfig.ext_suffix())
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


class _PrivateBuild:
    """The store's build callback. It compiles once, in a private temp directory (a full
    or read-only cache must not fail the compiler), keeps the extension's bytes and
    removes that directory, then writes the bytes into each folder a store gives it:
    when the cache cannot take them (CacheError), the private fallback store gets the
    same build, not a second compile."""

    def __init__(self, module: types.ModuleType, options: Options) -> None:
        self._module, self._options = module, options
        self._done: tuple[str, bytes, dict[str, object]] | None = None

    @property
    def built(self) -> bool:
        return self._done is not None

    def _compile(self) -> tuple[str, bytes, dict[str, object]]:
        from cuvil_aot import driver

        folder = Path(tempfile.mkdtemp(prefix="cuvil_aot-build-"))
        try:
            artifact = driver.build(self._module, self._options, folder)
            data = artifact.path.read_bytes()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        name = artifact.path.name
        return name, data, {"ext_name": artifact.ext_name, "ext_file": name,
                            "build": artifact.manifest}

    def __call__(self, folder: Path) -> dict[str, object]:
        if self._done is None:
            self._done = self._compile()
        name, data, metadata = self._done
        try:
            with open(folder / name, "xb") as out:
                out.write(data)
        except OSError as exc:
            raise CacheError(f"cannot write the extension into {folder}: {exc}") from None
        return metadata


def full_key(module: types.ModuleType, settings: Settings) -> CacheKey:
    """The full cache key (imports the compiler and asks the C compiler its version)."""
    from cuvil_aot import driver

    return CacheKey(driver.key_components(module, settings.options or driver.Options()))


def _publish(
    store: Store, key: CacheKey, module: types.ModuleType, settings: Settings
) -> tuple[Entry, bool]:
    """The published entry for ``key`` and whether this process built it."""
    from cuvil_aot import driver

    build = _PrivateBuild(module, settings.options or driver.Options())
    try:
        entry = store.publish(key, build, module.__name__)
    except CacheError as exc:  # read-only, full, or gone unsafe: build privately
        entry = fall_back(store, exc).publish(key, build, module.__name__)
    return entry, build.built


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
        store = fall_back(store, exc)
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

