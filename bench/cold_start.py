"""Cold start: a fresh process that imports a cached marked module and makes its first
correct call, against ``python -c "import numpy"``; plus the import hook's overhead on
unmarked imports and the first compile of a one-function module.

    python bench/cold_start.py [--runs 21]

Each number is the median wall time of fresh interpreters, run interleaved so load
on the machine hits every variant alike. "over numpy" subtracts the numpy baseline
(DESIGN.md target: within 50 ms on a cache hit). Numba and torch anchors run only
where those packages are installed.

Measured 2026-11-30 09:15 UTC on the 2-core Zen 5 VM (Python 3.11, NumPy 2.4, gcc 12,
CPU-only builds), quiet, --runs 11:

    python -c "import numpy"                   69.6 ms wall
    hook + cached module + first call          +19.9 ms wall, +40.5 ms CPU over numpy
    prebuilt next to the module (no cc)        +20.6 ms wall, +37.9 ms CPU over numpy
    lazy first call, no hook                   +19.5 ms wall, +37.5 ms CPU
    first compile, one-function module         0.55 s for the whole process
    hook overhead, import numpy + stdlib       -5.4 % wall (noise); the hook's own reading
                                               and scanning of sources: 3.0 % of the import
                                               time; +18.5 us per find_spec of a numpy module
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from helpers.proc import base_env  # noqa: E402

MODULE = """
import numpy as np
import cuvil_aot as cv


@cv.optimize
def scale_shift(x: cv.f32["N"]):
    return x * 2.0 + 1.0
"""

CALL = """
import numpy as np
{setup}
import cold_mod
x = np.arange(8, dtype=np.float32)
assert np.array_equal(cold_mod.scale_shift(x), x * 2.0 + 1.0)
"""

STDLIB = [
    "argparse", "ast", "asyncio", "base64", "bisect", "calendar", "cmd", "codecs",
    "collections", "colorsys", "compileall", "concurrent.futures", "configparser",
    "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal", "difflib", "dis",
    "email.mime.text", "email.parser", "enum", "filecmp", "fnmatch", "fractions", "ftplib",
    "getopt", "gettext", "glob", "gzip", "hashlib", "heapq", "hmac", "html.parser",
    "http.client", "http.cookies", "imaplib", "inspect", "ipaddress", "json",
    "logging.handlers", "lzma", "mailbox", "mimetypes", "netrc", "numbers", "optparse",
    "pathlib", "pickletools", "pkgutil", "plistlib", "poplib", "pprint", "queue", "quopri",
    "random", "sched", "secrets", "selectors", "shelve", "smtplib", "socketserver",
    "statistics", "string", "tarfile", "textwrap", "tomllib", "unittest", "uuid", "wave",
    "xml.dom.minidom", "xml.etree.ElementTree", "xmlrpc.client", "zipfile",
]

OVERHEAD = """
import sys, time, importlib
import cuvil_aot
scanned = [0.0]
if {install}:
    finder = cuvil_aot.install()
    may_be_marked = finder._may_be_marked
    def timed(origin):
        start = time.perf_counter()
        try:
            return may_be_marked(origin)
        finally:
            scanned[0] += time.perf_counter() - start
    finder._may_be_marked = timed
before = len(sys.modules)
start = time.perf_counter()
for name in {names!r}:
    importlib.import_module(name)
print(time.perf_counter() - start, len(sys.modules) - before, scanned[0])
"""


CPU_TIMES: dict[str, list[float]] = {}
"""CPU seconds (user + system) of each child, by variant: less blurred than wall time
when the machine is shared, since waiting for a core costs none."""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(code: str, env: dict[str, str], cwd: Path, variant: str = "") -> float:
    start, cpu = time.perf_counter(), _children_cpu()
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{code}\n{proc.stderr}")
    CPU_TIMES.setdefault(variant, []).append(_children_cpu() - cpu)
    return elapsed


def interleaved(variants: dict[str, tuple[str, dict[str, str], Path]],
                runs: int) -> dict[str, float]:
    """Median wall time of each variant, the variants taking turns run after run."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(runs):
        for name, (code, env, cwd) in variants.items():
            times[name].append(run(code, env, cwd, name))
    return {name: statistics.median(values) for name, values in times.items()}


def first_compile(env: dict[str, str], cwd: Path, runs: int) -> float:
    times = []
    for i in range(runs):
        fresh = dict(env, CUVIL_AOT_CACHE_DIR=str(cwd.parent / f"fresh-cache-{i}"))
        times.append(run(CALL.format(setup="import cuvil_aot; cuvil_aot.install()"), fresh, cwd))
    return statistics.median(times)


FIND_SPEC = """
import sys, time
from importlib.machinery import PathFinder, SourceFileLoader
import numpy
import cuvil_aot
finder = cuvil_aot.install()
found = [(name, sys.modules[name.rpartition(".")[0]].__path__)
         for name, mod in sorted(sys.modules.items())
         if name.startswith("numpy.") and type(getattr(mod, "__loader__", None))
         is SourceFileLoader]
def clock(find):
    start = time.perf_counter()
    for _ in range(20):
        for name, path in found:
            find(name, path)
    return (time.perf_counter() - start) / (20 * len(found))
plain = min(clock(PathFinder.find_spec) for _ in range(5))
hooked = min(clock(finder.find_spec) for _ in range(5))
print(plain, hooked, len(found))
"""


def find_spec_cost(env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Seconds per find_spec of NumPy's own submodules: the path finder alone, and through
    the hook (which also reads each source file and scans its bytes). The cost per
    import without the noise of whole processes."""
    proc = subprocess.run([sys.executable, "-c", FIND_SPEC], env=env, cwd=cwd,
                          capture_output=True, text=True, check=True)
    plain, hooked, _ = proc.stdout.split()
    return float(plain), float(hooked)


def hook_overhead(env: dict[str, str], cwd: Path, runs: int) -> dict[str, float]:
    """Importing numpy and the STDLIB list in fresh processes, hook off and on (medians):
    seconds, modules imported, and the seconds the hook spent reading and scanning
    sources (measured inside the process, so machine load hardly blurs it)."""
    rows: dict[str, list[list[float]]] = {"off": [], "on": []}
    for _ in range(runs):
        for state in rows:
            code = OVERHEAD.format(install=state == "on", names=["numpy", *STDLIB])
            proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd,
                                  capture_output=True, text=True, check=True)
            rows[state].append([float(v) for v in proc.stdout.split()])
    return {
        "import_off_s": statistics.median(r[0] for r in rows["off"]),
        "import_on_s": statistics.median(r[0] for r in rows["on"]),
        "modules": max(r[1] for r in rows["on"]),
        "scan_s": statistics.median(r[2] for r in rows["on"]),
    }


NUMBA_MOD = """
import numba


@numba.njit(cache=True)
def scale_shift(x):
    return x * 2.0 + 1.0
"""

NUMBA_CALL = """
import numpy as np
import numba_mod
x = np.arange(8, dtype=np.float32)
assert np.array_equal(numba_mod.scale_shift(x), x * 2.0 + 1.0)
"""

TORCH_CALL = """
import torch


@torch.compile
def scale_shift(x):
    return x * 2.0 + 1.0


x = torch.arange(8, dtype=torch.float32)
assert torch.equal(scale_shift(x), x * 2.0 + 1.0)
"""


def _importable(name: str, env: dict[str, str]) -> bool:
    probe = subprocess.run([sys.executable, "-c", f"import {name}"], env=env,
                           capture_output=True)
    return probe.returncode == 0


def anchors(cwd: Path, env: dict[str, str], runs: int) -> dict[str, float | str]:
    """Numba cache=True and torch.compile: first process (empty cache) and a later one."""
    found: dict[str, float | str] = {}
    if _importable("numba", env):
        (cwd / "numba_mod.py").write_text(textwrap.dedent(NUMBA_MOD))
        numba_env = dict(env, NUMBA_CACHE_DIR=str(cwd.parent / "numba-cache"))
        found["numba cache=True, first process"] = run(NUMBA_CALL, numba_env, cwd)
        found["numba cache=True, cached"] = statistics.median(
            run(NUMBA_CALL, numba_env, cwd) for _ in range(runs))
    else:
        found["numba"] = "skipped: not installed"
    if _importable("torch", env):
        torch_env = dict(env, TORCHINDUCTOR_CACHE_DIR=str(cwd.parent / "inductor-cache"))
        found["torch.compile, first process"] = run(TORCH_CALL, torch_env, cwd)
        found["torch.compile, second process"] = statistics.median(
            run(TORCH_CALL, torch_env, cwd) for _ in range(max(1, runs // 5)))
    else:
        found["torch"] = "skipped: not installed"
    return found


def snapshot(dest: Path) -> Path:
    """A copy of the package and its headers: edits to the checkout while the benchmark
    runs must not change the cache key under it."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "cuvil_aot", dest / "cuvil_aot", ignore=ignore)
    shutil.copytree(REPO / "native" / "include", dest / "native" / "include")
    return dest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--anchors", action="store_true",
                        help="also time Numba (cache=True) and torch.compile if installed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cuvil_aot-bench-") as tmp:
        root = Path(tmp) / "src"
        root.mkdir()
        (root / "cold_mod.py").write_text(textwrap.dedent(MODULE))
        env = base_env(Path(tmp) / "cache")
        env["PYTHONPATH"] = str(snapshot(Path(tmp) / "snap"))
        del env["PYTHONDONTWRITEBYTECODE"]  # an installed package has its .pyc files
        hook = CALL.format(setup="import cuvil_aot; cuvil_aot.install()")
        run(hook, env, root)  # fill the cache
        prebuilt_env = dict(env, CUVIL_AOT_CACHE_DIR=str(Path(tmp) / "empty"),
                            PATH=str(Path(tmp)))
        subprocess.run([sys.executable, "-m", "cuvil_aot", "build", "cold_mod.py", "--inplace"],
                       env=env, cwd=root, check=True, capture_output=True)
        prebuilt_root = Path(tmp) / "prebuilt"
        os.rename(root, prebuilt_root)
        root.mkdir()
        (root / "cold_mod.py").write_text(textwrap.dedent(MODULE))
        medians = interleaved({
            "numpy": ("import numpy", env, root),
            "hook": (hook, env, root),
            "prebuilt": (hook, prebuilt_env, prebuilt_root),
            "lazy": (CALL.format(setup=""), env, root),
        }, args.runs)
        compile_s = first_compile(env, root, max(3, args.runs // 5))
        medians |= hook_overhead(env, root, args.runs)
        medians["find_spec_plain"], medians["find_spec_hooked"] = find_spec_cost(env, root)
        extra = anchors(root, env, max(3, args.runs // 3)) if args.anchors else {}
        report(medians, compile_s, extra)


def report(medians: dict[str, float], compile_s: float, extra: dict[str, float | str]) -> None:
    base = medians["numpy"]
    print(f"python -c 'import numpy'                        {base * 1e3:7.1f} ms")
    labels = {"hook": "hook + cached module + first call",
              "prebuilt": "prebuilt next to the module (no cache, no cc)",
              "lazy": "lazy first call, no hook"}
    cpu = {name: statistics.median(CPU_TIMES[name]) for name in ("numpy", *labels)}
    for name, label in labels.items():
        print(f"{label:<47} {medians[name] * 1e3:7.1f} ms  (+{(medians[name] - base) * 1e3:.1f}"
              f" ms over numpy; CPU time +{(cpu[name] - cpu['numpy']) * 1e3:.1f} ms)")
    print(f"{'first compile, one-function module (process)':<47} {compile_s:7.2f} s")
    off, on, modules = medians["import_off_s"], medians["import_on_s"], medians["modules"]
    label = f"import numpy + stdlib ({modules:.0f} modules), hook off -> on"
    print(f"{label:<47} {off * 1e3:7.1f} -> {on * 1e3:.1f} ms  ({(on / off - 1) * 100:+.1f} %,"
          " whole processes: noisy)")
    scan = medians["scan_s"]
    print(f"{'  of which the hook read and scanned sources':<47} {scan * 1e3:7.1f} ms  "
          f"({scan / off * 100:.1f} % of the import time)")
    plain, hooked = medians["find_spec_plain"], medians["find_spec_hooked"]
    print(f"{'find_spec of a numpy submodule, hook off -> on':<47} {plain * 1e6:7.1f} -> "
          f"{hooked * 1e6:.1f} us  (+{(hooked - plain) * 1e6:.1f} us, "
          f"{(hooked - plain) * modules / off * 100:.1f} % of the import time above)")
    for name, value in extra.items():
        shown = f"{value * 1e3:7.1f} ms" if isinstance(value, float) else value
        print(f"{name:<47} {shown}")
    out = REPO / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "cold_start.json").write_text(json.dumps(
        {"medians_s": medians, "first_compile_s": compile_s, "anchors": extra}, indent=1))


if __name__ == "__main__":
    main()
