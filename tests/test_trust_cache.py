"""What the cache trusts before dlopen, and how it copes with other processes: planted
shortcut records, unsafe shortcut and index files, a stopped builder holding a lock,
damaged manifest metadata, a refused cache under ``cache verify|list|clear``, no home
directory, a ``cache clear`` between publish and load, and build directories of killed
processes. Every import runs in a child interpreter (helpers/proc.py): a crash or a hang
fails the test, not the runner.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import trust
from helpers.entries import EARLY, EXPECT, EXPECT_EARLY, build_origin, entry_of, fresh, snapshot
from helpers.proc import HOOK, Workspace, last_json, probe

from cuvil_aot import knobs
from cuvil_aot.cache import store as store_mod
from cuvil_aot.load.settings import Settings

KEY = "correct horse battery staple 42"
SIGNED: dict[str, Any] = {"CUVIL_AOT_SIGNING_KEY": KEY, "CUVIL_AOT_REQUIRE_SIGNED": "1"}


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return build_origin(tmp_path_factory.mktemp("trust"))


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return build_origin(tmp_path_factory.mktemp("trust-signed"), CUVIL_AOT_SIGNING_KEY=KEY)


def _old(path: Path) -> None:
    old = time.time() - 2 * store_mod.STALE_TMP_S
    os.utime(path, (old, old))


# ---- 1. shortcut records and the files they live in ----------------------------------------


@pytest.mark.parametrize("signing", ["unsigned", "required"])
def test_a_record_copied_from_another_module_never_loads_its_code(
        origin: Workspace, signed: Workspace, tmp_path: Path, signing: str) -> None:
    env: dict[str, Any] = {"CUVIL_AOT_MODE": "strict", **(SIGNED if signing == "required" else {})}
    ws = fresh(signed if signing == "required" else origin, tmp_path)
    theirs, _ = trust.read_shortcuts(trust.shortcut_file(ws, "early"))
    path = trust.shortcut_file(ws, "mod")
    ours, rest = trust.read_shortcuts(path)
    ours["records"][0]["components"] = theirs["records"][0]["components"]
    trust.write_shortcuts(path, ours, rest)
    result = last_json(ws.run(probe(), **env))
    assert result["out"] == EXPECT and result["how"] == "cached"  # mod's own code
    trust.write_shortcuts(path, ours, rest)  # the import rewrote it: plant it again
    verify = ws.cli("cache", "verify", **env)
    assert verify.returncode == 1 and f"BAD {path}" in verify.stdout, verify.stdout


def test_a_signed_record_repointed_to_an_older_build_of_the_module_is_refused(
        signed: Workspace, tmp_path: Path) -> None:
    ws = fresh(signed, tmp_path)
    current = (ws.root / "mod.py").read_text()
    (ws.root / "mod.py").write_text(EARLY)  # a second, signed build of mod: early's code
    assert last_json(ws.run(probe(), CUVIL_AOT_SIGNING_KEY=KEY))["out"] == EXPECT_EARLY
    (ws.root / "mod.py").write_text(current)
    path = trust.shortcut_file(ws, "mod")
    doc, rest = trust.read_shortcuts(path)
    older, newer = doc["records"][0], doc["records"][1]  # newest first: early's code first
    newer["components"] = older["components"]
    trust.write_shortcuts(path, doc, rest)
    result = last_json(proc := ws.run(probe(), **SIGNED))
    assert result["out"] == EXPECT and result["how"] == "cached", proc.stderr


def _group_writable(path: Path) -> None:
    path.chmod(0o620)


def _foreign(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    os.chown(path, 65534, 65534)


def _symlink(path: Path) -> None:
    real = path.with_name("elsewhere")
    path.rename(real)
    path.symlink_to(real)


UNSAFE = {"group-writable": _group_writable, "another user's": _foreign, "a symlink": _symlink}


@pytest.mark.parametrize("how", UNSAFE)
def test_unsafe_shortcut_and_index_files_are_not_trusted(
        origin: Workspace, tmp_path: Path, how: str) -> None:
    ws = fresh(origin, tmp_path)
    shortcut = trust.shortcut_file(ws, "mod")
    index = next((ws.cache / "index").iterdir())
    for path in (shortcut, index):
        UNSAFE[how](path)
    verify = ws.cli("cache", "verify")
    assert verify.returncode == 1, verify.stdout
    assert f"BAD {shortcut}" in verify.stdout and f"BAD {index}" in verify.stdout
    result = last_json(ws.run(probe()))
    assert result["out"] == EXPECT and result["how"] == "cached"  # the full key decided
    assert last_json(ws.run(probe()))["how"] == "shortcut"  # rewritten, ours again


# ---- 2. a stopped builder holding the lock --------------------------------------------------


def test_lock_timeout_knob_reaches_the_settings() -> None:
    assert knobs.read({}).lock_timeout == 30
    assert Settings.from_knobs(knobs.read({"CUVIL_AOT_LOCK_TIMEOUT": "7"})).lock_timeout == 7
    with pytest.raises(knobs.KnobError):
        knobs.read({"CUVIL_AOT_LOCK_TIMEOUT": "soon"})


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_stopped_builder_blocks_others_only_until_the_lock_timeout(
        origin: Workspace, tmp_path: Path) -> None:
    ws = fresh(origin, tmp_path, drop=("mod",))
    holder = trust.stopped_at(probe(), ws, "written")  # SIGSTOPped holding mod's lock
    try:
        proc = ws.run(probe(), CUVIL_AOT_LOCK_TIMEOUT="2", timeout=90)
        result = last_json(proc)
        assert result["out"] == EXPECT and result["how"] == "built"
        warned = [line for line in proc.stderr.splitlines() if "CacheWarning" in line]
        assert len(warned) == 1, proc.stderr
        assert "'mod'" in warned[0] and str(holder.pid) in warned[0]
        assert ws.entries() == [entry_of(ws, "early")]  # built privately
    finally:
        trust.kill(holder)
    again = ws.run(probe(), CUVIL_AOT_LOCK_TIMEOUT="600", timeout=90)  # a dead holder: no wait
    assert last_json(again)["how"] == "built" and "CacheWarning" not in again.stderr
    assert entry_of(ws, "mod").exists()


# ---- 3. manifest metadata damaged into other valid JSON -------------------------------------

DAMAGE = {
    "ext_name a number": ("ext_name", 5),
    "ext_name null": ("ext_name", None),
    "ext_name wrong": ("ext_name", "not_the_extension"),
    "ext_file a list": ("ext_file", ["x.so"]),
    "ext_file missing": ("ext_file", "missing.so"),
}


@pytest.mark.parametrize("case", DAMAGE)
def test_damaged_metadata_is_a_bad_entry_set_aside_and_rebuilt(
        origin: Workspace, tmp_path: Path, case: str) -> None:
    ws = fresh(origin, tmp_path)
    manifest = entry_of(ws, "mod") / "manifest.json"
    doc = json.loads(manifest.read_bytes())
    field, value = DAMAGE[case]
    doc["metadata"][field] = value
    manifest.chmod(0o600)
    manifest.write_text(json.dumps(doc))
    proc = ws.run(probe())
    result = last_json(proc)
    assert result["out"] == EXPECT and result["how"] == "built"
    assert "is unusable" in proc.stderr and field in proc.stderr
    assert len(os.listdir(ws.cache / "quarantine")) == 1
    assert last_json(ws.run(probe()))["how"] == "shortcut"


# ---- 4. cache commands on a refused cache ----------------------------------------------------


@pytest.mark.parametrize("action", ["verify", "list", "clear", "info", "prune"])
def test_cache_commands_on_a_refused_cache_fail_and_touch_nothing(
        origin: Workspace, tmp_path: Path, action: str) -> None:
    ws = fresh(origin, tmp_path)
    ws.cache.chmod(0o777)
    before = snapshot(ws.cache), sorted(p.name for p in ws.cache.rglob("*"))
    proc = ws.cli("cache", action)
    assert proc.returncode != 0, proc.stdout
    assert "refus" in proc.stderr and "writable by group or others" in proc.stderr
    assert (snapshot(ws.cache), sorted(p.name for p in ws.cache.rglob("*"))) == before


# ---- 5. no home directory ----------------------------------------------------------------

NO_PASSWD = """
import os, pwd
def _no_entry(uid):
    raise KeyError(f"getpwuid(): uid not found: {uid}")
pwd.getpwuid = _no_entry  # a uid with no passwd entry, as pwd tells it
"""
WHERE = NO_PASSWD + """
from cuvil_aot import knobs
from cuvil_aot.load.stores import open_store
from cuvil_aot.load.settings import Settings
print(open_store(Settings.from_knobs(knobs.read())).root)
"""


def test_xdg_cache_home_is_enough_without_home_or_passwd_entry(
        origin: Workspace, tmp_path: Path) -> None:
    ws = fresh(origin, tmp_path)
    xdg = tmp_path / "xdg"
    proc = ws.run(WHERE, HOME=None, CUVIL_AOT_CACHE_DIR=None, XDG_CACHE_HOME=str(xdg))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(xdg / "cuvil_aot")] and proc.stderr == ""
    nowhere = ws.run(WHERE, HOME=None, CUVIL_AOT_CACHE_DIR=None, XDG_CACHE_HOME=None)
    assert nowhere.returncode == 0, nowhere.stderr  # a private cache, with one warning
    assert nowhere.stderr.count("CacheWarning") == 1 and "home" in nowhere.stderr
    code = probe(setup=NO_PASSWD + HOOK)
    result = last_json(ws.run(code, HOME=None, CUVIL_AOT_CACHE_DIR=None, XDG_CACHE_HOME=str(xdg)))
    assert result["out"] == EXPECT and (xdg / "cuvil_aot" / "entries").is_dir()


# ---- 6. a cache clear between publish and load ----------------------------------------------

CLEARED = """
from cuvil_aot.cache import store as _store_mod
_publish = _store_mod.Store.publish
_cleared = []
def _publish_then_clear(self, *args, **kwargs):
    entry = _publish(self, *args, **kwargs)
    if not _cleared:
        _cleared.append(self.clear())  # another process's `cache clear`, right now
        assert not entry.path.exists()
    return entry
_store_mod.Store.publish = _publish_then_clear
"""


def test_a_cache_clear_between_publish_and_load_is_a_miss(
        origin: Workspace, tmp_path: Path) -> None:
    ws = fresh(origin, tmp_path, drop=("mod",))
    proc = ws.run(probe(setup=CLEARED + HOOK))
    result = last_json(proc)
    assert result["out"] == EXPECT and result["how"] == "built", proc.stderr
    assert entry_of(ws, "mod").exists()


# ---- 7. build directories of killed processes ------------------------------------------------


def test_stale_build_dirs_of_dead_processes_are_swept(origin: Workspace, tmp_path: Path) -> None:
    ws = fresh(origin, tmp_path, drop=("mod",))
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    dead, young = trust.dead_pid(), trust.dead_pid()
    names = {"dead": f"cuvil_aot-build-{dead}-abc", "alive": f"cuvil_aot-build-{os.getpid()}-abc",
             "young": f"cuvil_aot-build-{young}-abc", "foreign": f"other-build-{dead}-abc"}
    for what, name in names.items():
        (tmp / name).mkdir()
        (tmp / name / "kernels.c").write_text("half")
        if what != "young":
            _old(tmp / name)
    result = last_json(ws.run(probe(), TMPDIR=str(tmp)))
    assert result["how"] == "built"
    assert sorted(os.listdir(tmp)) == sorted(n for w, n in names.items() if w != "dead")


SLOW_CC = """#!/bin/sh
case " $* " in *" --version "*|*" -dumpversion "*|*" -dumpfullversion "*) exec gcc "$@" ;; esac
echo $$ >> "{log}"
exec sleep 60
"""


def test_a_build_killed_mid_compile_leaves_nothing_after_the_next_build(
        origin: Workspace, tmp_path: Path) -> None:
    ws = fresh(origin, tmp_path, drop=("mod",))
    tmp, log, cc = tmp_path / "tmpdir", tmp_path / "cc.log", tmp_path / "slow-cc"
    tmp.mkdir()
    cc.write_text(SLOW_CC.format(log=log))
    cc.chmod(0o755)
    child = subprocess.Popen([sys.executable, "-c", probe()], cwd=ws.root,
                             env=ws.env(TMPDIR=str(tmp), CUVIL_AOT_CC=str(cc)),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (log.exists() and log.read_text().strip()) and child.poll() is None:
            assert time.monotonic() < deadline, "the compiler never started"
            time.sleep(0.02)
    finally:
        child.kill()  # kill -9 mid-compile
        child.wait()
        for pid in log.read_text().split() if log.exists() else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)  # the compiler outlived its parent
    left = [n for n in os.listdir(tmp) if n.startswith("cuvil_aot-build-")]
    assert left and all(f"-{child.pid}-" in n for n in left)
    for name in left:
        _old(tmp / name)
    assert last_json(ws.run(probe(), TMPDIR=str(tmp)))["how"] == "built"
    assert [n for n in os.listdir(tmp) if n.startswith("cuvil_aot-build-")] == []
