"""Prebuilt extensions shipped next to their module: the one definition of the format.

For ``pkg/mod.py`` the PEP 517 backend (and ``python -m cuvil_aot build --inplace``)
writes two files beside it:

    pkg/mod.cuvil_aot<EXT_SUFFIX>   the extension (a name no import finder matches)
    pkg/mod.cuvil_aot.json          {"format": "cuvil_aot.prebuilt", "schema": 1,
                                     "module": "pkg.mod", "ext_name": "_cvk_...",
                                     "file": "mod.cuvil_aot<EXT_SUFFIX>",
                                     "sha256": "<hex>", "size": 12345,
                                     "prekey": {<cheap key components, prekey.py>},
                                     "components": {<full cache key components>}}

The import hook uses it when the cheap key matches (the compiler and the CPU levels
it was built for may differ from this machine's: nothing is compiled here); else it
warns with the components that differ and carries on with the cache. The bytes
loaded are the bytes whose SHA-256 was checked (one descriptor, as the cache does).
The PEP 517 backend should write these files with ``write()``, so the format lives
here only.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

from cuvil_aot.cache import CacheError
from cuvil_aot.cache.fsutil import NOFOLLOW, hash_fd, read_capped, replace_file
from cuvil_aot.cache.key import check_components, summarize
from cuvil_aot.cache.manifest import check_module, load_json

FORMAT = "cuvil_aot.prebuilt"
SCHEMA = 1
MAX_BYTES = 1 << 18
FIELDS = frozenset(
    {"format", "schema", "module", "ext_name", "file", "sha256", "size", "prekey", "components"}
)
IGNORED = frozenset({"cpu_levels", "cuda_archs"})
"""Cheap components a prebuilt need not share: any level up to this CPU's will do, and
the GPU targets a wheel was built for are the wheel's (a CPU-only wheel, built with
``cuda_archs=()``, must still load where the default would ask for a fatbin)."""

_HEX64 = re.compile(r"[0-9a-f]{64}")


class PrebuiltWarning(UserWarning):
    """A prebuilt extension next to a module was not used; the message says why."""


class Prebuilt(NamedTuple):
    manifest_path: Path
    module: str
    ext_name: str
    file: str
    sha256: str
    size: int
    prekey: Mapping[str, str]
    components: Mapping[str, str]

    @property
    def ext_path(self) -> Path:
        return self.manifest_path.parent / self.file


def paths(source: Path, ext_suffix: str) -> tuple[Path, Path]:
    """(manifest, extension) paths for a module whose source file is ``source``."""
    stem = source.name[: -len(".py")] if source.name.endswith(".py") else source.stem
    return source.with_name(f"{stem}.cuvil_aot.json"), source.with_name(
        f"{stem}.cuvil_aot{ext_suffix}"
    )


def _str(doc: Mapping[str, object], name: str) -> str:
    value = doc[name]
    if not isinstance(value, str):
        raise CacheError(f"field {name!r} is not a string")
    return value


def parse(manifest_path: Path, data: bytes) -> Prebuilt:
    """Validate a prebuilt manifest; CacheError (only) with the reason."""
    doc = load_json(data)
    if not isinstance(doc, dict) or set(doc) != FIELDS:
        raise CacheError(f"expected a JSON object with exactly the fields {sorted(FIELDS)}")
    if doc["format"] != FORMAT or doc["schema"] != SCHEMA:
        raise CacheError(f"format/schema {doc['format']!r}/{doc['schema']!r} is not {FORMAT!r}/1")
    size = doc["size"]
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise CacheError("field 'size' is not a size")
    sha, file = _str(doc, "sha256"), _str(doc, "file")
    if not _HEX64.fullmatch(sha) or "/" in file or file.startswith("."):
        raise CacheError("bad 'sha256' or 'file'")
    prekey, components = doc["prekey"], doc["components"]
    if not isinstance(prekey, dict) or not isinstance(components, dict):
        raise CacheError("'prekey' and 'components' must be objects")
    return Prebuilt(
        manifest_path,
        check_module(doc["module"]),
        _str(doc, "ext_name"),
        file,
        sha,
        size,
        MappingProxyType(check_components(prekey)),
        MappingProxyType(check_components(components)),
    )


def read(manifest_path: Path) -> Prebuilt | None:
    """The prebuilt described at ``manifest_path``; None if there is no such file."""
    try:
        fd = os.open(manifest_path, os.O_RDONLY | NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CacheError(f"cannot open it: {exc.strerror}") from None
    try:
        return parse(manifest_path, read_capped(fd, MAX_BYTES))
    finally:
        os.close(fd)


def mismatch(pre: Prebuilt, module: str, prekey: Mapping[str, str], host_level: int) -> list[str]:
    """Why ``pre`` cannot stand in for a build of ``module`` now; [] if it can."""
    if pre.module != module:
        return [f"it was built for module {pre.module!r}"]
    reasons = [
        f"{name}: built with {summarize(pre.prekey.get(name))}, now {summarize(prekey.get(name))}"
        for name in sorted(set(pre.prekey) | set(prekey))
        if name not in IGNORED and pre.prekey.get(name) != prekey.get(name)
    ]
    levels = [int(x) for x in pre.prekey.get("cpu_levels", "1").split(",") if x.isdigit()]
    if levels and min(levels) > host_level:
        reasons.append(f"built for x86-64 levels {levels}, this CPU has level {host_level}")
    return reasons


@contextlib.contextmanager
def verified(pre: Prebuilt) -> Iterator[Path]:
    """A path to the very bytes of the prebuilt extension checked against the manifest,
    for loading inside the ``with`` block.

    Unlike a cache entry, the file may belong to another user (a wheel installed by
    root): what is checked is that it is the file the manifest describes.
    """
    fd = os.open(pre.ext_path, os.O_RDONLY | NOFOLLOW)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_mode & stat.S_IWOTH:
            raise CacheError(f"{pre.ext_path} is not a regular file, or is writable by anyone")
        if st.st_size != pre.size or hash_fd(fd)[0] != pre.sha256:
            raise CacheError(f"{pre.ext_path} does not match the SHA-256 in {pre.manifest_path}")
        folder = Path(tempfile.mkdtemp(prefix="cuvil_aot-load-"))
        try:
            # CPython caches extensions by path: a fresh name for the same open inode.
            origin = folder / pre.file
            origin.symlink_to(f"/proc/self/fd/{fd}")
            yield origin
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        os.close(fd)


def write(
    source: Path,
    module: str,
    ext_name: str,
    ext_bytes: bytes,
    prekey: Mapping[str, str],
    components: Mapping[str, str],
    ext_suffix: str,
) -> Path:
    """Write the extension and then its manifest next to ``source``; the manifest path."""
    import hashlib
    import json

    manifest_path, ext_path = paths(source, ext_suffix)
    replace_file(ext_path, ext_bytes, mode=0o644, durable=True)
    doc = {
        "format": FORMAT,
        "schema": SCHEMA,
        "module": module,
        "ext_name": ext_name,
        "file": ext_path.name,
        "sha256": hashlib.sha256(ext_bytes).hexdigest(),
        "size": len(ext_bytes),
        "prekey": dict(prekey),
        "components": dict(components),
    }
    replace_file(manifest_path, json.dumps(doc, indent=1, sort_keys=True).encode() + b"\n",
                 mode=0o644, durable=True)
    return manifest_path
