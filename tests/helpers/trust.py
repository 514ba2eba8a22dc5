"""Pieces of tests/test_trust_cache.py: the loader's shortcut files as an attacker edits
them, a child stopped mid-publish, and a PID that is no longer alive."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .proc import Workspace


def shortcut_file(ws: Workspace, module: str) -> Path:
    return ws.cache / "shortcuts" / f"{hashlib.sha256(module.encode()).hexdigest()[:32]}.json"


def read_shortcuts(path: Path) -> tuple[dict[str, Any], bytes]:
    """The JSON document of a shortcut file and whatever follows its first line."""
    head, _, rest = path.read_bytes().partition(b"\n")
    return json.loads(head), rest


def write_shortcuts(path: Path, doc: dict[str, Any], rest: bytes = b"") -> None:
    """Rewrite the document, keeping the rest (a signature made for the old one)."""
    path.write_bytes(json.dumps(doc, sort_keys=True).encode() + b"\n" + rest)


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def stopped_at(code: str, ws: Workspace, step: str) -> subprocess.Popen[str]:
    """``python -c code`` in the workspace, once it has stopped itself at publish ``step``
    (CUVIL_AOT_TEST_STOP_AT), holding the key's lock. The caller kills it."""
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ws.root,
                            env=ws.env(CUVIL_AOT_TEST_STOP_AT=step),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while proc.poll() is None and state(proc.pid) != "T":
        if time.monotonic() > deadline:
            kill(proc)
            raise AssertionError("the child never reached the step")
        time.sleep(0.01)
    if proc.poll() is not None:
        raise AssertionError(f"the child exited instead:\n{proc.communicate()[1]}")
    return proc


def kill(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
