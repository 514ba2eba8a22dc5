"""The remote cache tier under faults, and a stampede (issue 25), against real servers.

Faults: the remote down, killed between two imports, paused (SIGSTOP: the timeout),
full (Redis ``maxmemory`` with ``noeviction``), or dropping the connection in the middle
of a reply. Each import still succeeds by building locally, with one warning per
process. The stampede: 8 processes in 4 cache directories ("machines") import the same
3 uncached modules at once; each key is built once across all of them.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from helpers.proc import Workspace, last_json
from helpers.remote_servers import (
    CHILD,
    EXPECT,
    MODULES,
    Raw,
    Server,
    free_port,
    machine,
    run,
    running,
    write_modules,
)


@pytest.fixture
def src(tmp_path: Path) -> Workspace:
    ws = Workspace.create(tmp_path)
    write_modules(ws)
    return ws


def one_warning(stderr: str, *words: str) -> None:
    assert stderr.count("CacheWarning") == 1, stderr
    assert all(w in stderr for w in words), stderr


# --- faults ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["redis", "s3"])
def test_a_remote_that_is_down_costs_builds_and_one_warning(
        src: Workspace, tmp_path: Path, kind: str) -> None:
    port = free_port()  # nothing listens there
    env = ({"CUVIL_AOT_REMOTE_CACHE": f"redis://127.0.0.1:{port}/0"} if kind == "redis" else
           {"CUVIL_AOT_REMOTE_CACHE": "s3://cuvil-cache/fleet", "AWS_ACCESS_KEY_ID": "x",
            "AWS_SECRET_ACCESS_KEY": "y", "AWS_DEFAULT_REGION": "us-east-1",
            "CUVIL_AOT_REMOTE_CACHE_ENDPOINT": f"http://127.0.0.1:{port}"})
    result, stderr = run(machine(src, tmp_path, "one", None, **env), "mod_a", "mod_b")
    assert result["how"] == {"mod_a": "built", "mod_b": "built"}
    one_warning(stderr, "carries on without it")


def test_a_server_killed_between_two_imports(src: Workspace, tmp_path: Path) -> None:
    with running("redis", tmp_path / "redis") as server:
        run(machine(src, tmp_path, "origin", server), "mod_a")
        ws = machine(src, tmp_path, "two", server)
        result, stderr = run(ws, "mod_a", f"kill:{server.proc.pid}", "mod_b")
    assert result["how"] == {"mod_a": "remote", "mod_b": "built"}
    one_warning(stderr, "failed to read")


def test_a_paused_server_times_out(src: Workspace, tmp_path: Path) -> None:
    with running("redis", tmp_path / "redis") as server:
        server.pause()
        try:
            ws = machine(src, tmp_path, "one", server, CUVIL_AOT_REMOTE_CACHE_TIMEOUT="0.3")
            result, stderr = run(ws, "mod_a", "mod_b")
        finally:
            server.resume()
    assert result["how"] == {"mod_a": "built", "mod_b": "built"}
    one_warning(stderr, "timed out")


def test_a_full_server_still_serves_and_builds_are_not_shared(
        src: Workspace, tmp_path: Path) -> None:
    import redis

    with running("redis", tmp_path / "redis", "--maxmemory", "4mb",
                 "--maxmemory-policy", "noeviction") as server:
        run(machine(src, tmp_path, "origin", server), "mod_a")  # pushed while there is room
        client = redis.Redis(port=server.port)
        with pytest.raises(redis.ResponseError, match="maxmemory"):
            for i in range(200):
                client.set(f"junk:{i}", b"x" * 100_000)
        client.config_set("maxmemory", "1mb")  # and it stays full
        result, stderr = run(machine(src, tmp_path, "two", server), "mod_a", "mod_b")
    assert result["how"] == {"mod_a": "remote", "mod_b": "built"}
    one_warning(stderr, "is full", "not shared")


class Flapping:
    """A 'Redis' that answers every command with the start of a long reply, then hangs
    up: the connection drops in the middle of a transfer."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.served = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(b"$1000000\r\n" + b"\x1f\x8b" + b"\0" * 5000)
                self.served += 1


def test_a_connection_dropped_mid_transfer(src: Workspace, tmp_path: Path) -> None:
    fake = Flapping()
    try:
        ws = machine(src, tmp_path, "one", None,
                     CUVIL_AOT_REMOTE_CACHE=f"redis://127.0.0.1:{fake.port}/0")
        result, stderr = run(ws, "mod_a", "mod_b")
    finally:
        fake.sock.close()
    assert result["how"] == {"mod_a": "built", "mod_b": "built"} and fake.served == 1
    one_warning(stderr, "failed to read")


# --- the stampede ------------------------------------------------------------------------

RACER = """
import os, sys, time
ready, go = sys.argv[1], sys.argv[2]
open(os.path.join(ready, str(os.getpid())), "w").close()
while not os.path.exists(go):
    time.sleep(0.005)
sys.argv[1:] = sys.argv[3:]
""" + CHILD


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["redis", "s3"])
def test_stampede_8_processes_on_4_machines_build_each_key_once(
        src: Workspace, tmp_path: Path, kind: str) -> None:
    with running(kind, tmp_path / "server") as server:
        results = _stampede(src, tmp_path, server)
        stored = Raw(server).entries()
    builds = Counter(name for r in results for name, how in r["how"].items() if how == "built")
    assert sum(r["builds"] for r in results) == len(MODULES)
    assert builds == Counter(list(MODULES)), builds  # each key once, across all 8
    assert all(r["out"] == EXPECT for r in results)
    assert len(stored) == len(MODULES)


def _stampede(src: Workspace, tmp_path: Path, server: Server) -> list[dict]:
    ready, go = tmp_path / "ready", tmp_path / "go"
    ready.mkdir()
    procs = []
    for i in range(8):
        ws = machine(src, tmp_path, f"m{i % 4}", server)
        procs.append(subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(RACER), str(ready), str(go), *MODULES],
            cwd=ws.root, env=ws.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True))
    deadline = time.monotonic() + 60
    while len(list(ready.iterdir())) < len(procs) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()  # the barrier: all 8 are waiting on it
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert "CacheWarning" not in err, err
        results.append(last_json(subprocess.CompletedProcess(proc.args, proc.returncode,
                                                             out, err)))
    return results
