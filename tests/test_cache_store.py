"""cuvil_aot.cache: keys, hits and misses, corrupted entries, failed and killed builds.

Each test uses its own tmp_path as the cache root.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from helpers.cache_store import (
    EXT,
    SUFFIX,
    leftovers,
    make_key,
    needs_fork,
    publish,
    rewrite,
    run_child,
)

from cuvil_aot import cache
from cuvil_aot.cache import CacheError, CacheKey, CacheWarning, Store
from cuvil_aot.cache import index as index_mod
from cuvil_aot.cache import manifest as mf
from cuvil_aot.cache import store as store_mod

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
        import sys
        sys.path.insert(0, {str(Path(cache.__file__).resolve().parents[2])!r})
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
