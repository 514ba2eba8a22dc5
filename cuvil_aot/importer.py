"""The import hook: marked modules import as usual, then get bound to their extension.

``install()`` puts a finder first on ``sys.meta_path``. It asks the finders after it
for the spec and, when the module is plain Python source whose bytes mention both
``cuvil_aot`` and ``optimize`` (a byte scan, no parse; the standard library is not even
read), swaps in a loader that runs
the module normally and then binds its marked functions (artifacts.bind_module):
prebuilt or cached extension, else a build unless the mode is ``strict``. In ``lazy``
mode the module is left alone: its functions compile at their first call.

Modules run as ``__main__`` (``python -m pkg.mod``, ``python -m cuvil_aot run``)
never pass through ``exec_module``; their functions bind at their first call, from
the same cache.

This module stays light: it is imported at startup by ``cuvil_aot_hook.pth``.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from importlib.machinery import ModuleSpec, SourceFileLoader
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cuvil_aot.load.settings import Settings
    from cuvil_aot.options import Options

MARKERS = (b"cuvil_aot", b"optimize")


def is_marked_source(data: bytes) -> bool:
    """Whether source bytes may define marked functions (cheap; false positives are fine)."""
    return all(marker in data for marker in MARKERS)


class MarkedLoader(SourceFileLoader):
    """The usual source loader, plus binding the marked functions once the module ran."""

    def __init__(self, fullname: str, path: str, finder: CuvilFinder) -> None:
        super().__init__(fullname, path)
        self._finder = finder

    def exec_module(self, module: ModuleType) -> None:
        super().exec_module(module)
        self._finder.bind(module)


class CuvilFinder:
    """A meta-path finder that hands marked modules a MarkedLoader."""

    def __init__(self, settings: Settings | None = None) -> None:
        self._settings = settings
        self._lock = threading.Lock()
        self._busy = threading.local()
        self._stdlib = os.path.dirname(os.__file__) + os.sep

    def _may_be_marked(self, origin: str) -> bool:
        """Cheap tests first: the standard library never is; else scan the source bytes."""
        if origin.startswith(self._stdlib) and "-packages" + os.sep not in origin:
            return False
        try:
            with open(origin, "rb") as source:
                return is_marked_source(source.read())
        except OSError:
            return False

    @property
    def settings(self) -> Settings:
        with self._lock:
            if self._settings is None:  # knobs are read once, at the first marked import
                from cuvil_aot import knobs
                from cuvil_aot.load.settings import Settings

                self._settings = Settings.from_knobs(knobs.read())
            return self._settings

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname.partition(".")[0] == "cuvil_aot" or getattr(self._busy, "on", False):
            return None
        self._busy.on = True
        try:
            spec = self._next_spec(fullname, path, target)
        finally:
            self._busy.on = False
        if spec is None or type(spec.loader) is not SourceFileLoader or not spec.origin:
            return spec
        if self._may_be_marked(spec.origin):
            spec.loader = MarkedLoader(fullname, spec.origin, self)
        return spec

    def _next_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None
    ) -> ModuleSpec | None:
        """The spec the finders after this one give (those before it gave none)."""
        after = False
        for finder in list(sys.meta_path):
            if finder is self:
                after = True
                continue
            find = getattr(finder, "find_spec", None) if after else None
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                return spec  # type: ignore[no-any-return]
        return None

    def bind(self, module: ModuleType) -> None:
        settings = self.settings
        if settings.mode == "lazy":
            return
        from cuvil_aot.load import artifacts

        artifacts.bind_module(module, settings)


def install(
    *, mode: str | None = None, cache_dir: Path | None = None, options: Options | None = None
) -> CuvilFinder:
    """Put the hook first on sys.meta_path (replacing an earlier one) and return it.

    ``mode``, ``cache_dir`` and ``options`` override CUVIL_AOT_MODE, CUVIL_AOT_CACHE_DIR
    and the default build options; the other settings come from the environment now.
    """
    from cuvil_aot import knobs
    from cuvil_aot.load.settings import Settings

    settings = Settings.from_knobs(knobs.read(), options)
    if mode is not None:
        if mode not in knobs.MODES:
            raise ValueError(f"mode must be one of {knobs.MODES}, got {mode!r}")
        settings = settings._replace(mode=mode)
    if cache_dir is not None:
        settings = settings._replace(cache_dir=Path(cache_dir))
    uninstall()
    finder = CuvilFinder(settings)
    sys.meta_path.insert(0, finder)
    return finder


def uninstall() -> None:
    """Remove every cuvil_aot finder from sys.meta_path."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, CuvilFinder)]


def install_from_env() -> None:
    """What cuvil_aot_hook.pth runs at startup: install the hook if CUVIL_AOT_HOOK=1.

    Settings are read at the first marked import, so the .pth costs one small import.
    """
    from cuvil_aot import knobs

    if knobs.read().hook:
        uninstall()
        sys.meta_path.insert(0, CuvilFinder())
