"""The manylinux (PEP 600) or musllinux (PEP 656) platform tag that a wheel's extension
modules allow.

An extension may go into a ``manylinux_2_N_<arch>`` wheel when every library it links
is one that every glibc system has, and every versioned symbol it takes from them is
from glibc 2.N or older (what ``auditwheel show`` checks). Both are read from the ELF
file itself: its ``DT_NEEDED`` entries and its version needs (``.gnu.version_r``).
Built on musl (the Python interpreter's ELF interpreter is musl's loader), an extension
that links musl's libc alone goes into a ``musllinux_1_N_<arch>`` wheel, 1.N being this
machine's musl (musl has no symbol versions: a newer one may have added what it uses).
Anything else (libstdc++, another library) keeps the plain ``linux_<arch>`` tag: such a
wheel installs only where it was built, and PyPI refuses it.
"""

from __future__ import annotations

import re
import struct
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass

# The libraries of auditwheel's manylinux policies that a C extension may link.
GLIBC_LIBRARIES = frozenset({
    "libc.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0", "libutil.so.1",
    "libresolv.so.2", "libnsl.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"})
OLDEST = (2, 17)  # manylinux2014: no NumPy 2 wheel needs less

_SHT_DYNAMIC, _SHT_GNU_VERNEED = 6, 0x6FFFFFFE
_DT_NEEDED = 1
_PT_INTERP = 3


class ElfError(ValueError):
    """Not a 64-bit little-endian ELF shared object."""


@dataclass(frozen=True)
class Needs:
    """What one shared object asks of the system."""

    libraries: frozenset[str]
    versions: frozenset[str]  # e.g. "GLIBC_2.14"


def _cstr(table: bytes, offset: int) -> str:
    return table[offset:table.index(b"\0", offset)].decode()


def read_needs(elf: bytes) -> Needs:
    """The libraries (DT_NEEDED) and symbol versions (.gnu.version_r) of an ELF file."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise ElfError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize)
                for i in range(shnum)]

    def body(index: int) -> bytes:
        offset, size = sections[index][4], sections[index][5]
        return elf[offset:offset + size]

    libraries: set[str] = set()
    versions: set[str] = set()
    for _, kind, _, _, offset, size, link, info, _, _ in sections:
        if kind == _SHT_DYNAMIC:
            strings = body(link)
            for tag, value in struct.iter_unpack("<qQ", elf[offset:offset + size]):
                if tag == _DT_NEEDED:
                    libraries.add(_cstr(strings, value))
        elif kind == _SHT_GNU_VERNEED:
            strings, entry = body(link), offset
            for _ in range(info):  # sh_info: the number of Verneed entries
                _, count, _, aux, following = struct.unpack_from("<HHIII", elf, entry)
                at = entry + aux
                for _ in range(count):
                    _, _, _, name, step = struct.unpack_from("<IHHII", elf, at)
                    versions.add(_cstr(strings, name))
                    at += step
                entry += following
    return Needs(frozenset(libraries), frozenset(versions))


def interpreter(elf: bytes) -> str | None:
    """The program interpreter (``PT_INTERP``) of an ELF executable, None for none."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise ElfError("not a 64-bit little-endian ELF file")
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    for i in range(phnum):
        kind, _, offset, _, _, size, _, _ = struct.unpack_from("<IIQQQQQQ", elf,
                                                               phoff + i * phentsize)
        if kind == _PT_INTERP:
            return elf[offset:offset + size].split(b"\0", 1)[0].decode()
    return None


def musl_version(executable: str = sys.executable) -> tuple[int, int] | None:
    """(1, N) where ``executable`` runs on musl 1.N (its loader prints the version when run
    alone, as packaging reads it), None on glibc or where that cannot be read."""
    try:
        with open(executable, "rb") as f:
            loader = interpreter(f.read())
        if loader is None or "musl" not in loader:
            return None
        err = subprocess.run([loader], capture_output=True, text=True, timeout=10).stderr
    except (OSError, ValueError, struct.error, subprocess.SubprocessError):
        return None
    match = re.search(r"^Version (\d+)\.(\d+)", err, re.MULTILINE)
    return (int(match[1]), int(match[2])) if match else None


def musl_only(needs: Needs, arch: str) -> bool:
    """Links musl's libc and nothing else (its soname on Alpine, or plain libc.so)."""
    return needs.libraries <= {f"libc.musl-{arch}.so.1", "libc.so"} and not needs.versions


def glibc_version(needs: Needs) -> tuple[int, int] | None:
    """The newest glibc that ``needs`` names, None where it needs more than glibc."""
    if not needs.libraries <= GLIBC_LIBRARIES:
        return None
    newest = OLDEST
    for version in needs.versions:
        match = re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", version)
        if match is None:  # GLIBC_PRIVATE, or another library's: no promise across systems
            return None
        newest = max(newest, (int(match[1]), int(match[2])))
    return newest


def platform_tag(objects: Iterable[bytes], plain: str,
                 musl: tuple[int, int] | None = None) -> str:
    """``manylinux_2_N_<arch>`` (or, built on ``musl`` 1.N, ``musllinux_1_N_<arch>``) for a
    wheel holding ``objects`` (its shared objects) where they allow it, else ``plain``
    (``linux_<arch>``, this machine's tag)."""
    if not plain.startswith("linux_"):
        return plain
    arch = plain[len("linux_"):]
    try:
        needs = [read_needs(elf) for elf in objects]
    except (struct.error, IndexError, ValueError):  # ElfError is a ValueError
        return plain
    if musl is not None:
        fits = all(musl_only(n, arch) for n in needs)
        return f"musllinux_{musl[0]}_{musl[1]}_{arch}" if fits else plain
    newest = OLDEST
    for n in needs:
        version = glibc_version(n)
        if version is None:
            return plain
        newest = max(newest, version)
    return f"manylinux_{newest[0]}_{newest[1]}_{arch}"
