"""Which toolchain a build would use, told by its files (path, mtime, size), never by
running it: a cache hit must not start a process. The candidates are those of
toolchain.cc.find_compiler and toolchain.nvcc.candidates, in the same order.

A stamp only decides whether a shortcut recorded at build time still applies
(shortcuts.py): a compiler that changed on disk sends the lookup to the full key,
which asks the compiler itself.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys


def _file_stamp(path: str) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{os.path.realpath(path)}:{st.st_mtime_ns}:{st.st_size}"


def nvcc_stamp(cuda_home: str = "") -> str:
    """The first nvcc on PATH, under CUDA_HOME, or in an nvidia-* wheel; '' if none."""
    found = [shutil.which("nvcc") or ""]
    if cuda_home:
        found.append(os.path.join(cuda_home, "bin", "nvcc"))
    for entry in sys.path:
        nvidia = os.path.join(entry or ".", "nvidia")
        if os.path.isdir(nvidia):
            found += [os.path.join(nvidia, d, "bin", "nvcc") for d in sorted(os.listdir(nvidia))]
    for path in found:
        if path and os.path.isfile(path):
            return _file_stamp(path) or ""
    return ""


def compiler_stamp(
    override: str = "", cuda_home: str = "", with_nvcc: bool = True
) -> dict[str, str] | None:
    """The C compiler (and nvcc, when GPU code is asked for) a build would use; None when
    there is no C compiler at all."""
    from cuvil_aot import host

    candidates = [override] if override else []
    candidates += [str(host.config_var("CC") or ""), "cc", "gcc", "clang"]
    for cand in candidates:
        parts = shlex.split(cand)
        found = shutil.which(parts[0]) if parts else None
        stamp = _file_stamp(found) if found else None
        if stamp is not None:
            return {
                "command": shlex.join(parts),
                "cc": stamp,
                "nvcc": nvcc_stamp(cuda_home) if with_nvcc else "",
            }
    return None
