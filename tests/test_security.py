"""Security of the cache path (issue 4, items 12, 13 and 15), end to end.

Every case plants a library whose constructor writes a marker file (helpers/plant.py)
where the import would find it, then imports the module in a child interpreter: the
marker must never appear, the planted bytes must never reach ``_imp.create_dynamic``,
the refusal is warned about, and the call is still correct. test_faults.py shows the
marker does appear when such an entry is trusted (the positive control).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import plant as pl
from helpers.entries import EXPECT, build_origin, entry_of, fresh
from helpers.proc import HOOK, Workspace, last_json, probe

import cuvil_aot

LOGGED = probe(setup=pl.DLOPEN_LOG + HOOK)


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return build_origin(tmp_path_factory.mktemp("security"))


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    if pl.compiler() is None:
        pytest.skip("no C compiler to build the planted library")
    return pl.build_plant(tmp_path_factory.mktemp("plant"))


def _chown_tree(path: Path, uid: int) -> None:
    for p in [path, *path.rglob("*")]:
        os.chown(p, uid, uid, follow_symlinks=False)


def _symlink_elsewhere(path: Path) -> None:
    moved = path.with_name(path.name + ".real")
    path.rename(moved)
    path.symlink_to(moved)


def _other_user() -> int:
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    return 65534  # nobody


Hostile = Callable[[Workspace, Path], None]
ROOT_CASES: dict[str, Hostile] = {
    "root owned by another user": lambda ws, e: _chown_tree(ws.cache, _other_user()),
    "root writable by its group": lambda ws, e: ws.cache.chmod(0o770),
    "root writable by others": lambda ws, e: ws.cache.chmod(0o702),
    "root reached through a symlink": lambda ws, e: _symlink_elsewhere(ws.cache),
    "entries/ writable by others": lambda ws, e: (ws.cache / "entries").chmod(0o777),
}
ENTRY_CASES: dict[str, Hostile] = {
    "entry owned by another user": lambda ws, e: _chown_tree(e, _other_user()),
    "entry writable by its group": lambda ws, e: e.chmod(0o770),
    "extension writable by others": lambda ws, e: pl.extension_path(e).chmod(0o606),
    "entry is a symlink": lambda ws, e: _symlink_elsewhere(e),
    "extension is a symlink": lambda ws, e: _symlink_elsewhere(pl.extension_path(e)),
}


def run_logged(ws: Workspace, tmp: Path, **env: str) -> tuple[dict, str, Path, Path]:
    marker, log = tmp / "marker", tmp / "dlopen.log"
    proc = ws.run(LOGGED, **{pl.MARKER_ENV: str(marker), pl.LOG_ENV: str(log)}, **env)
    return last_json(proc), proc.stderr, marker, log


def assert_never_loaded(planted: bytes, marker: Path, log: Path) -> None:
    assert not marker.exists(), "the planted library was loaded"
    assert pl.sha256(planted) not in log.read_text().split()


@pytest.mark.parametrize("case", ROOT_CASES)
def test_unsafe_cache_root_is_refused_and_a_private_one_used(
        origin: Workspace, planted: bytes, tmp_path: Path, case: str) -> None:
    ws = fresh(origin, tmp_path)
    entry = entry_of(ws, "mod")
    pl.plant(entry, planted)  # well formed: trusted, it would be loaded
    ROOT_CASES[case](ws, entry)
    result, stderr, marker, log = run_logged(ws, tmp_path)
    assert result["out"] == EXPECT and result["how"] == "built"
    assert_never_loaded(planted, marker, log)
    assert stderr.count("using a private cache for this process") == 1, stderr
    assert "refusing cache directory" in stderr


@pytest.mark.parametrize("case", ENTRY_CASES)
def test_unsafe_entry_is_refused_and_rebuilt(
        origin: Workspace, planted: bytes, tmp_path: Path, case: str) -> None:
    ws = fresh(origin, tmp_path)
    entry = entry_of(ws, "mod")
    pl.plant(entry, planted)
    ENTRY_CASES[case](ws, entry)
    result, stderr, marker, log = run_logged(ws, tmp_path)
    assert result["out"] == EXPECT and result["how"] == "built"
    assert_never_loaded(planted, marker, log)
    assert f"cuvil_aot cache entry {entry} is unusable" in stderr, stderr


def test_extension_that_does_not_match_its_manifest_is_not_loaded(
        origin: Workspace, planted: bytes, tmp_path: Path) -> None:
    ws = fresh(origin, tmp_path)
    entry = entry_of(ws, "mod")
    pl.replace_bytes(entry, planted)  # the manifest still names the real extension's hash
    result, stderr, marker, log = run_logged(ws, tmp_path)
    assert result["out"] == EXPECT and result["how"] == "built" and result["quarantined"] == 1
    assert_never_loaded(planted, marker, log)
    assert "is unusable" in stderr and "the manifest says" in stderr


SWAP = """
import os
from cuvil_aot.runtime import extension as _extension
_real_load = _extension.load
def _swap_then_load(name, origin, path):
    # Between the hash check and dlopen, another process replaces the file.
    tmp = path.with_name("swapped")
    with open(os.environ["CV_PLANT_FILE"], "rb") as src, open(tmp, "wb") as dst:
        dst.write(src.read())
    os.rename(tmp, path)
    return _real_load(name, origin, path)
_extension.load = _swap_then_load
"""


def test_the_bytes_verified_are_the_bytes_loaded(
        origin: Workspace, planted: bytes, tmp_path: Path) -> None:
    ws = fresh(origin, tmp_path)
    plant_file = tmp_path / "plant.so"
    plant_file.write_bytes(planted)
    marker, log = tmp_path / "marker", tmp_path / "dlopen.log"
    code = probe(setup=pl.DLOPEN_LOG + SWAP + HOOK)
    proc = ws.run(code, CV_PLANT_FILE=str(plant_file),
                  **{pl.MARKER_ENV: str(marker), pl.LOG_ENV: str(log)})
    result = last_json(proc)
    assert result["out"] == EXPECT and result["builds"] == 0  # the verified bytes ran
    assert_never_loaded(planted, marker, log)
    assert pl.extension_path(entry_of(ws, "mod")).read_bytes() == planted  # swap happened


# ---- 15. no pickle, marshal or eval anywhere in the cache path ------------------------------

PACKAGE = Path(cuvil_aot.__file__).resolve().parent
CACHE_PATH = ["__init__.py", "api.py", "errors.py", "knobs.py", "host.py", "importer.py",
              "marks.py", "digest.py", "options.py", "_version.py", "cli/verify.py",
              *(f"{part}/{p.name}" for part in ("load", "runtime")
                for p in sorted((Path(cuvil_aot.__file__).parent / part).glob("*.py")))]
"""Modules outside cuvil_aot/cache/ that a lookup, a load or ``verify`` runs (cache/ itself:
test_cache_store.py::test_cache_code_never_uses_pickle_marshal_eval_or_exec)."""
BANNED_MODULES = {"pickle", "_pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle"}
BANNED_CALLS = {"eval", "exec", "__import__", "compile"}


def _banned_names(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name.split(".")[0] for alias in node.names} & BANNED_MODULES
    if isinstance(node, ast.ImportFrom):
        return {(node.module or "").split(".")[0]} & BANNED_MODULES
    if isinstance(node, ast.Name):
        return {node.id} & (BANNED_CALLS | BANNED_MODULES)
    if isinstance(node, ast.Attribute):
        return {node.attr} & (BANNED_CALLS - {"compile"})  # re.compile is fine
    return set()


@pytest.mark.parametrize("name", CACHE_PATH)
def test_cache_path_never_uses_pickle_marshal_or_eval(name: str) -> None:
    path = PACKAGE / name
    tree = ast.parse(path.read_text(), str(path))
    found = [(node.lineno, sorted(_banned_names(node))) for node in ast.walk(tree)
             if _banned_names(node)]
    assert found == [], f"{name}: {found}"


def test_the_pth_file_only_installs_the_hook() -> None:
    text = (PACKAGE / "cuvil_aot_hook.pth").read_text().strip()
    assert "\n" not in text and '__import__("cuvil_aot.importer")' in text
    assert text.endswith(".importer.install_from_env()")


HIT_MODULES = """
import json, sys
import cuvil_aot
cuvil_aot.install()
import mod
from cuvil_aot.load import artifacts
print(json.dumps([artifacts.last_outcome("mod").how,
                  sorted(m for m in sys.modules if m.startswith("cuvil_aot"))]))
"""


def test_a_cache_hit_runs_only_modules_checked_here(origin: Workspace) -> None:
    how, modules = last_json(origin.run(HIT_MODULES))
    assert how == "shortcut"
    checked = {"cuvil_aot", "cuvil_aot.runtime.native", "cuvil_aot.load", "cuvil_aot.runtime"} | {
        "cuvil_aot." + n.removesuffix(".py").replace("/", ".") for n in CACHE_PATH}
    unchecked = [m for m in modules if m not in checked and not m.startswith("cuvil_aot.cache")]
    assert unchecked == []
