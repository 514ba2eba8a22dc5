"""Build the sample projects of tests/projects with real frontends, install the wheels
into fresh virtual environments, and run code there.

Builds run without build isolation (no network): the backends come from this test
environment, and ``cuvil_aot`` from wherever this process imports it (PYTHONPATH).
A fresh venv sees cuvil_aot and NumPy through a .pth file, nothing else of ours.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy

import cuvil_aot

ROOT = Path(cuvil_aot.__file__).resolve().parents[1]
"""Where this process imports cuvil_aot from: the checkout, or site-packages in CI."""
REPO = Path(__file__).resolve().parents[2]
PROJECTS = REPO / "tests" / "projects"
SRC_LAYOUT = {"hatchling"}
EPOCH = "1700000000"


def clean_env(cache: Path, **changes: str) -> dict[str, str]:
    """This environment less every CUVIL_AOT_* setting, with ``cache`` as the compile
    cache, CPU-only builds unless asked otherwise, and SOURCE_DATE_EPOCH set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUVIL_AOT_")}
    env.pop("PYTHONWARNINGS", None)
    env.update(PYTHONPATH=str(ROOT), CUVIL_AOT_CACHE_DIR=str(cache), SOURCE_DATE_EPOCH=EPOCH,
               CUVIL_AOT_BUILD_CUDA="off", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
               PYTHONDONTWRITEBYTECODE="1")
    env.update(changes)
    return env


def make_project(dest: Path, backend: str) -> Path:
    """A copy of tests/projects/<backend> with the sample package in it (src/ or not)."""
    shutil.copytree(PROJECTS / backend, dest)
    package_root = dest / "src" if backend in SRC_LAYOUT else dest
    shutil.copytree(PROJECTS / "package" / "cvsample", package_root / "cvsample")
    return dest


def run(cmd: list[str], env: dict[str, str], cwd: Path | None = None,
        timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def build_command(frontend: str, project: Path, out: Path, config: list[str]) -> list[str]:
    options = [f"-C{c}" for c in config]
    if frontend == "pip":
        return [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                "-w", str(out), *options, str(project)]
    return [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out),
            *options, str(project)]


def build_wheel(frontend: str, project: Path, out: Path, env: dict[str, str],
                config: list[str] | None = None) -> Path:
    proc = run(build_command(frontend, project, out, config or []), env, cwd=project.parent)
    assert proc.returncode == 0, f"build failed:\n{proc.stdout}\n{proc.stderr}"
    wheels = sorted(out.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def site_packages(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / \
        "site-packages"


def fresh_venv(venv: Path, with_cuvil_aot: bool = True, build_tools: bool = False) -> Path:
    """A venv without pip that sees NumPy, cuvil_aot (unless a wheel is to bring it) and,
    for editable installs (built by the venv's Python), this environment's backends."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    deps = venv / "test-deps"  # links to single packages: pip sees no distribution there
    deps.mkdir()
    numpy_dir = Path(numpy.__file__).resolve().parent
    packages = [numpy_dir, *numpy_dir.parent.glob("numpy.libs")]
    packages += [ROOT / "cuvil_aot"] if with_cuvil_aot else []
    for package in packages:
        (deps / package.name).symlink_to(package)
    paths = [str(deps)] + ([str(numpy_dir.parent)] if build_tools else [])
    # "_00": read before any other .pth (an editable install's imports cuvil_aot)
    (site_packages(venv) / "_00_cuvil_aot_test_deps.pth").write_text("\n".join(paths) + "\n")
    return venv / "bin" / "python"


def pip_install(python: Path, env: dict[str, str], *args: str) -> None:
    """pip installs into the venv; without PYTHONPATH, where it could see this
    environment's own cuvil-aot as already installed."""
    env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    proc = run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                "--no-index", "--no-build-isolation", *args], env)
    assert proc.returncode == 0, f"pip install failed:\n{proc.stdout}\n{proc.stderr}"


def empty_bin(tmp: Path) -> str:
    """A PATH that holds no C compiler (and nothing else)."""
    folder = tmp / "empty-bin"
    folder.mkdir(exist_ok=True)
    return str(folder)


def runtime_env(cache: Path, path: str, **changes: str) -> dict[str, str]:
    """For code run in a venv: no PYTHONPATH (the venv's own site-packages only)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CUVIL_AOT_", "PYTHON"))}
    env.update(PATH=path, CUVIL_AOT_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1")
    env.update(changes)
    return env


NO_PROCESSES = """
import sys
def _audit(event, args):
    if event in ("subprocess.Popen", "os.posix_spawn", "os.exec", "os.fork", "os.system"):
        raise RuntimeError(f"a process was started: {event} {args!r}")
sys.addaudithook(_audit)
"""

PROBE = """
import json, warnings
warnings.simplefilter("error")  # a prebuilt ignored (PrebuiltWarning) fails the probe
import numpy as np
import cuvil_aot
import cvsample.ops as ops
import cvsample.sub.extra as extra
rng = np.random.default_rng(0)
def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)
cases = [(ops.matmul_relu, (f32(5, 64), f32(64, 32), f32(32))), (ops.softmax, (f32(4, 9),)),
         (ops.softmax, (f32(4, 9).astype(np.float64),)),
         (ops.layer_norm, (f32(3, 16), f32(16), f32(16))), (ops.gated, (f32(33), f32(33))),
         (extra.gelu, (f32(40),))]
errors = []
for fn, args in cases:
    got = fn(*args)
    ref = fn.py_func(*[a.astype(np.float64) for a in args])
    errors.append(float(np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1.0))))
info = cuvil_aot.info()
print(json.dumps({"errors": errors, "modules": info["modules"], "cpu_level": info["cpu_level"],
                  "ops_file": ops.__file__, "scale": ops.SCALE}))
"""


def probe(python: Path, env: dict[str, str], cwd: Path, compiles: bool = False) -> dict[str, Any]:
    """Run PROBE with ``python``, failing if it starts any process unless it ``compiles``;
    its JSON report (its output on a failure)."""
    code = PROBE if compiles else NO_PROCESSES + PROBE
    proc = run([python, "-c", code], env, cwd=cwd, timeout=300)
    assert proc.returncode == 0, f"probe failed:\n{proc.stdout}\n{proc.stderr}"
    report: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return report


def wheel_files(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def cache_entries(cache: Path) -> list[Path]:
    folder = cache / "entries"
    return sorted(folder.iterdir()) if folder.exists() else []
