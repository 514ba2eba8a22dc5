"""The command line works from a checkout of cuvil_aot itself (its repository root, where
the ``--help`` examples run), whose source tree has no built runtime."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cuvil_aot

INSTALLED = Path(cuvil_aot.__file__).resolve().parent


@pytest.mark.skipif(not any((INSTALLED / "runtime").glob("native*")),
                    reason="no built runtime to defer to")
def test_show_runs_from_a_checkout_without_a_built_runtime(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    shutil.copytree(INSTALLED, checkout / "cuvil_aot",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.json"))
    (checkout / "examples").mkdir()
    (checkout / "examples" / "models.py").write_text(
        "import numpy as np\nimport cuvil_aot as cv\n\n\n@cv.optimize\n"
        "def softmax(x: cv.f32['B', 'N']):\n    e = np.exp(x - x.max(axis=1, keepdims=True))\n"
        "    return e / e.sum(axis=1, keepdims=True)\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(INSTALLED.parent),
           "CUVIL_AOT_CUDA_ARCHS": "none", "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "cuvil_aot", "show", "examples.models:softmax"],
                          cwd=checkout, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "=== examples.models.softmax" in proc.stdout and "after fusion" in proc.stdout
    assert "generated kernels.c" in proc.stdout  # the C needs the runtime's CPU level
