"""A small marked module built once, and copies of its workspace to break in tests
(test_faults.py, test_security.py, test_signing.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from .proc import Workspace, last_json, probe

MOD = """
import numpy as np
import cuvil_aot as cv


@cv.optimize
def f(x: cv.f32["N"]):
    return x * 2.0 + 1.0
"""
EARLY = MOD.replace("* 2.0 + 1.0", "- 3.0")
EXPECT = (np.arange(6, dtype=np.float32) * 2.0 + 1.0).tolist()
EXPECT_EARLY = (np.arange(6, dtype=np.float32) - 3.0).tolist()


def build_origin(folder: Path, **env: str) -> Workspace:
    """mod.py and early.py, each built once into the workspace's cache."""
    ws = Workspace.create(folder)
    ws.write("mod.py", MOD)
    ws.write("early.py", EARLY)
    for module in ("mod", "early"):
        assert last_json(ws.run(probe(module), **env))["how"] == "built"
    return ws


def entry_of(ws: Workspace, module: str) -> Path:
    found = [e for e in ws.entries()
             if json.loads((e / "manifest.json").read_bytes())["module"] == module]
    assert len(found) == 1, found
    return found[0]


def fresh(origin: Workspace, tmp: Path, drop: tuple[str, ...] = ()) -> Workspace:
    """A copy of the origin workspace and cache, without the entries of ``drop``."""
    shutil.copytree(origin.root, tmp / "src")
    shutil.copytree(origin.cache, tmp / "cache", symlinks=True)
    ws = Workspace(tmp / "src", tmp / "cache")
    for module in drop:
        shutil.rmtree(entry_of(ws, module))
    return ws


def snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under ``folder``: mode and bytes (what "untouched" compares)."""
    return {str(p.relative_to(folder)): (p.stat().st_mode, p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_file()}
