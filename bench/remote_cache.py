"""The remote cache tier (issue 25): a second machine's import from the remote against a
local cache hit plus the transfer time, and the transfer size of an entry.

    python bench/remote_cache.py [--runs 11] [--fatbin sm_80,sm_90,compute_90]

A real ``redis-server`` on a loopback port; "machines" are cache directories. Each
number is the median over fresh interpreters of the time ``import mod`` plus the first
call take inside the child (the interpreter and NumPy start-up are the same for all):

- local hit: the entry and its shortcut in the machine's own cache;
- remote, record: an empty cache, the entry and the builder's signed shortcut record on
  the remote (a machine with the same sources and toolchain: no compiler imported);
- the same with ``redis`` (and ``tarfile``) imported before the clock starts: the rest
  of the path (connect, GET, unpack, verify, publish, load);
- remote, full key: an empty cache, only the entry on the remote (the full key imports
  the compiler and asks the C compiler its identity before the lookup);
- transfer: one GET of the entry's blob from this process.

``--fatbin`` also builds the module with GPU code for those targets (needs nvcc) and
reports that entry's blob size and transfer time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MOD = """
import numpy as np
import cuvil_aot as cv


@cv.optimize
def f(x: cv.f32["B", "N"], w: cv.f32["N"]):
    y = x * w + 1.0
    return np.tanh(y) / (1.0 + np.abs(y))
"""
CHILD = """
import sys, time, json
import numpy as np
import cuvil_aot
cuvil_aot.install()
if sys.argv[1:] == ["preload"]:
    import redis, tarfile  # the client's import, apart
started = time.perf_counter()
import mod
mod.f(np.ones((4, 8), np.float32), np.ones(8, np.float32))
took = time.perf_counter() - started
from cuvil_aot.load import artifacts
print(json.dumps({"s": took, "how": artifacts.last_outcome("mod").how}))
"""
KEY = "bench fleet secret, 32 bytes long"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def child(src: Path, cache: Path, env: dict[str, str], *argv: str) -> dict[str, object]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("CUVIL_AOT_")}
    full |= {"PYTHONPATH": str(REPO), "CUVIL_AOT_CACHE_DIR": str(cache),
             "CUVIL_AOT_SIGNING_KEY": KEY, **env}
    proc = subprocess.run([sys.executable, "-c", CHILD, *argv], cwd=src, env=full, text=True,
                          capture_output=True, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    result: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return result


def median_ms(values: list[float]) -> str:
    return f"{1000 * statistics.median(values):7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--fatbin", default="", metavar="ARCHS")
    args = parser.parse_args()
    import redis

    tmp = Path(tempfile.mkdtemp(prefix="cuvil_aot-remote-bench-"))
    port = free_port()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                               "--save", "", "--appendonly", "no", "--dir", str(tmp)],
                              stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        client = redis.Redis(port=port)
        env = {"CUVIL_AOT_REMOTE_CACHE": f"redis://127.0.0.1:{port}/0",
               "CUVIL_AOT_CUDA_ARCHS": "none"}
        src = tmp / "src"
        src.mkdir()
        (src / "mod.py").write_text(textwrap.dedent(MOD))
        built = child(src, tmp / "origin", env)
        assert built["how"] == "built", built
        (entry_key,) = client.keys("cuvil_aot:entry/*")
        (record_key,) = client.keys("cuvil_aot:shortcut/*")
        record = client.get(record_key)
        rows: dict[str, list[float]] = {"local": [], "record": [], "preload": [], "full": [],
                                        "get": []}
        for i in range(args.runs):  # interleaved: load on the machine hits each alike
            hit = child(src, tmp / "origin", env)
            assert hit["how"] == "shortcut", hit
            rows["local"].append(float(hit["s"]))  # type: ignore[arg-type]
            for kind in ("record", "preload", "full"):
                if kind == "full":
                    client.delete(record_key)
                else:
                    client.set(record_key, record)  # type: ignore[arg-type]
                got = child(src, tmp / f"{kind}-{i}", env, *(["preload"] if kind == "preload"
                                                               else []))
                assert got["how"] == "remote", got
                rows[kind].append(float(got["s"]))  # type: ignore[arg-type]
                shutil.rmtree(tmp / f"{kind}-{i}")
            started = time.perf_counter()
            blob = client.get(entry_key)
            rows["get"].append(time.perf_counter() - started)
        size = len(blob or b"")
        local, get = statistics.median(rows["local"]), statistics.median(rows["get"])
        print(f"entry blob (CPU-only, gzipped tar):  {size / 1024:.1f} KiB")
        print(f"local cache hit (import + call):   {median_ms(rows['local'])}")
        print(f"transfer (one GET, loopback):      {median_ms(rows['get'])}")
        for kind, label in (("record", "remote, signed record"),
                            ("preload", "  the same, redis imported before"),
                            ("full", "remote, full key")):
            ratio = statistics.median(rows[kind]) / (local + get)
            print(f"{label + ':':35}{median_ms(rows[kind])}  = {ratio:.2f}x (local hit + "
                  "transfer)")
        if args.fatbin:
            client.flushdb()
            got = child(src, tmp / "fatbin", {**env, "CUVIL_AOT_CUDA_ARCHS": args.fatbin})
            (key,) = client.keys("cuvil_aot:entry/*")
            started = time.perf_counter()
            blob = client.get(key)
            took = time.perf_counter() - started
            raw = sum(p.stat().st_size for p in (tmp / "fatbin" / "entries").rglob("*"))
            print(f"entry with a fatbin ({args.fatbin}): {len(blob or b'') / 1024:.1f} KiB "
                  f"gzipped ({raw / 1024:.1f} KiB on disk), one GET {1000 * took:.1f} ms "
                  f"({got['how']})")
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
