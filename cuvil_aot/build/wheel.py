"""Wheels in memory: read one, add files, retag it, write it back reproducibly.

Written wheels have sorted entries (``.dist-info`` last, ``RECORD`` at the very end),
the same timestamp on every entry (``SOURCE_DATE_EPOCH`` when set), modes normalized
to 0644/0755 and a freshly computed ``RECORD``: two builds of the same inputs give the
same bytes, whatever directory they ran in.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import sys
import time
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cuvil_aot import host
from cuvil_aot.build import manylinux

_EPOCH_MIN = 315532800  # 1980-01-01: the oldest time a zip entry can hold


class WheelError(ValueError):
    """A wheel the inner backend wrote that cannot be understood."""


def interpreter_tags() -> tuple[str, str]:
    """(python tag, abi tag) of this interpreter, e.g. ('cp311', 'cp311')."""
    version = f"{sys.version_info.major}{sys.version_info.minor}"
    if sys.implementation.name == "cpython":
        return f"cp{version}", f"cp{version}{sys.abiflags}"
    soabi = str(host.config_var("SOABI") or "none")
    abi = "_".join(soabi.split("-")[:2]).replace(".", "_")
    return f"{sys.implementation.name[:2]}{version}", abi


def platform_tag() -> str:
    return host.platform().replace("-", "_").replace(".", "_")


def native_tag() -> str:
    """The tag of a wheel holding extensions for this interpreter on this machine."""
    return "-".join([*interpreter_tags(), platform_tag()])


def portable_tag(wheel: Wheel) -> str:
    """native_tag with the manylinux (musllinux on musl) platform that ``wheel``'s shared
    objects allow."""
    objects = (data for name, data in wheel.files.items() if name.endswith(".so"))
    tag = manylinux.platform_tag(objects, platform_tag(), manylinux.musl_version())
    return "-".join([*interpreter_tags(), tag])


def source_date_epoch(env: Mapping[str, str]) -> int | None:
    """SOURCE_DATE_EPOCH (reproducible-builds.org), None when unset."""
    raw = env.get("SOURCE_DATE_EPOCH", "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise WheelError(f"SOURCE_DATE_EPOCH={raw!r}: expected seconds since 1970")
    return int(raw)


def _date_time(epoch: int | None) -> tuple[int, int, int, int, int, int]:
    stamp = max(epoch, _EPOCH_MIN) if epoch is not None else int(time.time())
    return time.gmtime(stamp)[:6]


@dataclass
class Wheel:
    """A wheel's name parts and entries (path inside the wheel -> bytes, mode)."""

    distribution: str
    version: str
    build: str | None
    tag: str
    files: dict[str, bytes] = field(default_factory=dict)
    executable: set[str] = field(default_factory=set)

    @property
    def dist_info(self) -> str:
        return f"{self.distribution}-{self.version}.dist-info"

    @property
    def filename(self) -> str:
        parts = [self.distribution, self.version, *([self.build] if self.build else []), self.tag]
        return "-".join(parts) + ".whl"

    def add(self, arcname: str, data: bytes, executable: bool = False) -> None:
        self.files[arcname] = data
        if executable:
            self.executable.add(arcname)
        else:
            self.executable.discard(arcname)

    def retag(self, tag: str) -> None:
        """Make this a platform wheel for ``tag`` (its files go to platlib)."""
        wheel_file = f"{self.dist_info}/WHEEL"
        self.files[wheel_file] = retag_wheel_file(self.files[wheel_file], tag)
        self.tag = tag

    def write(self, directory: Path, epoch: int | None) -> Path:
        """Write ``directory/<filename>``, every entry dated ``epoch`` (else now)."""
        out = directory / self.filename
        date_time = _date_time(epoch)
        tmp = out.with_name(out.name + ".tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
            for arcname, data in self._entries():
                info = zipfile.ZipInfo(arcname, date_time)
                info.create_system = 3  # unix: the mode bits below are read back
                info.external_attr = (0o100755 if arcname in self.executable else 0o100644) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, data)
        os.replace(tmp, out)
        return out

    def _entries(self) -> list[tuple[str, bytes]]:
        record = f"{self.dist_info}/RECORD"
        names = sorted((n for n in self.files if n != record),
                       key=lambda n: (n.startswith(self.dist_info + "/"), n))
        rows = [(n, "sha256=" + _b64(hashlib.sha256(self.files[n]).digest()),
                 str(len(self.files[n]))) for n in names]
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows([*rows, (record, "", "")])
        return [*((n, self.files[n]) for n in names), (record, buf.getvalue().encode())]


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def retag_wheel_file(data: bytes, tag: str) -> bytes:
    """The WHEEL metadata file with ``Root-Is-Purelib: false`` and only ``tag``."""
    lines = [line for line in data.decode().splitlines()
             if not line.startswith(("Tag:", "Root-Is-Purelib:"))]
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join([*lines, "Root-Is-Purelib: false", f"Tag: {tag}", ""]).encode()


def read(path: Path) -> Wheel:
    parts = path.name[: -len(".whl")].split("-")
    if not path.name.endswith(".whl") or len(parts) not in (5, 6):
        raise WheelError(f"{path.name} is not a wheel file name")
    wheel = Wheel(parts[0], parts[1], parts[2] if len(parts) == 6 else None, "-".join(parts[-3:]))
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if not info.is_dir():
                wheel.add(info.filename, archive.read(info), bool(info.external_attr >> 16 & 0o111))
    if f"{wheel.dist_info}/WHEEL" not in wheel.files:
        raise WheelError(f"{path.name} has no {wheel.dist_info}/WHEEL")
    return wheel


def unpack(wheel: Wheel, dest: Path) -> None:
    """Write the wheel's files under ``dest`` (to import its modules from there)."""
    for arcname, data in wheel.files.items():
        target = dest / arcname
        if ".." in Path(arcname).parts or Path(arcname).is_absolute():
            raise WheelError(f"unsafe path in the wheel: {arcname}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
