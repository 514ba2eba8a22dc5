"""Key sensitivity end to end (issue 4, item 7): changing each key component in turn
misses, through the cheap key and the full key; the working directory,
PYTHONHASHSEED, an unrelated environment variable, file times and the clock do not;
keys are identical across three fresh interpreters.

Edits of the function body, a helper in another module and a constant it reads are
in test_importer.py::test_edit_hits_or_misses; this file covers the other
components. Components no test can change for real (the Python ABI, NumPy's ABI,
cuvil_aot's own sources, the CUDA toolchain) are changed in the child by replacing the
one function that computes them: what is proven is that the cache honours them.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.proc import HOOK, Workspace, last_json, probe

from cuvil_aot import host

MOD = """
import numpy as np
import cuvil_aot as cv

SCALE = 2.0


@cv.optimize
def f(x: cv.f32["N"]):
    return x * SCALE + 1.0
"""
EXPECT = (np.arange(6, dtype=np.float32) * 2.0 + 1.0).tolist()
VERSION_WRAPPER = """#!/bin/sh
case " $* " in *" --version "*) echo "gcc (patched) 99.1"; exit 0 ;; esac
exec gcc "$@"
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    ws = Workspace.create(tmp_path_factory.mktemp("keys"))
    ws.write("mod.py", MOD)
    assert last_json(ws.run(probe()))["how"] == "built"
    return ws


def without_shortcuts(ws: Workspace, tmp: Path) -> Workspace:
    """A copy of the cache with no shortcut: every lookup takes the full key."""
    copy = Workspace(ws.root, tmp / "cache")
    shutil.copytree(ws.cache, copy.cache)
    shutil.rmtree(copy.cache / "shortcuts")
    return copy


def assert_miss(proc: object, component: str | None) -> None:
    stderr = proc.stderr  # type: ignore[attr-defined]
    assert proc.returncode != 0, "expected a miss"  # type: ignore[attr-defined]
    assert "MissingExtension" in stderr, stderr
    if component is not None:  # explain names the component that changed
        assert f"\n      {component}: " in stderr, stderr


def patched(code: str) -> str:
    """Child code: ``code`` runs before the hook is installed and the module imported."""
    return probe(setup=f"{code}\n{HOOK}")


PATCHES = {
    # component: child code that changes what it is computed from
    "cuvil_aot": "from cuvil_aot import host; host.package_hash = lambda: '0' * 64",
    "python_abi": "from cuvil_aot import host; host.python_abi = lambda: 'cp399-x.so'",
    "numpy": "from cuvil_aot import host; host.numpy_abi = lambda: 'numpy3'",
}


@pytest.mark.parametrize("component", sorted(PATCHES))
def test_environment_component_misses(built: Workspace, component: str) -> None:
    assert_miss(built.run(patched(PATCHES[component]), CUVIL_AOT_MODE="strict"), component)


FULL_KEY_ONLY = {
    # Not in the cheap key: in real life they change only with cuvil_aot's own sources
    # (cflags) or with files the compiler stamp sees (cuda), which the cheap key covers.
    "cflags": "from cuvil_aot.compiler.toolchain import cc; cc.CFLAGS = cc.CFLAGS + ('-O2',)",
    "cuda": "from cuvil_aot.compiler import pipeline; "
            "pipeline._cuda_key = lambda o: 'nvcc 12.9 sm_90'",
}


@pytest.mark.parametrize("component", sorted(FULL_KEY_ONLY))
def test_toolchain_component_misses_on_the_full_key(built: Workspace, tmp_path: Path,
                                                    component: str) -> None:
    ws = without_shortcuts(built, tmp_path)
    assert last_json(ws.run(probe(), CUVIL_AOT_MODE="strict"))["how"] == "cached"  # control
    shutil.rmtree(ws.cache / "shortcuts")  # the control wrote one
    code = patched(FULL_KEY_ONLY[component])
    assert_miss(ws.run(code, CUVIL_AOT_MODE="strict"), component)


def test_cheap_key_covers_the_whole_compiler() -> None:
    """cflags come from the toolchain, code from codegen, the stages from the pipeline:
    every file of the compiler folder is hashed, with no hand-kept list to miss one."""
    root = Path(host.__file__).parent
    hashed = {p.relative_to(root).as_posix() for p in host.compiler_files()}
    on_disk = {p.relative_to(root).as_posix() for p in (root / "compiler").rglob("*.py")}
    assert on_disk <= hashed
    assert {"compiler/pipeline.py", "compiler/toolchain/cc.py", "options.py"} <= hashed


def test_another_compiler_or_its_flags_miss(built: Workspace, tmp_path: Path) -> None:
    ws = without_shortcuts(built, tmp_path)
    wrapper = tmp_path / "gcc-99"
    wrapper.write_text(VERSION_WRAPPER)
    wrapper.chmod(0o755)
    assert_miss(ws.run(probe(), CUVIL_AOT_MODE="strict", CUVIL_AOT_CC=str(wrapper)), "cc")
    # The same compiler with other flags builds other code (this was a stale hit).
    proc = ws.run(probe(), CUVIL_AOT_MODE="strict", CUVIL_AOT_CC="gcc -fno-inline")
    assert_miss(proc, "cc")


def test_cpu_level_misses(built: Workspace) -> None:
    level = host.cpu_level()
    if level <= 1:
        pytest.skip("this CPU has x86-64 level 1 only: nothing lower to ask for")
    proc = built.run(probe(), CUVIL_AOT_MODE="strict", CUVIL_AOT_CPU_LEVEL=str(level - 1))
    assert_miss(proc, "cpu_levels")


def test_signature_change_misses(built: Workspace, tmp_path: Path) -> None:
    ws = built.copy_to(tmp_path / "src")
    ws.edit("mod.py", '@cv.optimize\n', '@cv.optimize(signatures=["f32[N]", "f64[N]"])\n')
    ws.edit("mod.py", 'x: cv.f32["N"]', "x")
    assert_miss(ws.run(probe(), CUVIL_AOT_MODE="strict"), "signatures")


def test_precision_change_misses(tmp_path: Path) -> None:
    """Through a module constant, so that the function's source stays the same: only the
    policy's own component (and the file's bytes, in the cheap key) differ. A cache of its
    own: the first build must not land in the shared one (one entry there is asserted)."""
    ws = Workspace.create(tmp_path)
    ws.write("mod.py", MOD.replace('SCALE = 2.0\n', 'SCALE = 2.0\nPRECISION = "fp32"\n')
             .replace('@cv.optimize\n', '@cv.optimize(precision=PRECISION)\n'))
    assert last_json(ws.run(probe()))["how"] == "built"
    ws.edit("mod.py", 'PRECISION = "fp32"', 'PRECISION = "tf32"')
    assert_miss(ws.run(probe(), CUVIL_AOT_MODE="strict"), "precision")


def test_same_source_under_another_module_name_misses(built: Workspace, tmp_path: Path) -> None:
    ws = built.copy_to(tmp_path / "src")
    shutil.copy(ws.root / "mod.py", ws.root / "other.py")
    assert_miss(ws.run(probe("other"), CUVIL_AOT_MODE="strict"), None)


CLOCK = """
import time
_now, _ns = time.time, time.time_ns
time.time = lambda: _now() + 10 * 365 * 86400
time.time_ns = lambda: _ns() + 10 * 365 * 86400 * 10**9
"""


def _in_other_cwd(ws: Workspace, tmp: Path) -> dict:
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    code = probe(setup=f"import sys; sys.path.insert(0, {str(ws.root)!r})\n{HOOK}")
    env = ws.env()
    import subprocess

    proc = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env,
                          capture_output=True, text=True, timeout=120)
    return last_json(proc)  # type: ignore[no-any-return]


def test_cwd_hashseed_environment_times_and_clock_hit(built: Workspace, tmp_path: Path) -> None:
    def strict(code: str = probe(), **env: str) -> dict:
        return last_json(built.run(code, CUVIL_AOT_MODE="strict", **env))  # type: ignore[no-any-return]

    results = [
        _in_other_cwd(built, tmp_path),
        strict(PYTHONHASHSEED="0"),
        strict(PYTHONHASHSEED="4242"),
        strict(CUVIL_AOT_NUM_THREADS="1", SOME_UNRELATED_VARIABLE="x", LC_ALL="C"),
        strict(probe(setup=CLOCK + HOOK)),
    ]
    source = built.root / "mod.py"
    future = source.stat().st_mtime + 10 * 365 * 86400
    os.utime(source, (future, future))  # touched, not changed
    results.append(strict())
    for result in results:
        assert result["out"] == EXPECT and result["builds"] == 0
        assert result["how"] in ("shortcut", "cached")


KEYS = """
import json
import cuvil_aot
from cuvil_aot import knobs
from cuvil_aot.load import artifacts, builder, prekey
import mod
settings = artifacts.Settings.from_knobs(knobs.read())
print(json.dumps([builder.full_key(mod, settings).digest,
                  prekey.components(mod, (), settings.cuda_request)]))
"""


def test_keys_are_identical_across_three_fresh_interpreters(built: Workspace) -> None:
    runs = [last_json(built.run(KEYS, PYTHONHASHSEED=seed)) for seed in ("1", "2", "random")]
    assert runs[0] == runs[1] == runs[2]
    assert [e.name for e in built.entries()] == [runs[0][0]]
    manifest = json.loads((built.entries()[0] / "manifest.json").read_bytes())
    assert manifest["key"] == runs[0][0]
