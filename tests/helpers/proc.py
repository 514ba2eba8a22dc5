"""Run Python in a fresh interpreter, in a scratch directory, against the source tree.

Each ``Workspace`` has its own directory for user modules (the child's cwd) and its
own cache directory. The child imports cuvil_aot from this checkout (PYTHONPATH),
inherits no CUVIL_AOT_* setting it was not given, and writes no bytecode (so an
edited module is never shadowed by a stale .pyc written in the same second).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cuvil_aot

# Children import the cuvil_aot this test process imported: the installed one in CI,
# the checkout when PYTHONPATH points there.
REPO = Path(cuvil_aot.__file__).resolve().parents[1]


def base_env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUVIL_AOT_")}
    env.pop("PYTHONWARNINGS", None)
    env["PYTHONPATH"] = str(REPO)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["CUVIL_AOT_CACHE_DIR"] = str(cache)
    env["CUVIL_AOT_CUDA_ARCHS"] = "none"  # these tests are about the cache: CPU builds only
    return env


@dataclass
class Workspace:
    root: Path
    cache: Path
    extra_env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, tmp: Path) -> Workspace:
        (tmp / "src").mkdir(parents=True)
        return cls(tmp / "src", tmp / "cache")

    def write(self, relpath: str, text: str) -> Path:
        path = self.root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
        return path

    def edit(self, relpath: str, old: str, new: str) -> str:
        """Replace ``old`` (once) in a file; return the original text for restore()."""
        path = self.root / relpath
        original = path.read_text()
        if old not in original:
            raise AssertionError(f"{old!r} not in {relpath}")
        path.write_text(original.replace(old, new, 1))
        return original

    def env(self, **changes: str | None) -> dict[str, str]:
        env = base_env(self.cache) | self.extra_env
        for name, value in changes.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        return env

    def run(self, code: str, *args: str, timeout: float = 120, **env: str | None,
            ) -> subprocess.CompletedProcess[str]:
        """``python -c code args...`` in the workspace; never raises on a failure."""
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code), *args], cwd=self.root,
            env=self.env(**env), capture_output=True, text=True, timeout=timeout)

    def cli(self, *args: str, timeout: float = 120, **env: str | None,
            ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cuvil_aot", *args], cwd=self.root, env=self.env(**env),
            capture_output=True, text=True, timeout=timeout)

    def entries(self) -> list[Path]:
        folder = self.cache / "entries"
        return sorted(folder.iterdir()) if folder.exists() else []

    def no_compiler_path(self) -> str:
        """A PATH with no C compiler on it (and nothing else)."""
        empty = self.root.parent / "empty-bin"
        empty.mkdir(exist_ok=True)
        return str(empty)

    def copy_to(self, dest: Path) -> Workspace:
        shutil.copytree(self.root, dest)
        return Workspace(dest, self.cache, dict(self.extra_env))


def last_json(proc: subprocess.CompletedProcess[str]) -> Any:
    """The JSON document on the last line of a child's stdout (with its output on error)."""
    if proc.returncode != 0:
        raise AssertionError(f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    lines = proc.stdout.strip().splitlines()
    if not lines:
        raise AssertionError(f"child printed nothing:\n{proc.stderr}")
    return json.loads(lines[-1])


PROBE = """
import json, sys
import numpy as np
{setup}
import {module} as target
x = np.arange(6, dtype=np.float32)
out = target.{function}(x)
from cuvil_aot import cache
from cuvil_aot.load import artifacts
s = cache.stats()
o = artifacts.last_outcome(target.__name__)
print(json.dumps({{"out": np.asarray(out).tolist(), "how": o.how if o else None,
                  "kind": type(getattr(target, "{function}")).__name__,
                  "builds": s.builds, "hits": s.hits, "quarantined": s.quarantined,
                  "driver": "cuvil_aot.compiler.pipeline" in sys.modules,
                  "heavy": sorted(m for m in sys.modules if m.partition(".")[0] in
                                  ("subprocess", "setuptools", "distutils", "torch", "cupy",
                                   "pycuda", "numba", "sysconfig_probe")),
                  "frontend": "cuvil_aot.compiler.frontend" in sys.modules}}))
"""

HOOK = "import cuvil_aot; cuvil_aot.install()"

NO_SUBPROCESS = """
import sys
def _audit(event, args):
    if event in ("subprocess.Popen", "os.posix_spawn", "os.exec", "os.fork", "os.system"):
        raise RuntimeError(f"a process was started on a cache hit: {event} {args!r}")
sys.addaudithook(_audit)
"""


def probe(module: str = "mod", function: str = "f", setup: str = HOOK) -> str:
    """Child code: import ``module`` (after ``setup``), call ``function`` on a small array,
    print what happened as JSON on the last line."""
    return PROBE.format(setup=setup, module=module, function=function)
