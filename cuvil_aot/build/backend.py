"""The PEP 517 / PEP 660 hooks of ``cuvil_aot.build``, behind the tiny hook module.

build_wheel: the inner backend builds the pure wheel; the AOT pass compiles its marked
modules (aot.py); the wheel is retagged for this interpreter and for the oldest glibc its
shared objects allow, ``manylinux_2_N`` (manylinux.py), and rewritten (wheel.py).
build_editable: the inner backend's editable wheel plus a .pth file that turns on
cuvil_aot's import hook, so an edited module recompiles at its next import. build_sdist:
the inner backend's, untouched (pure source).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from cuvil_aot.build import aot, inner
from cuvil_aot.build import wheel as wheelfile
from cuvil_aot.build.settings import Settings, SettingsError, resolve, split_config

Config = Mapping[str, Any] | None
T = TypeVar("T")
EDITABLE_MODULE = """\
\"\"\"From an editable install of {dist} (cuvil_aot.build): put cuvil_aot's import hook
first on sys.meta_path at startup, so a marked module recompiles once edited.\"\"\"
import sys

try:
    from cuvil_aot.importer import CuvilFinder
except ImportError:  # cuvil_aot was uninstalled: nothing to hook
    pass
else:
    if not any(isinstance(f, CuvilFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, CuvilFinder())
"""


def say(message: str) -> None:
    print(f"cuvil_aot.build: {message}", file=sys.stderr, flush=True)


def friendly(hook: Callable[[], T]) -> T:
    """Run a hook; a user-facing failure is one clear message and exit status 1, not a
    traceback of the backend."""
    try:
        return hook()
    except (SettingsError, inner.InnerBackendMissing, wheelfile.WheelError) as exc:
        say(f"error: {exc}")
    except aot.CompileFailed as exc:
        say(str(exc))
    raise SystemExit(1)


def _settings(config: Config) -> Settings:
    return resolve(Path.cwd(), config, os.environ)


def _inner_config(config: Config) -> dict[str, Any] | None:
    return split_config(config)[1] or None


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="cuvil_aot-build-") as tmp:
        yield Path(tmp)


def requires(hook: str, config: Config) -> list[str]:
    return friendly(lambda: inner.requires(_settings(config).backend, hook,
                                           _inner_config(config)))


def build_sdist(sdist_directory: str, config: Config) -> str:
    def run() -> str:
        backend = inner.load(_settings(config).backend)
        return str(backend.build_sdist(sdist_directory, _inner_config(config)))

    return friendly(run)


def _pure_wheel(settings: Settings, config: Config, scratch: Path,
                hook: str) -> wheelfile.Wheel:
    backend = inner.load(settings.backend)
    out = scratch / "pure"
    out.mkdir()
    name = str(getattr(backend, hook)(str(out), _inner_config(config)))
    return wheelfile.read(out / name)


def build_wheel(wheel_directory: str, config: Config) -> str:
    def run() -> str:
        settings = _settings(config)
        with _scratch() as scratch:
            wheel = _pure_wheel(settings, config, scratch, "build_wheel")
            env = dict(os.environ)
            if settings.cache == "private":  # this build's own cache, gone with scratch
                env["CUVIL_AOT_CACHE_DIR"] = str(scratch / "compile-cache")
            records, note = aot.compile_wheel(wheel, settings, Path.cwd(), scratch, env)
            if records:
                say(f"{len(records)} module(s) compiled; {note}")
            else:
                say(f"warning: no marked module matched include={list(settings.include)}")
            wheel.retag(wheelfile.portable_tag(wheel))
            aot.build_manifest(wheel, settings, records, note)
            epoch = wheelfile.source_date_epoch(os.environ)
            return wheel.write(Path(wheel_directory), epoch).name

    return friendly(run)


def build_editable(wheel_directory: str, config: Config) -> str:
    def run() -> str:
        settings = _settings(config)
        with _scratch() as scratch:
            wheel = _pure_wheel(settings, config, scratch, "build_editable")
            hook = f"_cuvil_aot_editable_{wheel.distribution}"
            wheel.add(f"{hook}.py", EDITABLE_MODULE.format(dist=wheel.distribution).encode())
            wheel.add(f"{hook}.pth", f"import {hook}\n".encode())
            epoch = wheelfile.source_date_epoch(os.environ)
            return wheel.write(Path(wheel_directory), epoch).name

    return friendly(run)


def prepare_metadata(metadata_directory: str, config: Config) -> str:
    """The inner backend's metadata, its WHEEL file retagged as a platform wheel of this
    machine (``linux_<arch>``: the manylinux tag of the wheel build_wheel makes depends on
    the modules it compiles; frontends compare the name and version, not the tag)."""
    def run() -> str:
        backend = inner.load(_settings(config).backend)
        if inner.has(backend, "prepare_metadata_for_build_wheel"):
            name = str(backend.prepare_metadata_for_build_wheel(metadata_directory,
                                                                _inner_config(config)))
        else:
            name = _metadata_from_wheel(backend, metadata_directory, config)
        wheel_file = Path(metadata_directory) / name / "WHEEL"
        if wheel_file.exists():  # setuptools writes none here
            wheel_file.write_bytes(wheelfile.retag_wheel_file(wheel_file.read_bytes(),
                                                              wheelfile.native_tag()))
        return name

    return friendly(run)


def _metadata_from_wheel(backend: Any, metadata_directory: str, config: Config) -> str:
    with _scratch() as scratch:
        name = backend.build_wheel(str(scratch), _inner_config(config))
        wheel = wheelfile.read(scratch / name)
    for arcname, data in wheel.files.items():
        if arcname.startswith(wheel.dist_info + "/") and not arcname.endswith("/RECORD"):
            target = Path(metadata_directory) / arcname
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return wheel.dist_info
