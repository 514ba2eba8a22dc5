"""The import hook, the persistent cache wiring and the lazy first call, end to end.

Every workload runs in a fresh interpreter (tests/helpers/proc.py) with its own cache
directory, so a crash fails a test instead of the runner, and "a second process" is
really a second process.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers.proc import HOOK, NO_SUBPROCESS, Workspace, last_json, probe

MOD = """
import numpy as np
import cuvil_aot as cv
from cvdep import act

SCALE = 2.0


def unrelated(y):
    return y + 1


@cv.optimize
def f(x: cv.f32["N"]):
    # a comment
    return act(x) * SCALE + 1.0
"""

DEP = """
import numpy as np


def act(x):
    return np.maximum(x, 0.5)
"""

X = np.arange(6, dtype=np.float32)
EXPECT = (np.maximum(X, 0.5) * 2.0 + 1.0).tolist()


def new_workspace(tmp: Path) -> Workspace:
    ws = Workspace.create(tmp)
    ws.write("mod.py", MOD)
    ws.write("cvdep.py", DEP)
    return ws


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, dict]:
    """mod.py compiled once by a first import through the hook."""
    ws = new_workspace(tmp_path_factory.mktemp("built"))
    return ws, last_json(ws.run(probe()))


def test_first_import_compiles_into_the_cache(built: tuple[Workspace, dict]) -> None:
    ws, first = built
    assert first["how"] == "built" and first["builds"] == 1
    assert first["out"] == EXPECT
    assert first["kind"] == "CompiledFunction"  # bound as runtime.binding binds
    assert len(ws.entries()) == 1


def test_second_process_loads_without_compiler_or_frontend(built: tuple[Workspace, dict]) -> None:
    ws, _ = built
    # No compiler on PATH, and any process started at all fails the child.
    result = last_json(ws.run(probe(setup=NO_SUBPROCESS + HOOK), PATH=ws.no_compiler_path()))
    assert result["out"] == EXPECT
    assert result["how"] == "shortcut" and result["builds"] == 0
    assert not result["driver"] and not result["frontend"] and result["heavy"] == []


LAZY = """
import json
import numpy as np
import cuvil_aot
cuvil_aot.install()
import mod
from cuvil_aot.load import artifacts
before = artifacts.last_outcome("mod")
out = mod.f(np.arange(6, dtype=np.float32)).tolist()
print(json.dumps({"bound_at_import": before is not None, "out": out,
                  "how": artifacts.last_outcome("mod").how}))
"""


def test_lazy_mode_binds_at_the_first_call(built: tuple[Workspace, dict]) -> None:
    ws, _ = built
    result = last_json(ws.run(LAZY, CUVIL_AOT_MODE="lazy"))
    assert not result["bound_at_import"]
    assert result["out"] == EXPECT and result["how"] == "shortcut"


def test_lazy_first_call_uses_the_same_cache(built: tuple[Workspace, dict]) -> None:
    ws, _ = built
    result = last_json(ws.run(probe(setup=NO_SUBPROCESS), PATH=ws.no_compiler_path()))
    assert result["out"] == EXPECT and result["builds"] == 0
    assert result["how"] == "shortcut" and result["kind"] == "CompiledFunction"


def test_full_key_hit_when_shortcuts_are_gone(built: tuple[Workspace, dict]) -> None:
    ws, _ = built
    for path in (ws.cache / "shortcuts").iterdir():
        path.write_text("{not json")  # unreadable shortcuts are no shortcuts
    result = last_json(ws.run(probe()))
    assert result["how"] == "cached" and result["builds"] == 0 and result["out"] == EXPECT
    again = last_json(ws.run(probe()))
    assert again["how"] == "shortcut"


def test_copied_tree_hits_the_same_entry(built: tuple[Workspace, dict], tmp_path: Path) -> None:
    ws = built[0].copy_to(tmp_path / "elsewhere")
    result = last_json(ws.run(probe(), CUVIL_AOT_MODE="strict"))
    assert result["out"] == EXPECT and result["builds"] == 0


EDITS = [
    # (what, file, old, new, component that changes or None for a hit)
    ("function body", "mod.py", "* SCALE + 1.0", "* SCALE + 2.0", "source"),
    ("helper in another module", "cvdep.py", "0.5)", "0.25)", "inlined"),
    ("module constant it reads", "mod.py", "SCALE = 2.0", "SCALE = 3.0", "globals"),
    ("comment inside the function", "mod.py", "# a comment", "# another comment", None),
    ("unrelated unmarked function", "mod.py", "return y + 1", "return y + 2", None),
]


@pytest.mark.parametrize(("what", "file", "old", "new", "component"), EDITS,
                         ids=[e[0] for e in EDITS])
def test_edit_hits_or_misses(built: tuple[Workspace, dict], what: str, file: str, old: str,
                             new: str, component: str | None) -> None:
    ws, _ = built
    original = ws.edit(file, old, new)
    try:
        proc = ws.run(probe(), CUVIL_AOT_MODE="strict")  # strict: a miss fails, never builds
    finally:
        (ws.root / file).write_text(original)
    if component is None:
        result = last_json(proc)
        assert result["builds"] == 0 and result["how"] == "cached", what
        return
    assert proc.returncode != 0, f"{what}: expected a miss\n{proc.stdout}"
    assert "MissingExtension" in proc.stderr and "'mod'" in proc.stderr
    assert "CUVIL_AOT_MODE=strict" in proc.stderr
    assert f"python -m cuvil_aot build {(ws.root / 'mod.py').resolve()}" in proc.stderr
    assert f"\n      {component}: " in proc.stderr, proc.stderr  # explain names what changed


def test_strict_mode_without_any_build(tmp_path: Path) -> None:
    ws = new_workspace(tmp_path)
    proc = ws.run(probe(), CUVIL_AOT_MODE="strict")
    assert proc.returncode != 0
    assert "no compiled extension for module 'mod'" in proc.stderr
    assert "no build is recorded" in proc.stderr
    assert ws.entries() == []


def test_corrupted_entry_is_rebuilt_never_loaded(tmp_path: Path) -> None:
    ws = new_workspace(tmp_path)
    last_json(ws.run(probe()))
    (entry,) = ws.entries()
    (so,) = [p for p in entry.iterdir() if p.suffix == ".so"]
    os.chmod(so, 0o600)
    so.write_bytes(so.read_bytes()[: so.stat().st_size // 2])
    result = last_json(proc := ws.run(probe()))
    assert result["out"] == EXPECT
    assert result["how"] == "built" and result["quarantined"] == 1
    assert "unusable" in proc.stderr and "quarantine" in proc.stderr
    assert ws.cli("cache", "verify").returncode == 0


THREADS = """
import json, threading
import numpy as np
import mod
from cuvil_aot import cache
x = np.arange(6, dtype=np.float32)
barrier = threading.Barrier(32)
results = []
def call():
    barrier.wait()
    results.append(mod.f(x).tolist())
threads = [threading.Thread(target=call) for _ in range(32)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"results": results, "builds": cache.stats().builds}))
"""


def test_builds_keep_the_cache_under_its_cap(built: tuple[Workspace, dict],
                                            tmp_path: Path) -> None:
    ws = built[0].copy_to(tmp_path / "capped")
    ws.cache = tmp_path / "capped-cache"
    last_json(ws.run(probe()))
    (old,) = ws.entries()
    stale = time.time() - 3600  # long unused: evictable
    os.utime(old / "manifest.json", (stale, stale))
    ws.edit("mod.py", "+ 1.0", "+ 4.0")
    result = last_json(ws.run(probe(), CUVIL_AOT_CACHE_MAX_BYTES="1"))
    assert result["how"] == "built"
    assert [e.name for e in ws.entries()] != [old.name] and len(ws.entries()) == 1


def test_32_threads_first_call_compile_once(tmp_path: Path) -> None:
    ws = new_workspace(tmp_path)
    result = last_json(ws.run(THREADS))
    assert result["results"] == [EXPECT] * 32
    assert result["builds"] == 1


RACER = """
import json, os, sys, time
import numpy as np
import cuvil_aot
cuvil_aot.install()
ready, go = sys.argv[1], sys.argv[2]
open(os.path.join(ready, str(os.getpid())), "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
import mod
from cuvil_aot import cache
from cuvil_aot.load import artifacts
out = mod.f(np.arange(6, dtype=np.float32)).tolist()
print(json.dumps({"out": out, "builds": cache.stats().builds,
                  "how": artifacts.last_outcome("mod").how}))
"""

CC_LOGGER = """#!/bin/sh
case " $* " in *" --version "*) ;; *) echo "$PPID" >> "{log}" ;; esac
exec gcc "$@"
"""


def test_16_processes_one_compile(tmp_path: Path) -> None:
    ws = new_workspace(tmp_path)
    log = tmp_path / "cc.log"
    cc = tmp_path / "cc-logger"
    cc.write_text(CC_LOGGER.format(log=log))
    cc.chmod(0o755)
    ready, go = tmp_path / "ready", tmp_path / "go"
    ready.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(ready), str(go)], cwd=ws.root,
                              env=ws.env(CUVIL_AOT_CC=str(cc)), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(16)]
    deadline = time.monotonic() + 60
    while len(list(ready.iterdir())) < 16 and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()  # the barrier: all 16 are waiting on it
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        results.append(last_json(subprocess.CompletedProcess(proc.args, proc.returncode,
                                                             out, err)))
    assert all(r["out"] == EXPECT for r in results)
    assert sum(r["builds"] for r in results) == 1
    assert sorted(r["how"] for r in results).count("built") == 1
    assert len(ws.entries()) == 1
    compilers = set(log.read_text().split())
    assert len(compilers) == 1, "more than one process ran the compiler"
    assert os.listdir(ws.cache / "tmp") == []


FAILING_CC = """#!/bin/sh
case " $* " in *" --version "*) exec gcc --version ;; esac
echo "cc-wrapper: simulated compiler failure" >&2
exit 1
"""


def test_compile_failure_raises_with_output_and_is_not_cached(tmp_path: Path) -> None:
    ws = new_workspace(tmp_path)
    cc = tmp_path / "bad-cc"
    cc.write_text(FAILING_CC)
    cc.chmod(0o755)
    proc = ws.run(probe(), CUVIL_AOT_CC=str(cc))
    assert proc.returncode != 0
    assert "BuildError" in proc.stderr and "simulated compiler failure" in proc.stderr
    assert ws.entries() == []
    assert last_json(ws.run(probe()))["how"] == "built"


def test_user_error_points_at_the_source(tmp_path: Path) -> None:
    ws = Workspace.create(tmp_path)
    ws.write("bad.py", """
        import cuvil_aot as cv


        @cv.optimize
        def f(x: cv.f32["N"]):
            return x[x > 0]
    """)
    proc = ws.run(probe("bad"))
    assert proc.returncode != 0
    assert "CompileError" in proc.stderr and "bad.py:6:" in proc.stderr


def test_unsafe_cache_dir_falls_back_to_a_private_one(tmp_path: Path) -> None:
    ws = new_workspace(tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(stat.S_IRWXU | stat.S_IRWXG | stat.S_IRWXO)  # writable by anyone
    proc = ws.run(probe(), CUVIL_AOT_CACHE_DIR=str(shared))
    result = last_json(proc)
    assert result["out"] == EXPECT and result["how"] == "built"
    assert proc.stderr.count("using a private cache") == 1
    assert os.listdir(shared) == []


PACKAGE = {
    "pkg/__init__.py": """
        import numpy as np
        import cuvil_aot as cv


        @cv.optimize
        def g(x: cv.f32["N"]):
            return x + 10.0
    """,
    "pkg/util.py": """
        import numpy as np


        def act(x):
            return np.minimum(x, 3.0)
    """,
    "pkg/sub.py": """
        import json

        import numpy as np
        import cuvil_aot as cv

        from .util import act

        BIAS = 1.0


        @cv.optimize
        def h(x: cv.f32["N"]):
            return act(x) + BIAS


        if __name__ == "__main__":
            print(json.dumps(h(np.arange(6, dtype=np.float32)).tolist()))
    """,
}
H = (np.minimum(X, 3.0) + 1.0).tolist()

RELOAD = """
import importlib, json, pathlib
import numpy as np
import cuvil_aot
cuvil_aot.install()
import pkg.sub
from cuvil_aot import cache
from cuvil_aot.load import artifacts
x = np.arange(6, dtype=np.float32)
report = {"g": pkg.g(x).tolist(), "h": pkg.sub.h(x).tolist(),
          "how": [artifacts.last_outcome(m).how for m in ("pkg", "pkg.sub")]}
importlib.reload(pkg.sub)
report["same"] = [pkg.sub.h(x).tolist(), artifacts.last_outcome("pkg.sub").how,
                  cache.stats().builds]
path = pathlib.Path(pkg.sub.__file__)
path.write_text(path.read_text().replace("BIAS = 1.0", "BIAS = 5.0"))
importlib.reload(pkg.sub)
report["changed"] = [pkg.sub.h(x).tolist(), artifacts.last_outcome("pkg.sub").how,
                     cache.stats().builds]
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    ws = Workspace.create(tmp_path_factory.mktemp("package"))
    for path, text in PACKAGE.items():
        ws.write(path, text)
    return ws


def test_package_submodule_relative_import_and_reload(package: Workspace) -> None:
    report = last_json(package.run(RELOAD))
    assert report["g"] == (X + 10.0).tolist() and report["h"] == H
    assert report["how"] == ["built", "built"]
    assert report["same"] == [H, "loaded", 2]  # an unchanged reload compiles nothing
    assert report["changed"] == [(np.minimum(X, 3.0) + 5.0).tolist(), "built", 3]
    package.edit("pkg/sub.py", "BIAS = 5.0", "BIAS = 1.0")


def test_python_dash_m_with_the_pth_hook(package: Workspace, tmp_path: Path) -> None:
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    pth = Path(__file__).resolve().parents[1] / "cuvil_aot" / "cuvil_aot_hook.pth"
    (site_dir / pth.name).write_text(pth.read_text())
    code = (f"import site, sys, runpy; site.addsitedir({str(site_dir)!r}); "
            "from cuvil_aot.importer import CuvilFinder; "
            "assert isinstance(sys.meta_path[0], CuvilFinder); "
            "runpy.run_module('pkg.sub', run_name='__main__', alter_sys=True)")
    assert json.loads(package.run(code, CUVIL_AOT_HOOK="1").stdout) == H
    plain = subprocess.run([sys.executable, "-m", "pkg.sub"], cwd=package.root,
                           env=package.env(), capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout) == H
    off = package.run(code, CUVIL_AOT_HOOK="0")
    assert off.returncode != 0 and "AssertionError" in off.stderr
