"""Faults end to end through the import path (issue 4, items 1 and 4-6): a damaged
extension, a build killed at each publish step, a full disk, a read-only cache and a
cache deleted under a running process. Each ends in a correct call and a consistent
cache. Every workload runs in a child interpreter (helpers/proc.py), so a crash fails
the test, not the runner.

Store-level versions of the same faults are in test_cache_store.py; what is proven
here is that the import hook, the shortcut and the full-key path all get them right.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import plant as pl
from helpers import privileged as priv
from helpers.entries import EXPECT, EXPECT_EARLY, build_origin, entry_of, fresh, snapshot
from helpers.proc import HOOK, REPO, Workspace, last_json, probe

from cuvil_aot.cache import Store
from cuvil_aot.cache import store as store_mod
from cuvil_aot.compiler.toolchain.cc import find_compiler

LOGGED = probe(setup=pl.DLOPEN_LOG + HOOK)
LISTING = """
import json, os
root = os.environ["CUVIL_AOT_CACHE_DIR"]
print(json.dumps({d: sorted(os.listdir(os.path.join(root, d))) for d in ("entries", "tmp")}))
"""


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return build_origin(tmp_path_factory.mktemp("faults"))


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    if pl.compiler() is None:
        pytest.skip("no C compiler to build the planted library")
    return pl.build_plant(tmp_path_factory.mktemp("plant"))


def sweep_dead_temps(cache: Path) -> None:
    """Age what dead processes left in tmp/, then let the store sweep it."""
    old = time.time() - 2 * store_mod.STALE_TMP_S
    for name in os.listdir(cache / "tmp"):
        os.utime(cache / "tmp" / name, (old, old))
    Store(cache).evict()


# ---- 1. a damaged extension is caught before dlopen ----------------------------------

Corrupt = Callable[[bytes, random.Random], bytes]


def _flip(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for offset in rng.sample(range(len(data) - pl.TAIL, len(data)), 3):
        out[offset] ^= 0xFF
    return bytes(out)


CORRUPTIONS: dict[str, tuple[Corrupt, bool, str]] = {
    # name: (damage, whether dlopen would still accept it, the warning's reason)
    "truncated to 0 bytes": (lambda d, r: b"", False, "is 0 bytes, the manifest says"),
    "truncated at a random offset": (lambda d, r: d[: r.randrange(1, len(d))], False,
                                     "bytes, the manifest says"),
    "truncated in the tail": (lambda d, r: d[: len(d) - r.randrange(1, pl.TAIL)], True,
                              "bytes, the manifest says"),
    "flipped bytes": (_flip, True, "does not match its SHA-256"),
}


@pytest.mark.parametrize("case", CORRUPTIONS)
def test_damaged_extension_is_never_dlopened_and_is_rebuilt(
        origin: Workspace, planted: bytes, tmp_path: Path, case: str) -> None:
    damage, loadable, reason = CORRUPTIONS[case]
    ws = fresh(origin, tmp_path)
    entry = entry_of(ws, "mod")
    pl.plant(entry, planted)  # a well-formed entry whose extension would run the marker
    bad = damage(planted, random.Random(f"cuvil_aot {case}"))
    pl.replace_bytes(entry, bad)
    if loadable:  # control: these very bytes would run the constructor if dlopened
        assert pl.loads_it(bad, tmp_path)
    marker, log = tmp_path / "marker", tmp_path / "dlopen.log"
    proc = ws.run(LOGGED, **{pl.MARKER_ENV: str(marker), pl.LOG_ENV: str(log)})
    result = last_json(proc)
    assert result["out"] == EXPECT and result["how"] == "built"
    assert result["quarantined"] == 1
    assert not marker.exists(), "the damaged library was loaded"
    assert pl.sha256(bad) not in log.read_text().split()
    assert f"cuvil_aot cache entry {entry} is unusable" in proc.stderr, proc.stderr
    assert reason in proc.stderr and "moved to" in proc.stderr
    assert len(os.listdir(ws.cache / "quarantine")) == 1
    assert ws.cli("cache", "verify").returncode == 0


def test_planted_entry_control_the_marker_proves_a_load(
        origin: Workspace, planted: bytes, tmp_path: Path) -> None:
    """The proof above is only as good as its marker: a well-formed entry holding the
    planted library is loaded, and the marker shows it (signing refuses it: see
    test_security.py)."""
    ws = fresh(origin, tmp_path)
    pl.plant(entry_of(ws, "mod"), planted)
    marker, log = tmp_path / "marker", tmp_path / "dlopen.log"
    proc = ws.run(LOGGED, **{pl.MARKER_ENV: str(marker), pl.LOG_ENV: str(log)})
    assert proc.returncode != 0 and "PyInit" in proc.stderr  # it has no module init
    assert marker.read_text().startswith("planted code ran")
    assert pl.sha256(planted) in log.read_text().split()


# ---- 4. kill -9 at each publish step ---------------------------------------------------


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def stop_then_kill(argv: list[str], ws: Workspace, step: str) -> None:
    """Run ``argv`` until it stops itself at ``step`` (CUVIL_AOT_TEST_STOP_AT), then
    SIGKILL it there."""
    proc = subprocess.Popen(argv, cwd=ws.root, env=ws.env(CUVIL_AOT_TEST_STOP_AT=step),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and _state(proc.pid) != "T":
            assert time.monotonic() < deadline, "the child never reached the step"
            time.sleep(0.01)
        assert proc.poll() is None, f"the child exited instead:\n{proc.stderr.read()}"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize("step", store_mod.PUBLISH_STEPS)
def test_kill_9_at_each_publish_step(origin: Workspace, tmp_path: Path, step: str) -> None:
    ws = fresh(origin, tmp_path, drop=("mod",))
    digest = entry_of(origin, "mod").name
    early = entry_of(ws, "early")
    before = snapshot(early)
    stop_then_kill([sys.executable, "-c", probe()], ws, step)
    complete = step == "after-rename"
    assert (ws.cache / "entries" / digest).exists() == complete  # absent or complete ...
    assert Store(ws.cache).verify_all() == []  # ... and valid
    assert snapshot(early) == before  # earlier entries untouched
    result = last_json(ws.run(probe()))  # the next import works
    assert result["out"] == EXPECT
    assert (result["how"] == "built") == (not complete) and result["builds"] == int(not complete)
    sweep_dead_temps(ws.cache)
    assert os.listdir(ws.cache / "tmp") == [] and Store(ws.cache).verify_all() == []


# ---- 5. disk full and a read-only cache ------------------------------------------------


def _run(argv: list[str], ws: Workspace) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ws.root, env=ws.env(), capture_output=True, text=True,
                          timeout=180)


def _two_json_lines(proc: subprocess.CompletedProcess[str]) -> tuple[dict, dict]:
    last_json(proc)  # fails with the child's output if it failed
    *_, first, second = proc.stdout.strip().splitlines()
    return json.loads(first), json.loads(second)


def test_disk_full_builds_privately_leaves_nothing_then_publishes(
        origin: Workspace, tmp_path: Path) -> None:
    reason = priv.mount_reason()
    if reason:
        pytest.skip(reason)
    ws = fresh(origin, tmp_path, drop=("mod",))
    # A 16 KiB tmpfs over the cache: its directories fit, the 20 KiB extension does not.
    mount = f"mount -t tmpfs -o size=16k,mode=0700 tmpfs {shlex.quote(str(ws.cache))}"
    argv = priv.in_mount_namespace(mount, [sys.executable, "-c", probe() + LISTING])
    proc = _run(argv, ws)
    result, inside = _two_json_lines(proc)
    assert result["out"] == EXPECT and result["how"] == "built"
    assert proc.stderr.count("using a private cache") == 1, proc.stderr
    assert "No space left on device" in proc.stderr
    assert inside == {"entries": [], "tmp": []}  # nothing partial on the full disk
    again = last_json(ws.run(probe()))  # with room, the next run publishes
    assert again["how"] == "built" and entry_of(ws, "mod").exists()
    assert Store(ws.cache).verify_all() == []


def _read_only_argv(variant: str, ws: Workspace, code: str) -> list[str]:
    argv = [sys.executable, "-c", code]
    if variant == "read-only mount":
        cache = shlex.quote(str(ws.cache))
        return priv.in_mount_namespace(
            f"mount --bind {cache} {cache}\nmount -o remount,bind,ro {cache}", argv)
    if variant == "permission bits, no DAC override":
        return priv.without_dac_override(argv)
    return priv.as_nobody(argv)


def _skip_reason(variant: str) -> str | None:
    if variant == "read-only mount":
        return priv.mount_reason()
    if variant == "permission bits, no DAC override":
        return priv.dac_reason()
    return priv.nobody_reason(str(REPO))


def _make_read_only(variant: str, ws: Workspace) -> None:
    if variant == "read-only mount":
        return
    if variant == "user nobody":
        uid, gid = priv.nobody() or (0, 0)
        for path in [ws.cache, *ws.cache.rglob("*")]:
            os.chown(path, uid, gid, follow_symlinks=False)
    for path in [ws.cache, *ws.cache.rglob("*")]:
        if path.is_dir():
            path.chmod(0o500)


READ_ONLY = ["read-only mount", "permission bits, no DAC override", "user nobody"]


@pytest.mark.parametrize("variant", READ_ONLY)
def test_read_only_cache_serves_hits_and_builds_privately(
        origin: Workspace, tmp_path: Path, variant: str) -> None:
    reason = _skip_reason(variant)
    if reason:
        pytest.skip(reason)
    base = priv.shared_tmp() if variant == "user nobody" else tmp_path
    try:
        ws = fresh(origin, base, drop=("mod",))
        if variant == "user nobody":
            # nobody may run another Python than ours (the venv's base interpreter under a
            # 0700 /root: the system's), whose sysconfig names the C compiler otherwise;
            # the key would differ for a reason this test is not about: pin the compiler
            ws.extra_env["CUVIL_AOT_CC"] = shlex.join(find_compiler().command)
        _make_read_only(variant, ws)
        before = snapshot(ws.cache)
        hit = last_json(_run(_read_only_argv(variant, ws, probe("early")), ws))
        proc = _run(_read_only_argv(variant, ws, probe()), ws)
        miss = last_json(proc)
        assert hit["how"] in ("shortcut", "cached") and hit["builds"] == 0
        assert miss["out"] == EXPECT and miss["how"] == "built"
        assert proc.stderr.count("using a private cache") == 1, proc.stderr
        assert snapshot(ws.cache) == before  # nothing written, nothing partial
        for path in [ws.cache, *ws.cache.rglob("*")]:  # writable again, ours again
            os.chown(path, os.getuid(), os.getgid(), follow_symlinks=False)
            if path.is_dir():
                path.chmod(0o700)
        assert last_json(ws.run(probe()))["how"] == "built"  # with write access it publishes
        assert entry_of(ws, "mod").exists() and Store(ws.cache).verify_all() == []
    finally:
        if base is not tmp_path:
            shutil.rmtree(base, ignore_errors=True)


# ---- 6. the cache deleted while a process runs, or while it evicts -----------------------

DELETED = """
import json, os, pathlib, shutil
import numpy as np
import cuvil_aot
cuvil_aot.install()
from cuvil_aot import knobs
from cuvil_aot.load import artifacts
root = os.environ["CUVIL_AOT_CACHE_DIR"]
x = np.arange(6, dtype=np.float32)
import mod
shutil.rmtree(root)  # deleted while this process runs
import early  # a miss now: built, and the cache recreated
recreated = os.listdir(os.path.join(root, "entries"))
store = artifacts.open_store(artifacts.Settings.from_knobs(knobs.read()))
shutil.rmtree(root)
evicted = store.evict(0)  # deleted again, then evicted: nothing to do
print(json.dumps({"mod": mod.f(x).tolist(), "early": early.f(x).tolist(),
                  "recreated": len(recreated), "evicted": evicted,
                  "same_store": store.root == pathlib.Path(root)}))
"""


def test_cache_deleted_while_a_process_runs_is_recreated(
        origin: Workspace, tmp_path: Path) -> None:
    ws = fresh(origin, tmp_path)
    proc = ws.run(DELETED)
    result = last_json(proc)
    assert result == {"mod": EXPECT, "early": EXPECT_EARLY, "recreated": 1, "evicted": [],
                      "same_store": True}
    assert "private cache" not in proc.stderr and "Traceback" not in proc.stderr


def _fake_build(folder: Path) -> dict[str, object]:
    """Writes as artifacts._PrivateBuild does: failing to write into the store's folder
    is the store's problem (CacheError), not the build's."""
    from cuvil_aot.cache import CacheError

    try:
        (folder / "ext.so").write_bytes(b"\x7fELF" + b"x" * 2000)
    except OSError as exc:
        raise CacheError(f"cannot write into {folder}: {exc}") from None
    return {}


def test_cache_deleted_during_eviction_and_publish(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread deletes the whole cache every few milliseconds while this one publishes,
    looks up and evicts: housekeeping never raises, a publish raises only CacheError
    (the import path then builds privately), and afterwards all is well."""
    import threading
    import warnings

    from cuvil_aot.cache import CacheError, CacheKey, CacheWarning

    monkeypatch.setattr(store_mod, "EVICT_GRACE_S", 0.0)  # evict what was just published
    root = tmp_path / "root"
    store = Store(root, max_bytes=1)
    stop = threading.Event()

    def delete() -> None:
        while not stop.is_set():
            shutil.rmtree(root, ignore_errors=True)
            time.sleep(0.003)

    deleter = threading.Thread(target=delete)
    deleter.start()
    published = refused = 0
    try:
        with warnings.catch_warnings():  # half-deleted entries are rightly set aside
            warnings.simplefilter("ignore", CacheWarning)
            for n in range(30):  # rounds, not a deadline: no timing in the test
                key = CacheKey({"n": str(n)})
                try:
                    store.publish(key, _fake_build, "pkg.mod")
                    published += 1
                except CacheError:
                    refused += 1
                store.lookup(key)
                store.evict()
                store.size(), store.entries(), store.verify_all()
    finally:
        stop.set()
        deleter.join()
    assert published + refused == 30  # each round ended in an entry or a CacheError
    entry = store.publish(CacheKey({"n": "after"}), _fake_build, "pkg.mod")
    assert store.lookup(CacheKey({"n": "after"})) == entry
    assert root.stat().st_mode & 0o777 == 0o700
