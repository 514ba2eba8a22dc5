"""The manylinux tag of a built wheel (cuvil_aot.build.manylinux): the libraries and
glibc symbol versions read from real shared objects, checked against readelf; the
musllinux tag of objects that link musl's libc alone, built on musl."""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cuvil_aot.build import manylinux

pytestmark = pytest.mark.skipif(platform.system() != "Linux" or shutil.which("cc") is None,
                                reason="builds ELF shared objects with cc")
PLAIN = f"linux_{platform.machine()}"

LIBFOO = "int foo(int x) { return x + 1; }\n"
USES_GLIBC = """
#include <math.h>
#include <pthread.h>
#include <string.h>
double uses(double x, char *d, const char *s, unsigned long n) {
    pthread_mutex_t m;
    pthread_mutex_init(&m, 0);
    memcpy(d, s, n);
    return sqrt(x);
}
"""
USES_FOO = "extern int foo(int);\nint uses_foo(int x) { return foo(x) * 2; }\n"


def _shared(tmp: Path, name: str, source: str, *link: str) -> Path:
    (tmp / f"{name}.c").write_text(source)
    out = tmp / f"{name}.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", str(tmp / f"{name}.c"), "-o", str(out),
                    f"-L{tmp}", *link], check=True)
    return out


def _readelf(path: Path) -> tuple[set[str], set[str]]:
    dynamic = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True,
                             check=True).stdout
    versions = subprocess.run(["readelf", "-V", str(path)], capture_output=True, text=True,
                              check=True).stdout
    needs = versions.split("Version needs section", 1)[-1] if "needs" in versions else ""
    return (set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)),
            set(re.findall(r"Name: (\S+)\s+Flags", needs)))


@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs readelf")
def test_needs_match_readelf(tmp_path: Path) -> None:
    _shared(tmp_path, "libfoo", LIBFOO)
    glibc_only = _shared(tmp_path, "glibc_only", USES_GLIBC, "-lm", "-lpthread")
    for path in (glibc_only, _shared(tmp_path, "with_foo", USES_FOO, "-lfoo")):
        needs = manylinux.read_needs(path.read_bytes())
        libraries, versions = _readelf(path)
        assert needs.libraries == libraries and needs.versions == versions, path
    assert manylinux.read_needs(glibc_only.read_bytes()).versions, "no versioned symbols"


def test_glibc_only_objects_get_the_newest_version_they_need(tmp_path: Path) -> None:
    elf = _shared(tmp_path, "glibc_only", USES_GLIBC, "-lm", "-lpthread").read_bytes()
    needs = manylinux.read_needs(elf)
    newest = max((tuple(int(p) for p in v[len("GLIBC_"):].split(".")[:2])
                  for v in needs.versions), default=(0, 0))
    major, minor = max(newest, manylinux.OLDEST)
    assert manylinux.platform_tag([elf], PLAIN) == \
        f"manylinux_{major}_{minor}_{platform.machine()}"
    assert manylinux.platform_tag([], PLAIN) == f"manylinux_2_17_{platform.machine()}"


def test_anything_beyond_glibc_keeps_the_plain_tag(tmp_path: Path) -> None:
    _shared(tmp_path, "libfoo", LIBFOO)
    glibc_only = _shared(tmp_path, "glibc_only", USES_GLIBC, "-lm", "-lpthread").read_bytes()
    with_foo = _shared(tmp_path, "with_foo", USES_FOO, "-lfoo").read_bytes()
    assert manylinux.platform_tag([glibc_only, with_foo], PLAIN) == PLAIN
    assert manylinux.platform_tag([glibc_only, b"not an ELF file"], PLAIN) == PLAIN
    assert manylinux.platform_tag([glibc_only, glibc_only[:200]], PLAIN) == PLAIN  # truncated
    assert manylinux.platform_tag([glibc_only], "macosx_11_0_arm64") == "macosx_11_0_arm64"


@pytest.mark.parametrize("versions,expected", [
    ({"GLIBC_2.2.5", "GLIBC_2.14"}, (2, 17)),
    ({"GLIBC_2.3.4", "GLIBC_2.34"}, (2, 34)),
    ({"GLIBC_2.34", "GLIBC_PRIVATE"}, None),
    ({"GLIBC_2.17", "GLIBCXX_3.4.29"}, None),
])
def test_glibc_version_of_needs(versions: set[str], expected: tuple[int, int] | None) -> None:
    needs = manylinux.Needs(frozenset({"libc.so.6", "libm.so.6"}), frozenset(versions))
    assert manylinux.glibc_version(needs) == expected
    musl = manylinux.Needs(frozenset({"libc.musl-x86_64.so.1"}), frozenset())
    assert manylinux.glibc_version(musl) is None


def _musl_object(tmp: Path) -> bytes:
    """A shared object that links musl's libc alone (a stub with its soname stands in)."""
    libc = f"libc.musl-{platform.machine()}.so.1"
    (tmp / "stub.c").write_text("int puts(const char *s) { return 0; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-nostdlib", str(tmp / "stub.c"), "-o",
                    str(tmp / libc), f"-Wl,-soname,{libc}"], check=True)
    (tmp / "ext.c").write_text('extern int puts(const char *);\nint f(void) { return puts(""); }\n')
    subprocess.run(["cc", "-shared", "-fPIC", "-nostdlib", str(tmp / "ext.c"), "-o",
                    str(tmp / "ext.so"), str(tmp / libc)], check=True)
    return (tmp / "ext.so").read_bytes()


def test_built_on_musl_objects_of_musl_alone_get_musllinux(tmp_path: Path) -> None:
    elf = _musl_object(tmp_path)
    assert manylinux.read_needs(elf).libraries == {f"libc.musl-{platform.machine()}.so.1"}
    musllinux = f"musllinux_1_2_{platform.machine()}"
    assert manylinux.platform_tag([elf], PLAIN, musl=(1, 2)) == musllinux
    assert manylinux.platform_tag([], PLAIN, musl=(1, 2)) == musllinux
    glibc_only = _shared(tmp_path, "glibc_only", USES_GLIBC, "-lm", "-lpthread").read_bytes()
    assert manylinux.platform_tag([elf, glibc_only], PLAIN, musl=(1, 2)) == PLAIN
    assert manylinux.platform_tag([elf], PLAIN) == PLAIN  # musl's libc on a glibc build


def test_musl_version_is_read_from_the_interpreters_loader(tmp_path: Path) -> None:
    """The executable's ELF interpreter (PT_INTERP) decides: musl's loader prints its version
    when run alone (a script stands in for it); glibc's means no musl."""
    loader = tmp_path / "ld-musl-test.so.1"
    loader.write_text("#!/bin/sh\necho 'musl libc (x86_64)\nVersion 1.2.4\nDynamic Program "
                      "Loader' >&2\nexit 1\n")
    loader.chmod(0o755)
    (tmp_path / "main.c").write_text("int main(void) { return 0; }\n")
    exe = tmp_path / "python"
    subprocess.run(["cc", str(tmp_path / "main.c"), "-o", str(exe),
                    f"-Wl,--dynamic-linker={loader}"], check=True)
    assert manylinux.interpreter(exe.read_bytes()) == str(loader)
    assert manylinux.musl_version(str(exe)) == (1, 2)
    if "musl" not in (manylinux.interpreter(Path(sys.executable).read_bytes()) or ""):
        assert manylinux.musl_version() is None
    assert manylinux.musl_version(str(tmp_path / "main.c")) is None  # not an ELF file
