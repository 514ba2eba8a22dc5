"""PEP 517 / PEP 660 backend for projects with marked modules (``build-backend =
"cuvil_aot.build"``): wheels whose marked modules are compiled already.

Settings are documented in ``cuvil_aot/build/settings.py``. The hooks stay tiny and
import the machinery only when called (``backend.py``).
"""

from __future__ import annotations

from typing import Any


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    from cuvil_aot.build import backend

    return backend.requires("get_requires_for_build_wheel", config_settings)


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    from cuvil_aot.build import backend

    return backend.requires("get_requires_for_build_sdist", config_settings)


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    from cuvil_aot.build import backend

    return backend.requires("get_requires_for_build_editable", config_settings)


def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: dict[str, Any] | None = None) -> str:
    from cuvil_aot.build import backend

    return backend.prepare_metadata(metadata_directory, config_settings)


def build_wheel(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:
    from cuvil_aot.build import backend

    return backend.build_wheel(wheel_directory, config_settings)


def build_editable(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                   metadata_directory: str | None = None) -> str:
    from cuvil_aot.build import backend

    return backend.build_editable(wheel_directory, config_settings)


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    from cuvil_aot.build import backend

    return backend.build_sdist(sdist_directory, config_settings)
