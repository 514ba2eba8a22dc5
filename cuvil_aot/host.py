"""Facts about this host and this installation: ``sysconfig`` (safe to read from several
threads at once), where the headers are, the ABI and package parts of the cache key,
the CPU level.

On ``sysconfig``:

``sysconfig`` fills its variables on first use, and on CPython before 3.12 a thread
that reads them while another fills them sees a partial dict (CPython gh-92452):
``EXT_SUFFIX`` comes back as None, so a cache key says ``.so`` and an extension gets
the wrong file name. ``python -m cuvil_aot build -j N`` and lazy first calls from
several threads build modules in threads, so every read goes through here.
"""

from __future__ import annotations

import hashlib
import os
import sys
import sysconfig
import threading
from pathlib import Path

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


# --- what a build depends on, read without importing the compiler ----------------------

_PACKAGE = Path(__file__).resolve().parent
_PACKAGE_HASH: list[str] = []


def header_dir() -> Path:
    """cuvil_aot's own headers for generated code: installed in the package, else
    ``native/include`` of a source checkout."""
    ours = _PACKAGE / "include"
    if not (ours / "cuvil_aot" / "kernel.h").exists():
        ours = _PACKAGE.parent / "native" / "include"
    return ours


def _tree(folder: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """Every file under ``folder`` ending in one of ``suffixes``, in a stable order."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [Path(root) / n for n in sorted(files) if n.endswith(suffixes)]
    return found


def compiler_files() -> list[Path]:
    """The Python files whose bytes decide generated code: the whole compiler folder, the
    build options, and ``nn.py`` (users inline its building blocks)."""
    return [*_tree(_PACKAGE / "compiler", (".py",)), _PACKAGE / "options.py", _PACKAGE / "nn.py"]


def package_hash() -> str:
    """cuvil_aot's version plus a hash of ``compiler_files()`` and the headers generated code
    includes: the ``cuvil_aot`` key component. Read as files: the compiler is not imported."""
    if _PACKAGE_HASH:
        return _PACKAGE_HASH[0]
    from cuvil_aot._version import __version__

    digest = hashlib.sha256(__version__.encode())
    for path in compiler_files():
        digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0" + path.read_bytes())
    headers = hashlib.sha256()
    for path in _tree(header_dir() / "cuvil_aot", (".h", ".cuh")):
        headers.update(path.name.encode() + b"\0" + path.read_bytes())
    digest.update(headers.hexdigest().encode())
    _PACKAGE_HASH.append(digest.hexdigest())
    return _PACKAGE_HASH[0]


def numpy_abi() -> str:
    """The NumPy ABI an extension depends on: its major version. Extensions are built
    for NumPy's default target API, so one built against any 2.x runs on every 2.x."""
    import numpy as np

    return f"numpy{np.__version__.split('.')[0]}"


def python_abi() -> str:
    return f"{sys.implementation.cache_tag}{ext_suffix()}"


def cpu_level() -> int:
    """The x86-64 level kernels are built for by default: the one the native runtime
    detected, lowered by CUVIL_AOT_CPU_LEVEL (1 where the machine is not x86-64)."""
    if os.uname().machine.lower() not in ("x86_64", "amd64"):
        return 1
    from cuvil_aot.runtime import native  # type: ignore[attr-defined,import-untyped,unused-ignore]

    return int(native.info()["cpu_level"])
