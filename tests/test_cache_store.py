"""cuvil_aot.cache: keys, the content-addressed store, publish races, eviction, safety.

Runs from any directory (``cd /tmp && python -m pytest .../tests/test_cache_store.py``);
each test uses its own tmp_path as the cache root.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.machinery
import json
import multiprocessing
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import textwrap
import time
import types
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
try:
    import cuvil_aot  # noqa: F401
except Exception:  # the rest of the package is mid-edit: load the cache package alone
    _pkg = types.ModuleType("cuvil_aot")
    _pkg.__path__ = [str(REPO / "cuvil_aot")]
    sys.modules["cuvil_aot"] = _pkg

from cuvil_aot import cache  # noqa: E402
from cuvil_aot.cache import CacheError, CacheKey, CacheWarning, Store  # noqa: E402
from cuvil_aot.cache import entry as entry_mod  # noqa: E402
from cuvil_aot.cache import index as index_mod  # noqa: E402
from cuvil_aot.cache import lock as lock_mod  # noqa: E402
from cuvil_aot.cache import manifest as mf  # noqa: E402
from cuvil_aot.cache import store as store_mod  # noqa: E402

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
EXT = "mod" + SUFFIX
FORK = multiprocessing.get_context("fork") if sys.platform == "linux" else None
needs_fork = pytest.mark.skipif(FORK is None, reason="needs fork (Linux)")


def make_key(**changes: str) -> CacheKey:
    base = {
        "source": "def f(x):\n    return x + 1\n",
        "signatures": "f(f32[B,128])",
        "options": "opt=2",
        "cuvil_aot_version": "0.1.0",
        "python_abi": "cp311",
    }
    return CacheKey({**base, **changes})


def writer(
    files: Mapping[str, bytes] | None = None,
    counter: Path | None = None,
    delay: float = 0.0,
    metadata: Mapping[str, object] | None = None,
) -> Callable[[Path], Mapping[str, object]]:
    """A build callback: counts itself in ``counter``, then writes ``files``."""
    files = (
        {EXT: b"\x7fELF" + b"code" * 256, "kernels.fatbin": b"fatbin"} if files is None else files
    )

    def build(folder: Path) -> Mapping[str, object]:
        if counter is not None:
            with open(counter, "a") as out:
                out.write(f"{os.getpid()}\n")
        time.sleep(delay)
        for name, data in files.items():
            (folder / name).write_bytes(data)
        return {"functions": ["f"]} if metadata is None else metadata

    return build


def publish(store: Store, key: CacheKey | None = None, **kw: Any) -> cache.Entry:
    return store.publish(key or make_key(), writer(**kw), "pkg.mod")


def rewrite(path: Path, data: bytes) -> None:
    """Write over a read-only cache file, as an attacker or a bad disk would."""
    os.chmod(path, 0o600)
    path.write_bytes(data)
    os.chmod(path, 0o400)


def leftovers(root: Path) -> list[str]:
    return sorted(os.listdir(root / "tmp"))


def run_child(target: Callable[[], None]) -> int:
    """Run ``target`` in a forked child; its exit code (a crash fails only the child)."""
    assert FORK is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        child = FORK.Process(target=target)
        child.start()
    child.join(60)
    assert child.exitcode is not None
    return child.exitcode


# ---- keys ------------------------------------------------------------------------


def test_key_digest_is_canonical_and_sensitive_to_every_component() -> None:
    key = make_key()
    again = CacheKey(dict(reversed(list(key.components.items()))))
    assert key == again and key.digest == again.digest and len(key.digest) == 64
    for name in key.components:
        assert CacheKey({**key.components, name: key.components[name] + " "}) != key
    assert CacheKey({**key.components, "cuda": "12.4"}) != key
    with pytest.raises(CacheError):
        CacheKey({"Bad Name": "x"})
    with pytest.raises(CacheError):
        CacheKey({"cc": 3})  # type: ignore[dict-item]


def test_diff_lists_changed_added_and_removed_components() -> None:
    old = {"a": "1", "b": "2", "c": "3"}
    new = {"a": "1", "b": "9", "d": "4"}
    assert cache.diff(old, new) == [("b", "2", "9"), ("c", "3", None), ("d", None, "4")]


def test_key_is_the_same_in_a_fresh_interpreter_elsewhere(tmp_path: Path) -> None:
    store = Store(tmp_path / "cache")
    entry = publish(store)
    code = textwrap.dedent(f"""
        import sys, types
        sys.path.insert(0, {str(REPO)!r})
        try:
            import cuvil_aot
        except Exception:
            pkg = types.ModuleType("cuvil_aot"); pkg.__path__ = [{str(REPO / "cuvil_aot")!r}]
            sys.modules["cuvil_aot"] = pkg
        from cuvil_aot.cache import CacheKey, Store
        key = CacheKey({dict(make_key().components)!r})
        hit = Store(__import__("pathlib").Path({str(tmp_path / "cache")!r})).lookup(key)
        print(key.digest, hit is not None and hit.manifest.created)
    """)
    env = {**os.environ, "PYTHONHASHSEED": "1234", "UNRELATED": "x"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd="/", env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == [make_key().digest, repr(entry.manifest.created)]


# ---- hit and miss ----------------------------------------------------------------


def test_miss_publish_hit(tmp_path: Path) -> None:
    store = Store(tmp_path / "cache")
    before = cache.stats()
    assert store.lookup(make_key()) is None
    published = publish(store)
    hit = store.lookup(make_key())
    assert (
        hit is not None and hit.path == published.path == store.root / "entries" / make_key().digest
    )
    assert hit.manifest == published.manifest and hit.manifest.metadata == {"functions": ["f"]}
    stored = hit.file(EXT)
    assert (
        stored.name.endswith(SUFFIX)
        and stored.name == f"{hit.manifest.files[EXT].sha256[:16]}-{EXT}"
    )
    assert stored.read_bytes() == b"\x7fELF" + b"code" * 256
    assert sorted(os.listdir(hit.path)) == sorted(
        [stored.name, hit.file("kernels.fatbin").name, "manifest.json"]
    )
    assert (stored.stat().st_mode & 0o777) == 0o400 and (hit.path.stat().st_mode & 0o777) == 0o700
    assert store.stats() == cache.CacheStats(
        hits=1, misses=1, builds=1, build_seconds=store.stats().build_seconds
    )
    after = cache.stats()
    assert (
        after.hits - before.hits,
        after.misses - before.misses,
        after.builds - before.builds,
    ) == (1, 1, 1)
    assert store.lookup(make_key(options="opt=3")) is None
    assert leftovers(store.root) == [] and [e.path for e in store.entries()] == [hit.path]
    assert store.size() > hit.size > 0 and store.verify_all() == []


def test_lookup_bumps_last_use(tmp_path: Path) -> None:
    store = Store(tmp_path)
    entry = publish(store)
    os.utime(entry.path / "manifest.json", (1000, 1000))
    assert store.lookup(make_key()) is not None
    assert time.time() - (entry.path / "manifest.json").stat().st_mtime < 60


def test_publish_of_a_present_key_reuses_it(tmp_path: Path) -> None:
    store = Store(tmp_path)
    first = publish(store)
    counter = tmp_path / "count"
    assert publish(store, counter=counter).manifest == first.manifest
    assert not counter.exists()


# ---- corrupted entries -----------------------------------------------------------

CORRUPTIONS: dict[str, Callable[[bytes], bytes]] = {
    "truncated to zero": lambda b: b"",
    "truncated": lambda b: b[: len(b) // 3],
    "flipped bytes": lambda b: b[:100] + bytes(x ^ 0x5A for x in b[100:103]) + b[103:],
    "grown": lambda b: b + b"\0",
}


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_corrupted_file_is_quarantined_and_rebuilt(tmp_path: Path, how: str) -> None:
    store = Store(tmp_path)
    entry = publish(store)
    rewrite(entry.file(EXT), CORRUPTIONS[how](entry.file(EXT).read_bytes()))
    reason = "bytes, the manifest says" if how != "flipped bytes" else "does not match its SHA-256"
    with pytest.warns(CacheWarning, match=rf"{re.escape(str(entry.path))}.*{reason}.*moved to "):
        assert store.lookup(make_key()) is None
    assert not entry.path.exists() and len(os.listdir(tmp_path / "quarantine")) == 1
    assert store.stats().quarantined == 1
    assert publish(store).file(EXT).read_bytes() == b"\x7fELF" + b"code" * 256
    assert store.lookup(make_key()) is not None


def test_missing_file_and_missing_manifest_are_bad_entries(tmp_path: Path) -> None:
    store = Store(tmp_path)
    entry = publish(store)
    entry.file("kernels.fatbin").unlink()
    with pytest.warns(CacheWarning, match="file 'kernels.fatbin' .* is missing"):
        assert store.lookup(make_key()) is None
    entry = publish(store)
    (entry.path / "manifest.json").unlink()
    with pytest.warns(CacheWarning, match="manifest.json is missing"):
        assert store.lookup(make_key()) is None
    assert publish(store).path == entry.path


def valid_doc(tmp_path: Path) -> tuple[Store, cache.Entry, dict[str, object]]:
    store = Store(tmp_path)
    entry = publish(store)
    return store, entry, json.loads((entry.path / "manifest.json").read_bytes())


def _set(doc: dict[str, object], field: str, value: object) -> bytes:
    return json.dumps({**doc, field: value}).encode()


def _drop(doc: dict[str, object], field: str) -> bytes:
    return json.dumps({k: v for k, v in doc.items() if k != field}).encode()


def _file_field(doc: dict[str, object], field: str, value: object) -> bytes:
    files = json.loads(json.dumps(doc["files"]))
    files[EXT][field] = value
    return _set(doc, "files", files)


BAD_MANIFESTS: dict[str, tuple[Callable[[dict[str, object]], bytes], str]] = {
    "garbage": (lambda d: b"\x00\xffnot json", "not valid JSON"),
    "not an object": (lambda d: b"[1, 2]", "not a JSON object"),
    "wrong schema": (lambda d: _set(d, "schema", 2), "format/schema"),
    "wrong format": (lambda d: _set(d, "format", "other"), "format/schema"),
    "missing field": (lambda d: _drop(d, "files"), r"missing \['files'\]"),
    "extra field": (lambda d: _set(d, "x", 1), r"unexpected \['x'\]"),
    "mistyped module": (lambda d: _set(d, "module", 7), "bad module name"),
    "mistyped schema": (lambda d: _set(d, "schema", True), "'schema' has type bool"),
    "mistyped size": (lambda d: _file_field(d, "size", "12"), "bad size"),
    "bad sha": (lambda d: _file_field(d, "sha256", "ab"), "bad sha256"),
    "path escape": (lambda d: _file_field(d, "path", "../../evil.so"), "not content-addressed"),
    "NaN": (lambda d: _set(d, "created", float("nan")), "non-finite"),
    "components tampered": (
        lambda d: _set(d, "components", {**d["components"], "cc": "x"}),  # type: ignore[dict-item]
        "does not match its own components",
    ),
    "huge": (lambda d: b" " * (mf.MAX_BYTES + 1), "over the 1048576 limit"),
    "deep": (lambda d: b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
}


@pytest.mark.parametrize("case", BAD_MANIFESTS)
def test_bad_manifest_is_a_miss_with_a_specific_warning(tmp_path: Path, case: str) -> None:
    store, entry, doc = valid_doc(tmp_path)
    mutate, reason = BAD_MANIFESTS[case]
    rewrite(entry.path / "manifest.json", mutate(doc))
    with pytest.warns(CacheWarning, match=reason):
        assert store.lookup(make_key()) is None
    assert not entry.path.exists()


def test_manifest_of_another_key_is_refused(tmp_path: Path) -> None:
    store = Store(tmp_path)
    other = publish(store, make_key(source="other"))
    shutil.copytree(other.path, store.root / "entries" / make_key().digest)
    with pytest.warns(CacheWarning, match="manifest.json is for key"):
        assert store.lookup(make_key()) is None
    assert store.lookup(make_key(source="other")) is not None


# ---- orphans, failed and killed builds ---------------------------------------------


def test_orphans_are_reported_and_do_not_block_publish(tmp_path: Path) -> None:
    store = Store(tmp_path)
    entry = publish(store)
    (store.root / "entries" / "stray.txt").write_text("x")
    os.mkdir(store.root / "entries" / make_key(source="empty").digest, 0o700)
    (entry.path / "unlisted.bin").write_bytes(b"x")
    problems = {(p.path.name, p.reason.split(":")[0]) for p in store.verify_all()}
    assert ("stray.txt", "not a cache entry") in problems
    assert ("unlisted.bin", "file not listed in the manifest") in problems
    assert (make_key(source="empty").digest, "manifest.json is missing") in problems
    assert store.lookup(make_key()) is not None  # an unlisted file does not spoil an entry
    with pytest.warns(CacheWarning, match="manifest.json is missing"):
        assert (
            publish(store, make_key(source="empty")).manifest.key == make_key(source="empty").digest
        )


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_stale_temp_dirs_of_dead_processes_are_swept(tmp_path: Path) -> None:
    store = Store(tmp_path)
    old = time.time() - 2 * store_mod.STALE_TMP_S
    dead, alive = (
        store.root / "tmp" / f"build-{dead_pid()}-x",
        store.root / "tmp" / f"build-{os.getpid()}-y",
    )
    young = store.root / "tmp" / f"build-{dead_pid()}-z"
    for folder in (dead, alive, young):
        folder.mkdir()
        (folder / EXT).write_bytes(b"half")
    for folder in (dead, alive):
        os.utime(folder, (old, old))
    publish(store)
    assert leftovers(store.root) == sorted([alive.name, young.name])


def test_build_exception_leaves_nothing_and_propagates(tmp_path: Path) -> None:
    store = Store(tmp_path, lock_timeout=0.5)

    def failing(folder: Path) -> Mapping[str, object]:
        (folder / EXT).write_bytes(b"half written")
        raise RuntimeError("cc: error")

    with pytest.raises(RuntimeError, match="cc: error"):
        store.publish(make_key(), failing, "pkg.mod")
    assert leftovers(store.root) == [] and os.listdir(store.root / "entries") == []
    assert store.stats().builds == 0
    assert publish(store).path.exists()  # the lock was released


@pytest.mark.parametrize(
    ("outputs", "error"),
    [
        ({}, "wrote no files"),
        ({"sub": None}, "is not a regular file"),
        ({"link": EXT}, "is not a regular file"),
        ({"bad name!": b"x"}, "bad file name"),
    ],
)
def test_bad_build_outputs_are_refused(
    tmp_path: Path, outputs: dict[str, object], error: str
) -> None:
    store = Store(tmp_path)

    def build(folder: Path) -> Mapping[str, object]:
        if outputs:
            (folder / EXT).write_bytes(b"x")
        for name, what in outputs.items():
            if what is None:
                (folder / name).mkdir()
            elif isinstance(what, str):
                (folder / name).symlink_to(folder / what)
            else:
                (folder / name).write_bytes(what)  # type: ignore[arg-type]
        return {}

    with pytest.raises(CacheError, match=error):
        store.publish(make_key(), build, "pkg.mod")
    assert leftovers(store.root) == [] and os.listdir(store.root / "entries") == []


def test_non_json_metadata_is_a_type_error(tmp_path: Path) -> None:
    store = Store(tmp_path)
    with pytest.raises(TypeError, match="JSON"):
        publish(store, metadata={"x": object()})
    assert leftovers(store.root) == []


def _crash_in_build(root: Path) -> None:
    def build(folder: Path) -> Mapping[str, object]:
        (folder / EXT).write_bytes(b"partial")
        os._exit(9)

    Store(root).publish(make_key(), build, "pkg.mod")


def _crash_before_rename(root: Path) -> None:
    store_mod.Store._install = lambda *a, **k: os._exit(9)  # type: ignore[method-assign]
    publish(Store(root))


def _crash_after_rename(root: Path) -> None:
    index_mod.record_build = lambda *a, **k: os._exit(9)  # type: ignore[assignment]
    publish(Store(root))


@needs_fork
@pytest.mark.parametrize(
    ("crash", "complete"),
    [(_crash_in_build, False), (_crash_before_rename, False), (_crash_after_rename, True)],
)
def test_killed_publish_leaves_absent_or_complete_entry(
    tmp_path: Path, crash: Callable[[Path], None], complete: bool
) -> None:
    store = Store(tmp_path)
    earlier = publish(store, make_key(source="earlier"))
    assert run_child(lambda: crash(tmp_path)) == 9
    assert (store.lookup(make_key()) is not None) == complete
    assert store.lookup(make_key(source="earlier")) == earlier
    assert publish(store).path.exists() and store.verify_all() == []
    for name in leftovers(store.root):  # what the dead child left is swept once old
        old = time.time() - 2 * store_mod.STALE_TMP_S
        os.utime(store.root / "tmp" / name, (old, old))
    store.evict()
    assert leftovers(store.root) == []


def _publish_on_a_full_disk(root: Path) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))  # the outputs fit, the manifest not
    try:
        publish(Store(root), files={EXT: b"x" * 100})
    except CacheError as exc:
        os._exit(3 if "File too large" in str(exc) else 4)
    os._exit(5)


@needs_fork
def test_disk_full_is_a_cache_error_and_leaves_nothing(tmp_path: Path) -> None:
    assert run_child(lambda: _publish_on_a_full_disk(tmp_path)) == 3
    store = Store(tmp_path)
    assert leftovers(store.root) == [] and os.listdir(store.root / "entries") == []
    assert publish(store).path.exists()  # with room again it publishes normally


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories")
def test_read_only_cache_serves_hits_and_refuses_publish(tmp_path: Path) -> None:
    store = Store(tmp_path / "root")
    publish(store)
    for name in (".", *store_mod.SUBDIRS):
        (store.root / name).chmod(0o500)
    try:
        assert Store(store.root).lookup(make_key()) is not None
        with pytest.raises(CacheError):
            publish(store, make_key(source="new"))
    finally:
        for name in (".", *store_mod.SUBDIRS):
            (store.root / name).chmod(0o700)


# ---- concurrency -----------------------------------------------------------------


def _racer(root: Path, barrier: Any, counter: Path, results: Any) -> None:
    store = Store(root)
    barrier.wait()
    key = make_key()
    entry = store.lookup(key) or publish(store, key, counter=counter, delay=0.3)
    results.put((str(entry.path), entry.manifest.created, entry.file(EXT).read_bytes()))


@needs_fork
def test_concurrent_publish_from_8_processes_builds_once(tmp_path: Path) -> None:
    assert FORK is not None
    barrier, results, counter = FORK.Barrier(8), FORK.Queue(), tmp_path / "builds"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        racers = [
            FORK.Process(target=_racer, args=(tmp_path / "c", barrier, counter, results))
            for _ in range(8)
        ]
        for racer in racers:
            racer.start()
    seen = {results.get(timeout=60) for _ in racers}
    for racer in racers:
        racer.join(60)
    assert [r.exitcode for r in racers] == [0] * 8
    assert len(counter.read_text().split()) == 1
    assert len(seen) == 1
    assert os.listdir(tmp_path / "c" / "entries") == [make_key().digest]
    assert leftovers(tmp_path / "c") == []


def test_lost_race_without_the_lock_reuses_the_winner(tmp_path: Path) -> None:
    store = Store(tmp_path, lock_timeout=0.0)
    winner: list[cache.Entry] = []

    def slow_loser(folder: Path) -> Mapping[str, object]:
        (folder / EXT).write_bytes(b"loser")
        with pytest.warns(CacheWarning, match="building it anyway"):
            winner.append(
                Store(tmp_path, lock_timeout=0.0).publish(
                    make_key(), writer({EXT: b"winner"}), "pkg.mod"
                )
            )
        return {}

    got = store.publish(make_key(), slow_loser, "pkg.mod")
    assert got == winner[0] and got.file(EXT).read_bytes() == b"winner"
    assert leftovers(store.root) == [] and store.verify_all() == []


def test_lock_file_removed_by_its_holder_is_not_shared(tmp_path: Path) -> None:
    path = tmp_path / "k.lock"
    first = lock_mod.acquire(path, 0.0)
    assert first is not None and lock_mod.acquire(path, 0.0) is None
    stale = os.open(path, os.O_RDWR)  # a waiter that opened the old file
    path.unlink()
    lock_mod.release(first)
    second = lock_mod.acquire(path, 0.0)
    assert second is not None and os.fstat(second).st_ino != os.fstat(stale).st_ino
    lock_mod.release(second)
    os.close(stale)


# ---- eviction --------------------------------------------------------------------


def _age(entry: cache.Entry, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(entry.path / "manifest.json", (then, then))


def test_evict_lru_to_a_tiny_cap(tmp_path: Path) -> None:
    store = Store(tmp_path, max_bytes=1)
    a, b, c = (publish(store, make_key(source=s)) for s in "abc")
    for entry, age in ((a, 300), (b, 200), (c, 100)):
        _age(entry, age)
    assert store.lookup(make_key(source="a")) is not None  # a becomes most recently used
    one = store.size() // 3
    assert set(store.evict(one + 10)) == {b.manifest.key, c.manifest.key}
    assert [e.path for e in store.entries()] == [a.path]
    assert leftovers(store.root) == []
    assert os.listdir(store.root / "locks") == [f"{a.manifest.key}.lock"]
    assert store.evict() == []  # a was used just now: too young to evict
    _age(a, 100)
    assert store.evict() == [a.manifest.key] and store.size() == 0


def test_evict_spares_an_entry_being_published(tmp_path: Path) -> None:
    store = Store(tmp_path)
    entry = publish(store)
    _age(entry, 100)
    held = lock_mod.acquire(tmp_path / "locks" / f"{entry.manifest.key}.lock", 0.0)
    assert held is not None
    assert store.evict(0) == [] and entry.path.exists()
    lock_mod.release(held)
    assert store.evict(0) == [entry.manifest.key]


def test_entry_evicted_during_lookup_is_a_plain_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path)
    _age(publish(store), 100)
    real_check = entry_mod.check_file

    def evict_first(*args: Any, **kw: Any) -> None:
        assert store.evict(0) == [make_key().digest]  # another process, between two files
        real_check(*args, **kw)

    monkeypatch.setattr(entry_mod, "check_file", evict_first)
    assert store.lookup(make_key()) is None  # no warning: nothing was wrong with it
    assert os.listdir(tmp_path / "quarantine") == [] and leftovers(tmp_path) == []


def test_clear_removes_entries_quarantine_and_index(tmp_path: Path) -> None:
    store = Store(tmp_path)
    for s in "ab":
        publish(store, make_key(source=s))
    rewrite(store.root / "entries" / make_key(source="a").digest / "manifest.json", b"x")
    with pytest.warns(CacheWarning):
        store.lookup(make_key(source="a"))
    assert store.clear() == 1
    assert store.entries() == [] and os.listdir(tmp_path / "quarantine") == []
    assert "no build is recorded" in store.explain("pkg.mod", make_key())


# ---- safety ----------------------------------------------------------------------


def test_root_and_parents_are_created_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        store = Store(tmp_path / "a" / "b" / "root")
    finally:
        os.umask(old)
    for path in (
        tmp_path / "a",
        tmp_path / "a" / "b",
        store.root,
        *(store.root / d for d in store_mod.SUBDIRS),
    ):
        assert path.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_group_or_other_writable_root_is_refused(tmp_path: Path, mode: int) -> None:
    root = tmp_path / "root"
    root.mkdir()
    root.chmod(mode)
    with pytest.raises(CacheError, match="writable by group or others"):
        Store(root)


def test_store_that_became_unsafe_is_refused_on_lookup(tmp_path: Path) -> None:
    store = Store(tmp_path / "root")
    publish(store)
    (store.root / "entries").chmod(0o777)
    with pytest.raises(CacheError, match="writable by group or others"):
        store.lookup(make_key())


def test_symlinked_root_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    Store(real)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(CacheError, match="is a symlink"):
        Store(tmp_path / "link")
    (real / "entries").rename(real / "elsewhere")
    (real / "entries").symlink_to(real / "elsewhere")
    with pytest.raises(CacheError, match="is a symlink"):
        Store(real)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_foreign_owned_root_and_entry_are_refused(tmp_path: Path) -> None:
    store = Store(tmp_path / "root")
    entry = publish(store)
    os.chown(entry.path, 12345, 12345)
    with pytest.warns(CacheWarning, match="owned by uid 12345"):
        assert store.lookup(make_key()) is None
    os.chown(store.root, 12345, 12345)
    with pytest.raises(CacheError, match="owned by uid 12345"):
        Store(store.root)


@pytest.mark.parametrize(
    "what", ["entry dir writable", "file writable", "entry symlink", "file symlink"]
)
def test_unsafe_entries_are_never_used(tmp_path: Path, what: str) -> None:
    store = Store(tmp_path / "root")
    entry = publish(store)
    if what == "entry dir writable":
        entry.path.chmod(0o777)
    elif what == "file writable":
        entry.file(EXT).chmod(0o666)
    elif what == "entry symlink":
        entry.path.rename(tmp_path / "moved")
        entry.path.symlink_to(tmp_path / "moved")
    else:
        target = entry.file(EXT)
        target.rename(tmp_path / "moved.so")
        target.symlink_to(tmp_path / "moved.so")
    with pytest.warns(CacheWarning, match="writable by group|cannot be opened"):
        assert store.lookup(make_key()) is None


def test_root_deleted_while_running_is_recreated(tmp_path: Path) -> None:
    store = Store(tmp_path / "root")
    publish(store)
    shutil.rmtree(store.root)
    assert store.lookup(make_key()) is None
    assert (store.size(), store.entries(), store.evict(0), store.verify_all()) == (0, [], [], [])
    assert publish(store).path.exists() and store.root.stat().st_mode & 0o777 == 0o700


def test_default_and_private_locations(tmp_path: Path) -> None:
    if sys.platform != "darwin":
        env = {"HOME": "/home/u", "XDG_CACHE_HOME": "/xdg"}
        assert cache.default_cache_dir(env) == Path("/xdg/cuvil_aot")
        env["XDG_CACHE_HOME"] = "relative/ignored"
        assert cache.default_cache_dir(env) == Path("/home/u/.cache/cuvil_aot")
    private = cache.private_store()
    assert private.root.stat().st_mode & 0o777 == 0o700
    assert publish(private).path.is_relative_to(private.root)


# ---- explain ---------------------------------------------------------------------


def test_explain_names_the_changed_components(tmp_path: Path) -> None:
    store = Store(tmp_path)
    assert "no build is recorded" in store.explain("pkg.mod", make_key())
    publish(store)
    assert "only build recorded" in store.explain("pkg.mod", make_key())
    new = make_key(options="opt=3", source="x" * 200, cuda="12.4")
    text = store.explain("pkg.mod", new)
    assert "differs from the newest recorded build" in text
    assert "options: 'opt=2' -> 'opt=3'" in text and "cuda: (absent) -> '12.4'" in text
    assert "source: 'def f(x):\\n    return x + 1\\n' -> <200 chars, sha256" in text
    assert "signatures" not in text
    publish(store, new)
    assert "the newest build" in store.explain("pkg.mod", new) and "cuda" in store.explain(
        "pkg.mod", new
    )
    assert "no build is recorded" in store.explain("other.mod", new)


# ---- loading extensions ----------------------------------------------------------

TINY_C = r"""
#include <Python.h>
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void mark(void) {
    const char *path = getenv("CV_TEST_MARKER");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (f) { fputs("loaded\n", f); fclose(f); }
}
static PyObject *answer(PyObject *self, PyObject *args) { return PyLong_FromLong(ANSWER); }
static PyMethodDef methods[] = {{"answer", answer, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "cv_tiny", NULL, -1, methods};
PyMODINIT_FUNC PyInit_cv_tiny(void) { return PyModule_Create(&def); }
"""
TINY = "cv_tiny" + SUFFIX


@pytest.fixture(scope="module")
def tiny_ext(tmp_path_factory: pytest.TempPathFactory) -> dict[int, bytes]:
    """The tiny extension built with answer() returning 42 and 43."""
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    if shutil.which(cc[0]) is None:
        pytest.skip("no C compiler")
    folder = tmp_path_factory.mktemp("tiny")
    (folder / "tiny.c").write_text(TINY_C)
    built = {}
    for answer in (42, 43):
        out = folder / f"{answer}.so"
        include = sysconfig.get_paths()["include"]
        subprocess.run(
            [
                *cc,
                "-shared",
                "-fPIC",
                f"-DANSWER={answer}",
                f"-I{include}",
                "-o",
                str(out),
                str(folder / "tiny.c"),
            ],
            check=True,
        )
        built[answer] = out.read_bytes()
    return built


@pytest.fixture
def marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CV_TEST_MARKER", str(tmp_path / "marker"))
    return tmp_path / "marker"


def _publish_ext(store: Store, data: bytes, source: str = "tiny") -> cache.Entry:
    return publish(store, make_key(source=source), files={TINY: data})


@pytest.mark.parametrize("proc", [True, False], ids=["proc-fd", "private-copy"])
def test_load_extension_runs_the_verified_file(
    tmp_path: Path,
    tiny_ext: dict[int, bytes],
    marker: Path,
    proc: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not proc:
        monkeypatch.setattr(entry_mod, "_proc_fd_path", lambda fd: None)
    store = Store(tmp_path / "root")
    loaded = []
    for answer in (42, 43):  # two builds of one module name each load their own code
        entry = store.lookup(make_key(source=str(answer))) or _publish_ext(
            store, tiny_ext[answer], str(answer)
        )
        module = entry.load_extension(TINY, "cv_tiny")
        loaded.append(module.answer())
        assert module.__file__ == str(entry.file(TINY))
    sys.modules.pop("cv_tiny", None)  # single-phase init modules put themselves there
    assert loaded == [42, 43] and marker.read_text() == "loaded\n" * 2


@pytest.mark.parametrize("proc", [True, False], ids=["proc-fd", "private-copy"])
def test_file_swapped_after_verification_does_not_change_what_loads(
    tmp_path: Path,
    tiny_ext: dict[int, bytes],
    marker: Path,
    proc: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not proc:
        monkeypatch.setattr(entry_mod, "_proc_fd_path", lambda fd: None)
    entry = _publish_ext(Store(tmp_path / "root"), tiny_ext[42])
    real_exec = entry_mod._exec_extension

    def swap_then_exec(name: str, origin: str, path: Path) -> types.ModuleType:
        swapped = path.with_name("swapped")
        swapped.write_bytes(tiny_ext[43])
        os.rename(swapped, path)  # between the hash check and dlopen
        return real_exec(name, origin, path)

    monkeypatch.setattr(entry_mod, "_exec_extension", swap_then_exec)
    module = entry.load_extension(TINY, "cv_tiny")
    sys.modules.pop("cv_tiny", None)
    assert module.answer() == 42 and entry.file(TINY).read_bytes() == tiny_ext[43]


@pytest.mark.parametrize("proc", [True, False], ids=["proc-fd", "private-copy"])
def test_tampered_extension_is_refused_before_load(
    tmp_path: Path,
    tiny_ext: dict[int, bytes],
    marker: Path,
    proc: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not proc:
        monkeypatch.setattr(entry_mod, "_proc_fd_path", lambda fd: None)
    store = Store(tmp_path / "root")
    _publish_ext(store, tiny_ext[42])
    entry = store.lookup(make_key(source="tiny"))
    assert entry is not None
    rewrite(entry.file(TINY), tiny_ext[43])  # different code, after the lookup verified it
    with pytest.raises(CacheError, match="does not match its SHA-256|the manifest says"):
        entry.load_extension(TINY, "cv_tiny")
    assert not marker.exists()
    with pytest.warns(CacheWarning, match="does not match|the manifest says"):
        assert store.lookup(make_key(source="tiny")) is None
    assert not marker.exists()


# ---- the manifest parser and the code itself ---------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)
GOOD = json.loads(
    mf.Manifest(
        key=make_key().digest,
        components=make_key().components,
        module="pkg.mod",
        created=1.0,
        files={EXT: mf.FileRecord(mf.stored_name(EXT, "a" * 64), "a" * 64, 3)},
        metadata={},
    ).to_json()
)


def _parse_or_cache_error(data: bytes) -> None:
    with contextlib.suppress(CacheError):
        mf.parse_manifest(data)


def test_the_good_document_parses() -> None:
    assert mf.parse_manifest(json.dumps(GOOD).encode()).files[EXT].size == 3


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300) | JSON.map(lambda v: json.dumps(v).encode()))
def test_fuzz_parser_arbitrary_input_raises_only_cache_error(data: bytes) -> None:
    _parse_or_cache_error(data)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(sorted(GOOD)),
    JSON,
    st.sampled_from(["path", "sha256", "size", "x"]),
    st.booleans(),
)
def test_fuzz_parser_mutated_manifest_raises_only_cache_error(
    field: str, value: object, file_field: str, in_file: bool
) -> None:
    doc = json.loads(json.dumps(GOOD))
    if in_file:
        doc["files"][EXT][file_field] = value
    else:
        doc[field] = value
    _parse_or_cache_error(json.dumps(doc).encode())


def test_cache_code_never_uses_pickle_marshal_eval_or_exec() -> None:
    banned_modules = {"pickle", "_pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle"}
    banned_calls = {"eval", "exec", "__import__"}
    for path in sorted((REPO / "cuvil_aot" / "cache").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                names = {(node.module or "").split(".")[0]}
            elif isinstance(node, ast.Name):
                names = {node.id} & banned_calls
            elif isinstance(node, ast.Attribute) and node.attr in banned_calls:
                names = {node.attr}
            else:
                continue
            assert not names & (banned_modules | banned_calls), (
                f"{path.name}:{node.lineno}: {names}"
            )
