"""``sysconfig``, safe to read from several threads at once.

``sysconfig`` fills its variables on first use, and on CPython before 3.12 a thread
that reads them while another fills them sees a partial dict (CPython gh-92452):
``EXT_SUFFIX`` comes back as None, so a cache key says ``.so`` and an extension gets
the wrong file name. ``python -m cuvil_aot build -j N`` and lazy first calls from
several threads build modules in threads, so every read goes through here.
"""

from __future__ import annotations

import sysconfig
import threading

_lock = threading.Lock()
_filled = False


def _fill() -> None:
    global _filled
    if not _filled:
        with _lock:
            sysconfig.get_config_vars()  # fills them all, once, under the lock
            _filled = True


def config_var(name: str) -> object:
    _fill()
    return sysconfig.get_config_var(name)


def paths() -> dict[str, str]:
    _fill()
    return sysconfig.get_paths()


def platform() -> str:
    _fill()
    return sysconfig.get_platform()


def ext_suffix() -> str:
    """The file name ending of an extension module for this interpreter."""
    return str(config_var("EXT_SUFFIX") or ".so")
