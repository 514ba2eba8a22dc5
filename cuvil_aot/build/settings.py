"""Settings of the PEP 517 backend, from three sources applied in this order (later wins):

1. ``[tool.cuvil_aot]`` in ``pyproject.toml``                 ``cpu-targets = ["x86-64-v3"]``
2. config settings (``pip -C``, ``python -m build -C``)     ``-C cuvil_aot.cpu-targets=x86-64-v3``
3. the environment                                         ``CUVIL_AOT_BUILD_CPU_TARGETS=x86-64-v3``

Config settings without the ``cuvil_aot.`` prefix belong to the inner backend and are
passed on untouched. In config settings and the environment a list is written
comma-separated. Any unknown key in our namespace is an error that names it.
This module is the registry of the build's environment knobs (``CUVIL_AOT_BUILD_*``);
the run-time ones are in ``cuvil_aot/knobs.py``.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuvil_aot.options import DEFAULT_ARCHS, bad_archs

PREFIX = "cuvil_aot."
ENV_PREFIX = "CUVIL_AOT_BUILD_"
CPU_TARGETS = {"x86-64": 1, "x86-64-v2": 2, "x86-64-v3": 3, "x86-64-v4": 4}
CUDA_MODES = ("auto", "required", "off")
CACHE_MODES = ("user", "private")


class SettingsError(ValueError):
    """A setting of the backend is unknown or has a value it cannot use."""


@dataclass(frozen=True)
class Settings:
    """What ``cuvil_aot.build`` does; every field has a documented default."""

    backend: str = "setuptools.build_meta"
    """The inner PEP 517 backend that builds the pure-Python wheel and the sdist
    (``module`` or ``module:object``): setuptools, hatchling, flit_core, scikit_build_core."""
    include: tuple[str, ...] = ("**/*.py",)
    """Globs over paths *inside the wheel* (as imported: ``mypkg/**/*.py``, also for a
    ``src/`` layout) of the modules to scan for ``@cuvil_aot.optimize``."""
    exclude: tuple[str, ...] = ()
    """Globs (same paths) of modules never compiled, even when they match ``include``."""
    cpu_targets: tuple[str, ...] = tuple(CPU_TARGETS)
    """x86-64 levels kernels are compiled for; the best one the CPU supports is chosen
    at import. The lowest is the oldest CPU the wheel runs on. Other machines
    (aarch64: NEON) build their baseline once, whatever this says."""
    cuda: str = "auto"
    """auto: embed a fatbin when nvcc is found, else CPU-only (said once); required:
    fail without nvcc; off: CPU-only."""
    cuda_archs: tuple[str, ...] = DEFAULT_ARCHS
    """GPU architectures of the fatbin: ``sm_XY`` is SASS, ``compute_XY`` is PTX."""
    jobs: int = 0
    """Modules compiled at once; 0 means one per CPU core."""
    cache: str = "user"
    """user: compile through the per-user cache (CUVIL_AOT_CACHE_DIR, else
    ~/.cache/cuvil_aot), shared with imports and later builds; private: a fresh cache for
    this build alone, removed after it."""

    @property
    def cpu_levels(self) -> tuple[int, ...]:
        return tuple(sorted({CPU_TARGETS[t] for t in self.cpu_targets}))


def _key(name: str) -> str:
    return name.replace("_", "-")


FIELDS: dict[str, dataclasses.Field[Any]] = {
    _key(f.name): f for f in dataclasses.fields(Settings)
}


def _as_list(value: object, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        items = [v.strip() for part in value for v in part.split(",")]
    else:
        raise SettingsError(f"{where}: expected a list of strings, got {value!r}")
    return tuple(v for v in items if v)


def _as_int(value: object, where: str) -> int:
    if isinstance(value, bool):
        raise SettingsError(f"{where}: expected an integer, got {value!r}")
    try:
        number = int(str(value))
    except (TypeError, ValueError):
        raise SettingsError(f"{where}: expected an integer, got {value!r}") from None
    if number < 0:
        raise SettingsError(f"{where}: expected an integer >= 0, got {number}")
    return number


def _as_str(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SettingsError(f"{where}: expected a non-empty string, got {value!r}")
    return value.strip()


def _convert(name: str, value: object, where: str) -> object:
    default = FIELDS[name].default
    if isinstance(default, tuple):
        return _as_list(value, where)
    if isinstance(default, int):
        return _as_int(value, where)
    return _as_str(value, where)


def _check(settings: Settings) -> Settings:
    unknown = [t for t in settings.cpu_targets if t not in CPU_TARGETS]
    if unknown or not settings.cpu_targets:
        raise SettingsError(f"cpu-targets: {unknown or 'empty'}: expected some of "
                            f"{', '.join(CPU_TARGETS)}")
    if settings.cuda not in CUDA_MODES:
        raise SettingsError(f"cuda: {settings.cuda!r}: expected one of {', '.join(CUDA_MODES)}")
    if settings.cache not in CACHE_MODES:
        raise SettingsError(f"cache: {settings.cache!r}: expected one of "
                            f"{', '.join(CACHE_MODES)}")
    bad = bad_archs(settings.cuda_archs)
    if bad:
        raise SettingsError(f"cuda-archs: {bad}: expected names like sm_90 or compute_120")
    if not settings.include:
        raise SettingsError("include: empty: nothing would be compiled")
    return settings


def _apply(settings: Settings, values: Mapping[str, object], source: str,
           spell: dict[str, str]) -> Settings:
    """Overlay ``values`` (keys as in pyproject) read from ``source``; ``spell`` maps a
    key to how the user wrote it there, for the messages."""
    changes: dict[str, object] = {}
    for key, value in values.items():
        where = f"{spell.get(key, key)} ({source})"
        if key not in FIELDS:
            raise SettingsError(f"unknown setting {spell.get(key, key)!r} in {source}; known "
                                f"settings: {', '.join(sorted(FIELDS))}")
        changes[FIELDS[key].name] = _convert(key, value, where)
    return dataclasses.replace(settings, **changes)  # type: ignore[arg-type]


def split_config(config: Mapping[str, object] | None) -> tuple[dict[str, object],
                                                               dict[str, object]]:
    """(ours without the prefix, the inner backend's) from PEP 517 config settings."""
    ours: dict[str, object] = {}
    inner: dict[str, object] = {}
    for key, value in (config or {}).items():
        if key.startswith(PREFIX):
            ours[key[len(PREFIX):]] = value
        else:
            inner[key] = value
    return ours, inner


def read_pyproject(project: Path) -> dict[str, object]:
    """``[tool.cuvil_aot]`` of ``project/pyproject.toml`` ({} if absent)."""
    toml = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")
    path = project / "pyproject.toml"
    if not path.exists():
        return {}
    with path.open("rb") as f:
        table = toml.load(f).get("tool", {}).get("cuvil_aot", {})
    if not isinstance(table, dict):
        raise SettingsError("[tool.cuvil_aot] in pyproject.toml must be a table")
    return table


def resolve(project: Path, config: Mapping[str, object] | None,
            env: Mapping[str, str] | None = None) -> Settings:
    """Settings from pyproject.toml, then config settings, then the environment."""
    env = os.environ if env is None else env
    settings = _apply(Settings(), read_pyproject(project), "[tool.cuvil_aot] of pyproject.toml",
                      {})
    ours, _ = split_config(config)
    settings = _apply(settings, ours, "config settings", {k: PREFIX + k for k in ours})
    from_env = {_key(k[len(ENV_PREFIX):].lower()): v for k, v in env.items()
                if k.startswith(ENV_PREFIX)}
    spell = {_key(k[len(ENV_PREFIX):].lower()): k for k in env if k.startswith(ENV_PREFIX)}
    settings = _apply(settings, from_env, "the environment", spell)
    return _check(settings)


def describe(settings: Settings) -> dict[str, object]:
    """The settings that shape the wheel, as pyproject spells them (for the build manifest;
    ``jobs`` changes no byte of it)."""
    out: dict[str, object] = {}
    for key, f in FIELDS.items():
        value = getattr(settings, f.name)
        if key != "jobs":
            out[key] = list(value) if isinstance(value, tuple) else value
    return out
