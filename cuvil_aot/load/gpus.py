"""The GPUs this machine runs: what a build makes CUDA code for when nothing else is asked.

Asking the driver (cuInit) costs tens to hundreds of milliseconds, too much for every
import. So the answer is kept in the cache folder (``gpus.json``) under a stamp read
from /proc/driver/nvidia (the driver version and the GPUs' bus ids) and
CUDA_VISIBLE_DEVICES: the driver is asked again only when that stamp changes. Without
an NVIDIA driver the answer is none, at the cost of one directory lookup.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
from pathlib import Path

from cuvil_aot.cache.fsutil import replace_file
from cuvil_aot.options import bad_archs

PROC = Path("/proc/driver/nvidia")
MEMO = "gpus.json"
_CU_DEVICE_ATTRIBUTE_CC_MAJOR = 75
_CU_DEVICE_ATTRIBUTE_CC_MINOR = 76
_known: dict[str, tuple[str, ...]] = {}


def archs(memo_dir: Path | None) -> tuple[str, ...]:
    """SASS for each distinct GPU the driver reports and PTX for the newest, e.g.
    ("sm_80", "sm_90", "compute_90"); () without a GPU."""
    stamp = _driver_stamp()
    if stamp is None:
        return ()
    if stamp in _known:
        return _known[stamp]
    found = _read_memo(memo_dir, stamp)
    if found is None:
        found = _ask_driver()
        _write_memo(memo_dir, stamp, found)
    _known[stamp] = found
    return found


def _driver_stamp() -> str | None:
    """What the answer depends on, read without starting CUDA; None: no NVIDIA driver."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>")
    try:
        version = (PROC / "version").read_text()
        boards = sorted(os.listdir(PROC / "gpus"))
    except OSError:
        return f"no /proc entry; {visible}" if _libcuda() is not None else None
    return f"{version.strip()}; {','.join(boards)}; {visible}"


def _libcuda() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


def _ask_driver() -> tuple[str, ...]:
    cuda = _libcuda()
    count = ctypes.c_int(0)
    if cuda is None or cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return ()
    capabilities = set()
    for device in range(count.value):
        major, minor = ctypes.c_int(0), ctypes.c_int(0)
        if cuda.cuDeviceGetAttribute(ctypes.byref(major), _CU_DEVICE_ATTRIBUTE_CC_MAJOR,
                                     device) == 0 and \
                cuda.cuDeviceGetAttribute(ctypes.byref(minor), _CU_DEVICE_ATTRIBUTE_CC_MINOR,
                                          device) == 0:
            capabilities.add(major.value * 10 + minor.value)
    if not capabilities:
        return ()
    return (*(f"sm_{cc}" for cc in sorted(capabilities)), f"compute_{max(capabilities)}")


def _read_memo(memo_dir: Path | None, stamp: str) -> tuple[str, ...] | None:
    if memo_dir is None:
        return None
    try:
        doc = json.loads((memo_dir / MEMO).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("stamp") != stamp:
        return None
    found = doc.get("archs")
    if not isinstance(found, list) or not all(isinstance(a, str) for a in found) \
            or bad_archs(found):
        return None
    return tuple(found)


def _write_memo(memo_dir: Path | None, stamp: str, found: tuple[str, ...]) -> None:
    if memo_dir is None or not memo_dir.is_dir():
        return
    with contextlib.suppress(OSError):  # a read-only cache asks the driver next time too
        replace_file(memo_dir / MEMO, json.dumps({"stamp": stamp, "archs": list(found)}).encode())
