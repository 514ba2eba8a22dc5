"""cuvil_aot.cache: concurrent publishers and eviction."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from helpers.cache_store import (
    EXT,
    FORK,
    leftovers,
    make_key,
    needs_fork,
    publish,
    rewrite,
    writer,
)

from cuvil_aot import cache
from cuvil_aot.cache import CacheWarning, Store
from cuvil_aot.cache import entry as entry_mod
from cuvil_aot.cache import lock as lock_mod

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
