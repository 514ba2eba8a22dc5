"""A planted shared library that proves whether anything dlopened it, and tools to put
it into a cache entry.

``build_plant`` compiles plant.c: its constructor appends to $CV_PLANT_MARKER when the
library is loaded. A tail of filler bytes follows the ELF image, so the file can be
truncated or have bytes flipped inside that tail and still load: a test that finds no
marker then proves the cache refused a file dlopen would have accepted.

``DLOPEN_LOG`` is child code that records the SHA-256 of every extension module the
interpreter loads (through ``_imp.create_dynamic``), for the same proof without a
constructor.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

TAIL = 8192
"""Filler bytes after the ELF image; cutting or flipping bytes there keeps it loadable."""
MARKER_ENV = "CV_PLANT_MARKER"
LOG_ENV = "CV_DLOPEN_LOG"

DLOPEN_LOG = """
import _imp, hashlib, os
_real_create_dynamic = _imp.create_dynamic
def _logged_create_dynamic(spec, *args):
    with open(spec.origin, "rb") as _f:
        _digest = hashlib.sha256(_f.read()).hexdigest()
    with open(os.environ["CV_DLOPEN_LOG"], "a") as _log:
        _log.write(_digest + "\\n")
    return _real_create_dynamic(spec, *args)
_imp.create_dynamic = _logged_create_dynamic
"""


def compiler() -> list[str] | None:
    cc = (sysconfig.get_config_var("CC") or "cc").split()
    return cc if shutil.which(cc[0]) else None


def build_plant(folder: Path) -> bytes:
    """The planted library's bytes: the ELF image plus TAIL filler bytes."""
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler")
    out = folder / "plant.so"
    source = Path(__file__).with_name("plant.c")
    subprocess.run([*cc, "-shared", "-fPIC", "-o", str(out), str(source)], check=True)
    return out.read_bytes() + b"\xa5" * TAIL


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def loads_it(data: bytes, folder: Path) -> bool:
    """Whether dlopen accepts ``data`` and runs its constructor (in a child process)."""
    path, marker = folder / "probe-plant.so", folder / "probe-marker"
    path.write_bytes(data)
    code = f"import ctypes\ntry:\n    ctypes.CDLL({str(path)!r})\nexcept OSError:\n    pass\n"
    subprocess.run([sys.executable, "-c", code], env={**os.environ, MARKER_ENV: str(marker)},
                   check=True, timeout=60)
    ran = marker.exists()
    path.unlink()
    marker.unlink(missing_ok=True)
    return ran


def _rewrite(path: Path, data: bytes) -> None:
    os.chmod(path, 0o600)
    path.write_bytes(data)
    os.chmod(path, 0o400)


def ext_record(entry: Path) -> tuple[dict, str]:
    """(the manifest document, the logical name of the entry's extension)."""
    doc = json.loads((entry / "manifest.json").read_bytes())
    return doc, str(doc["metadata"]["ext_file"])


def extension_path(entry: Path) -> Path:
    doc, logical = ext_record(entry)
    return entry / doc["files"][logical]["path"]


def plant(entry: Path, data: bytes) -> Path:
    """Make ``data`` the extension of ``entry`` and rewrite its manifest to match: a
    well-formed entry, as a same-user attacker could write one. Returns the file."""
    doc, logical = ext_record(entry)
    old = entry / doc["files"][logical]["path"]
    digest = sha256(data)
    new = entry / f"{digest[:16]}-{logical}"
    os.unlink(old)
    new.write_bytes(data)
    os.chmod(new, 0o400)
    doc["files"][logical] = {"path": new.name, "sha256": digest, "size": len(data)}
    _rewrite(entry / "manifest.json", json.dumps(doc, indent=1, sort_keys=True).encode())
    return new


def replace_bytes(entry: Path, data: bytes) -> Path:
    """Overwrite the entry's extension with ``data``, leaving the manifest as it was."""
    path = extension_path(entry)
    _rewrite(path, data)
    return path
