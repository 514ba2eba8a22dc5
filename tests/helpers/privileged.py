"""Ways to run a child where the cache is full or read-only, and probes that say
whether this machine allows them (tests skip with the probe's reason otherwise).

- ``in_mount_namespace``: the child runs under ``unshare -m`` (``-rm`` when not root)
  after shell commands that mount a small tmpfs or a read-only bind mount; the mounts
  vanish with the child, so the child must report what it saw of them itself.
- ``without_dac_override``: root without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH/
  CAP_FOWNER, so permission bits bind it like any user (``setpriv``).
- ``as_nobody``: uid/gid of ``nobody``; only where that user can run this Python.
"""

from __future__ import annotations

import functools
import os
import pwd
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DROP_DAC = "-dac_override,-dac_read_search,-fowner"


def _ok(cmd: list[str]) -> bool:
    try:
        return subprocess.run(cmd, capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@functools.cache
def _unshare() -> list[str] | None:
    if shutil.which("unshare") is None:
        return None
    target = tempfile.mkdtemp(prefix="cv-mount-probe-")
    try:
        for flags in (["-m"], ["-rm"]):
            cmd = ["unshare", *flags, "sh", "-c",
                   f"mount -t tmpfs -o size=64k tmpfs {shlex.quote(target)}"]
            if _ok(cmd):
                return ["unshare", *flags]
        return None
    finally:
        os.rmdir(target)


def mount_reason() -> str | None:
    """None if mounts in a private namespace work here, else why not."""
    return None if _unshare() else "cannot mount in a private mount namespace (unshare -m)"


def in_mount_namespace(setup: str, argv: list[str]) -> list[str]:
    """A command line: run the shell ``setup`` (mounts) in a new mount namespace, then
    exec ``argv`` there."""
    prefix = _unshare()
    if prefix is None:
        raise RuntimeError(mount_reason())
    return [*prefix, "sh", "-ec", f"{setup}\nexec {shlex.join(argv)}"]


@functools.cache
def dac_reason() -> str | None:
    """None if ``without_dac_override`` makes a read-only directory refuse writes."""
    if os.geteuid() != 0:
        return None  # an ordinary user is bound by permission bits already
    if shutil.which("setpriv") is None:
        return "setpriv is not installed"
    folder = tempfile.mkdtemp(prefix="cv-dac-probe-")
    try:
        os.chmod(folder, 0o500)
        code = f"open({os.path.join(folder, 'x')!r}, 'w')"
        if _ok(without_dac_override([sys.executable, "-c", code])):
            return "dropping CAP_DAC_OVERRIDE did not make a 0500 directory read-only"
        if not _ok(without_dac_override([sys.executable, "-c", "import numpy"])):
            return "setpriv cannot drop capabilities here"
        return None
    finally:
        os.chmod(folder, 0o700)
        shutil.rmtree(folder)


def without_dac_override(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["setpriv", f"--bounding-set={DROP_DAC}", "--inh-caps=-all", *argv]


def nobody() -> tuple[int, int] | None:
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        return None
    return entry.pw_uid, entry.pw_gid


@functools.cache
def nobody_reason(pythonpath: str) -> str | None:
    """None if this Python, NumPy, cuvil_aot and the C headers work as ``nobody``."""
    ids = nobody()
    if os.geteuid() != 0 or ids is None or shutil.which("setpriv") is None:
        return "needs root, setpriv and a 'nobody' user"
    code = ("import sysconfig, os, numpy, cuvil_aot.runtime.native\n"
            "assert os.access(sysconfig.get_paths()['include'], os.R_OK)")
    cmd = as_nobody([sys.executable, "-c", code])
    if subprocess.run(cmd, capture_output=True, env={**os.environ, "PYTHONPATH": pythonpath},
                      timeout=60).returncode != 0:
        return "user 'nobody' cannot run this Python with NumPy and cuvil_aot"
    return None


def as_nobody(argv: list[str]) -> list[str]:
    ids = nobody()
    assert ids is not None
    return ["setpriv", f"--reuid={ids[0]}", f"--regid={ids[1]}", "--clear-groups", *argv]


def shared_tmp() -> Path:
    """A fresh directory another user can reach (pytest's tmp_path is 0700 under root)."""
    folder = Path(tempfile.mkdtemp(prefix="cv-shared-"))
    folder.chmod(0o755)
    return folder
