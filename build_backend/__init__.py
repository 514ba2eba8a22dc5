"""cuvil_aot's own PEP 517 backend (``backend-path = ["."]`` in pyproject.toml).

scikit-build-core builds ``native/`` (the ``cuvil_aot.runtime.native`` extension) and the wheel; then
cuvil_aot's AOT pass compiles ``cuvil_aot/nn.py`` into it, so the installed wheel
ships ``cuvil_aot.nn`` precompiled, and the wheel is retagged manylinux like the wheels
of user projects (cuvil_aot/build/manylinux.py).

The compiler that runs is the one inside the wheel just built: its worker process
imports ``cuvil_aot`` from the unpacked wheel (PYTHONPATH), with the fresh
``cuvil_aot.runtime.native`` beside it. Compiling needs only the headers (shipped in the wheel); the
generated module imports ``cuvil_aot.runtime.native`` when *it* is imported, at run time.
This process only reads and rewrites zip files with the source tree's
``cuvil_aot.build`` (pure Python, no ``cuvil_aot.runtime.native``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from scikit_build_core import build as _skbuild

Config = dict[str, Any] | None
AOT_MODULES = ("cuvil_aot/nn.py",)


def get_requires_for_build_wheel(config_settings: Config = None) -> list[str]:
    return list(_skbuild.get_requires_for_build_wheel(config_settings))


def get_requires_for_build_sdist(config_settings: Config = None) -> list[str]:
    return list(_skbuild.get_requires_for_build_sdist(config_settings))


def get_requires_for_build_editable(config_settings: Config = None) -> list[str]:
    return list(_skbuild.get_requires_for_build_editable(config_settings))


def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: Config = None) -> str:
    return str(_skbuild.prepare_metadata_for_build_wheel(metadata_directory, config_settings))


def build_sdist(sdist_directory: str, config_settings: Config = None) -> str:
    return str(_skbuild.build_sdist(sdist_directory, config_settings))


def build_editable(wheel_directory: str, config_settings: Config = None,
                   metadata_directory: str | None = None) -> str:
    """Editable installs compile ``cuvil_aot.nn`` at its first call, like any module."""
    return str(_skbuild.build_editable(wheel_directory, config_settings, metadata_directory))


def build_wheel(wheel_directory: str, config_settings: Config = None,
                metadata_directory: str | None = None) -> str:
    from cuvil_aot.build import aot, backend
    from cuvil_aot.build import wheel as wheelfile
    from cuvil_aot.build.settings import Settings

    def run() -> str:
        settings = Settings(include=AOT_MODULES, cuda="off")
        with tempfile.TemporaryDirectory(prefix="cuvil_aot-self-") as tmp:
            scratch = Path(tmp)
            (scratch / "skbuild").mkdir()
            name = _skbuild.build_wheel(str(scratch / "skbuild"), config_settings,
                                        metadata_directory)
            wheel = wheelfile.read(scratch / "skbuild" / name)
            # The checkout's own compile cache (next to scikit-build-core's build folder),
            # so a rebuild of an unchanged nn.py is a cache hit; it serves no import.
            cache = Path("build") / "aot-cache"
            env = {**os.environ, "CUVIL_AOT_CACHE_DIR": str(cache.resolve())}
            records, note = aot.compile_wheel(wheel, settings, Path.cwd(), scratch, env)
            if len(records) != len(AOT_MODULES):
                raise aot.CompileFailed(f"expected {AOT_MODULES} compiled, got {records}")
            aot.build_manifest(wheel, settings, records, note)
            wheel.retag(wheelfile.portable_tag(wheel))  # manylinux_2_N where glibc is all
            epoch = wheelfile.source_date_epoch(os.environ)
            return wheel.write(Path(wheel_directory), epoch).name

    return backend.friendly(run)
