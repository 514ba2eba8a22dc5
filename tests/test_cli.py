"""``python -m cuvil_aot``: every command end to end, in fresh interpreters."""

from __future__ import annotations

import json
import os
import shutil
import site
import time
from pathlib import Path

import numpy as np
import pytest
from helpers.proc import HOOK, NO_SUBPROCESS, Workspace, last_json, probe

from cuvil_aot import cli

MODELS_A = """
import numpy as np
import cuvil_aot as cv


@cv.optimize
def f(x: cv.f32["N"]):
    return np.exp(-x) * 2.0


@cv.optimize
def centered(x: cv.f32["B", "N"]):
    s = x.sum(axis=1)
    return x / s[:, None] + s.max()
"""

MODELS_B = """
import numpy as np
import cuvil_aot as cv

OFFSET = 1.0


@cv.optimize
def f(x: cv.f32["N"]):
    return x + OFFSET
"""

BROKEN = """
import cuvil_aot as cv


@cv.optimize
def f(x: cv.f32["N"]):
    return x.nonexistent_method()
"""

SCRIPT = """
import json, sys
import numpy as np
import models_a
from cuvil_aot.load import artifacts
finder = type(sys.meta_path[0]).__name__
print(json.dumps({"argv": sys.argv[1:], "finder": finder,
                  "how": artifacts.last_outcome("models_a").how,
                  "out": models_a.f(np.ones(3, np.float32)).tolist()}))
"""

X = np.arange(6, dtype=np.float32)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    tmp = tmp_path_factory.mktemp("cli")
    ws = Workspace.create(tmp)
    ws.write("models_a.py", MODELS_A)
    ws.write("models_b.py", MODELS_B)
    ws.write("script.py", SCRIPT)
    ws.write("broken/broken.py", BROKEN)
    return ws


def check(proc: object, code: int = 0) -> str:
    rc, out, err = proc.returncode, proc.stdout, proc.stderr  # type: ignore[attr-defined]
    assert rc == code, f"exit {rc}, expected {code}\n{out}\n{err}"
    return str(out) + str(err)


@pytest.mark.parametrize("argv", [[], ["build"], ["cache"], ["show"], ["run"], ["hook"],
                                  ["cache", "prune"], ["cache", "explain"]])
def test_help_has_examples(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*argv, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "usage: python -m cuvil_aot" in out
    if argv[-1:] not in (["prune"], ["explain"]):
        assert "examples:" in out


def test_build_and_cache_commands(ws: Workspace) -> None:
    out = check(ws.cli("build", "models_a.py", "models_b", "-j", "2"))
    assert "[1/2]" in out and "[2/2]" in out and out.count(": built in") == 2
    out = check(ws.cli("build", "models_a.py"))
    assert "models_a: shortcut" in out or "models_a: cached" in out
    listing = check(ws.cli("cache", "list"))
    assert "models_a" in listing and "models_b" in listing and "KEY" in listing
    assert "entries:         2" in check(ws.cli("cache", "info"))
    assert ", 0 problems" in check(ws.cli("cache", "verify"))
    result = last_json(ws.run(probe("models_b", setup=NO_SUBPROCESS + HOOK),
                              PATH=ws.no_compiler_path()))
    assert result["out"] == (X + 1.0).tolist() and result["builds"] == 0


def test_verify_prune_clear(ws: Workspace) -> None:
    check(ws.cli("build", "models_a.py", "models_b.py"))
    entry = ws.entries()[0]
    (so,) = [p for p in entry.iterdir() if p.suffix == ".so"]
    os.chmod(so, 0o600)
    with open(so, "r+b") as f:
        f.seek(100)
        f.write(b"\xff\xfe")
    assert "BAD" in check(ws.cli("cache", "verify"), 1)
    old = time.time() - 3600  # older than the eviction grace period
    for e in ws.entries():
        os.utime(e / "manifest.json", (old, old))
    assert "removed 2 entries" in check(ws.cli("cache", "prune", "--max-bytes", "0"))
    check(ws.cli("build", "models_a.py"))
    assert "removed 1 entries" in check(ws.cli("cache", "clear"))
    assert "no entries" in check(ws.cli("cache", "list"))


def test_build_error_exits_nonzero_with_diagnostics(ws: Workspace) -> None:
    out = check(ws.cli("build", "broken", "models_b.py"), 1)
    assert "broken.py:6:" in out and "error" in out


def test_explain_names_the_changed_component(ws: Workspace) -> None:
    check(ws.cli("build", "models_b.py"))
    original = ws.edit("models_b.py", "OFFSET = 1.0", "OFFSET = 2.0")
    try:
        out = check(ws.cli("cache", "explain", "models_b"))
        assert "is NOT in the cache" in out and "globals:" in out and "source:" not in out
        check(ws.cli("build", "models_b.py"))
        out = check(ws.cli("cache", "explain", "models_b.py"))
        assert "is in the cache" in out and "nothing to explain" in out
    finally:
        (ws.root / "models_b.py").write_text(original)


def test_inplace_prebuilt_is_preferred_and_checked(ws: Workspace, tmp_path: Path) -> None:
    out = check(ws.cli("build", "models_a.py", "--inplace"))
    assert "models_a.cuvil_aot.json" in out
    manifest = json.loads((ws.root / "models_a.cuvil_aot.json").read_text())
    assert (ws.root / manifest["file"]).exists() and manifest["module"] == "models_a"
    empty_cache = str(tmp_path / "empty-cache")
    result = last_json(ws.run(probe("models_a", setup=NO_SUBPROCESS + HOOK),
                              PATH=ws.no_compiler_path(), CUVIL_AOT_CACHE_DIR=empty_cache))
    assert result["how"] == "prebuilt"
    np.testing.assert_allclose(result["out"], np.exp(-X) * 2.0, rtol=1e-6)
    original = ws.edit("models_a.py", "* 2.0", "* 3.0")
    try:
        proc = ws.run(probe("models_a"), CUVIL_AOT_CACHE_DIR=empty_cache)
    finally:
        (ws.root / "models_a.py").write_text(original)
    assert last_json(proc)["how"] == "built"
    assert "PrebuiltWarning" in proc.stderr and "module_source" in proc.stderr
    for name in ("models_a.cuvil_aot.json", manifest["file"]):
        (ws.root / name).unlink()


def test_show_ir_fusion_and_c(ws: Workspace) -> None:
    out = check(ws.cli("show", "models_a.py:centered"))
    for part in ("=== models_a.centered", "--- after frontend ---", "--- after fusion ---",
                 "kernel 0:", "refused fusions ---", "cannot run inside the kernel",
                 "generated kernels.c", "PyInit__cvk_"):
        assert part in out, part
    assert "=== models_a.f " not in out and ".cu" not in out  # CPU-only workspace
    if shutil.which("nvcc"):
        gpu = check(ws.cli("show", "models_a.py:f", CUVIL_AOT_CUDA_ARCHS="sm_90"))
        assert "generated kernels_f0.cu" in gpu and "__global__" in gpu
    assert "no marked function 'nope'" in check(ws.cli("show", "models_a:nope"), 1)


def test_run_script_and_module_with_the_hook(ws: Workspace) -> None:
    result = last_json(ws.cli("run", "script.py", "one", "--two"))
    assert result["argv"] == ["one", "--two"] and result["finder"] == "CuvilFinder"
    assert result["how"] in ("built", "cached", "shortcut")
    np.testing.assert_allclose(result["out"], np.exp(-np.ones(3)) * 2.0, rtol=1e-6)
    result = last_json(ws.cli("run", "-m", "script", "three"))
    assert result["argv"] == ["three"] and result["finder"] == "CuvilFinder"


@pytest.mark.skipif(not site.ENABLE_USER_SITE,
                    reason="user site-packages are disabled here (a virtual environment)")
def test_hook_enable_status_disable(ws: Workspace, tmp_path: Path) -> None:
    env = {"PYTHONUSERBASE": str(tmp_path / "userbase")}
    assert "wrote" in check(ws.cli("hook", "enable", "--user", **env))
    assert ": present" in check(ws.cli("hook", "status", "--user", **env))
    code = "import sys; print([type(f).__name__ for f in sys.meta_path])"
    assert "CuvilFinder" in ws.run(code, CUVIL_AOT_HOOK="1", **env).stdout
    assert "CuvilFinder" not in check(ws.run(code, **env))
    assert "cuvil_aot" not in check(ws.run("import sys; print(sorted(sys.modules))", **env))
    check(ws.cli("hook", "disable", "--user", **env))
    assert ": absent" in check(ws.cli("hook", "status", "--user", **env))
