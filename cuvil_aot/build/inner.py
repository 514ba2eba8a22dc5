"""The inner PEP 517 backend: the one that builds the pure wheel and the sdist."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

_DISTRIBUTIONS = {
    "setuptools": "setuptools>=61",
    "hatchling": "hatchling",
    "flit_core": "flit_core>=3.4",
    "scikit_build_core": "scikit-build-core",
}
"""What to ask the frontend for when the inner backend is not installed yet."""


class InnerBackendMissing(ImportError):
    """The inner backend cannot be imported (not in [build-system] requires)."""


def load(spec: str) -> Any:
    """The backend object named like PEP 517's ``build-backend``: ``mod`` or ``mod:obj``."""
    module_name, _, attr = spec.partition(":")
    try:
        backend: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise InnerBackendMissing(
            f"the inner backend {spec!r} (setting 'backend') cannot be imported: {exc}; add "
            "its distribution to [build-system] requires") from exc
    for part in filter(None, attr.split(".")):
        backend = getattr(backend, part)
    return backend


def requires(spec: str, hook: str, config: Mapping[str, object] | None) -> list[str]:
    """The inner backend's ``get_requires_for_build_*`` answer; if it is not installed,
    its distribution (the frontend installs it, and the next hooks can import it)."""
    try:
        backend = load(spec)
    except InnerBackendMissing:
        root = spec.partition(":")[0].partition(".")[0]
        return [_DISTRIBUTIONS[root]] if root in _DISTRIBUTIONS else []
    get = getattr(backend, hook, None)
    return list(get(dict(config) if config else None)) if get is not None else []


def has(backend: Any, hook: str) -> bool:
    return callable(getattr(backend, hook, None))
