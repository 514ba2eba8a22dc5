"""Real servers for the remote cache tests (tests/test_remote_cache*.py): a
``redis-server`` and moto's S3 server, each a child process on a loopback port, and
the environment a child process needs to use them."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from .proc import Workspace, last_json

KEY = "a fleet-wide secret, 32 bytes ok"
OTHER_KEY = "another secret, not the fleet's"
BUCKET = "cuvil-cache"
S3_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
          "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port}")


@dataclass
class Server:
    kind: str
    proc: subprocess.Popen[bytes]
    port: int
    url: str
    env: dict[str, str]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
        self.proc.wait(10)

    def pause(self) -> None:
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)


def redis_binary() -> str:
    found = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server") else None)
    if found is None:
        pytest.skip("redis-server is not installed (apt-get install -y redis-server; "
                    ".ci/run installs it, so CI never skips this)")
    return found


def start_redis(folder: Path, *extra: str) -> Server:
    port = free_port()
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(folder), "--protected-mode", "no", *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_port(port, proc, "redis-server")
    url = f"redis://127.0.0.1:{port}/0"
    return Server("redis", proc, port, url, {"CUVIL_AOT_REMOTE_CACHE": url})


def start_s3() -> Server:
    pytest.importorskip("moto", reason="moto[server] is not installed (the test extra)")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from moto.server import main; main()", "-H", "127.0.0.1",
         "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, **S3_ENV})
    _wait_port(port, proc, "moto S3 server")
    endpoint = f"http://127.0.0.1:{port}"
    import boto3

    boto3.client("s3", endpoint_url=endpoint, **_creds()).create_bucket(Bucket=BUCKET)
    url = f"s3://{BUCKET}/fleet"
    return Server("s3", proc, port, url, {"CUVIL_AOT_REMOTE_CACHE": url,
                                          "CUVIL_AOT_REMOTE_CACHE_ENDPOINT": endpoint, **S3_ENV})


def _creds() -> dict[str, str]:
    return {"aws_access_key_id": "testing", "aws_secret_access_key": "testing",
            "region_name": "us-east-1"}


@contextlib.contextmanager
def running(kind: str, folder: Path, *extra: str) -> Iterator[Server]:
    server = start_redis(folder, *extra) if kind == "redis" else start_s3()
    try:
        yield server
    finally:
        server.stop()


class Raw:
    """The stored values of a server, read and written as the tests break them."""

    def __init__(self, server: Server) -> None:
        self.server = server
        if server.kind == "redis":
            import redis

            self._redis = redis.Redis(port=server.port)
        else:
            import boto3

            endpoint = server.env["CUVIL_AOT_REMOTE_CACHE_ENDPOINT"]
            self._s3 = boto3.client("s3", endpoint_url=endpoint, **_creds())

    def _name(self, name: str) -> str:
        return ("cuvil_aot:" if self.server.kind == "redis" else "fleet/") + name

    def get(self, name: str) -> bytes | None:
        if self.server.kind == "redis":
            value = self._redis.get(self._name(name))
            return None if value is None else bytes(value)
        try:
            return bytes(self._s3.get_object(Bucket=BUCKET, Key=self._name(name))["Body"].read())
        except self._s3.exceptions.NoSuchKey:
            return None

    def put(self, name: str, data: bytes) -> None:
        if self.server.kind == "redis":
            self._redis.set(self._name(name), data)
        else:
            self._s3.put_object(Bucket=BUCKET, Key=self._name(name), Body=data)

    def entries(self, kind: str = "entry") -> list[str]:
        """The names stored under ``kind/`` (entry: key digests; shortcut: records)."""
        if self.server.kind == "redis":
            return sorted(k.decode().rsplit("/", 1)[1]
                          for k in self._redis.scan_iter(match=f"cuvil_aot:{kind}/*"))
        listing = self._s3.list_objects_v2(Bucket=BUCKET, Prefix=f"fleet/{kind}/")
        return sorted(o["Key"].rsplit("/", 1)[1] for o in listing.get("Contents", []))

    def counters(self) -> dict[str, int]:
        if self.server.kind != "redis":
            return {}
        return {k.decode(): int(v) for k, v in self._redis.hgetall("cuvil_aot:stats").items()}

    def flush(self) -> None:
        if self.server.kind == "redis":
            self._redis.flushdb()
            return
        listing = self._s3.list_objects_v2(Bucket=BUCKET, Prefix="fleet/")
        for obj in listing.get("Contents", []):
            self._s3.delete_object(Bucket=BUCKET, Key=obj["Key"])


MODULES = {
    "mod_a": "x * 2.0 + 1.0",
    "mod_b": "x - 3.0",
    "mod_c": "x * x + 0.5",
}
X = np.arange(6, dtype=np.float32)
EXPECT = {name: eval(expr, {"x": X}).tolist() for name, expr in MODULES.items()}

CHILD = """
import json, sys
import numpy as np
import cuvil_aot
cuvil_aot.install()
from cuvil_aot import cache
from cuvil_aot.load import artifacts
out, how = {}, {}
for name in sys.argv[1:]:
    if name.startswith("kill:"):  # the server dies between two imports
        import os, signal
        os.kill(int(name[5:]), signal.SIGKILL)
        continue
    try:
        mod = __import__(name)
    except ImportError as exc:  # strict mode: MissingExtension
        out[name], how[name] = None, "missing"
        continue
    out[name] = np.asarray(mod.f(np.arange(6, dtype=np.float32))).tolist()
    how[name] = artifacts.last_outcome(name).how
print(json.dumps({"out": out, "how": how, "builds": cache.stats().builds,
                  "compiler": "cuvil_aot.compiler.pipeline" in sys.modules,
                  "redis": "redis" in sys.modules, "boto3": "boto3" in sys.modules}))
"""


def write_modules(ws: Workspace, names: tuple[str, ...] = tuple(MODULES)) -> None:
    for name in names:
        ws.write(f"{name}.py", f"""
            import numpy as np
            import cuvil_aot as cv


            @cv.optimize
            def f(x: cv.f32["N"]):
                return {MODULES[name]}
            """)


def machine(src: Workspace, tmp: Path, name: str, server: Server | None,
            **env: str) -> Workspace:
    """Another machine: the same sources, its own empty cache, the remote set, signing."""
    extra = {"CUVIL_AOT_SIGNING_KEY": KEY, **(server.env if server else {}), **env}
    return Workspace(src.root, tmp / f"cache-{name}", extra)


def run(ws: Workspace, *modules: str, **env: str) -> tuple[dict[str, Any], str]:
    """Import ``modules`` in a child (in order) and call each; every one that loads must
    compute the right thing."""
    proc = ws.run(CHILD, *modules, **env)
    result = last_json(proc)
    for name in modules:
        if name in result["how"] and result["how"][name] != "missing":
            assert result["out"][name] == EXPECT[name], (name, result, proc.stderr)
    return result, proc.stderr


@dataclass
class Origin:
    """The modules built once on a first machine: its workspace and each key's blob."""

    src: Workspace
    blobs: dict[str, tuple[str, bytes]]
    """module -> (key digest, the blob it pushed)."""
    shortcuts: dict[str, bytes]
    """The signed records (cheap key -> full key) it pushed, by name."""

    def seed(self, server: Server, *modules: str, shortcuts: bool = False) -> None:
        """An empty remote holding the origin's entries of ``modules`` (default all), and
        with ``shortcuts`` its records (else a second machine computes the full key)."""
        raw = Raw(server)
        raw.flush()
        for name in modules or tuple(self.blobs):
            digest, blob = self.blobs[name]
            raw.put(f"entry/{digest}", blob)
        for name, data in self.shortcuts.items() if shortcuts else ():
            raw.put(f"shortcut/{name}", data)


def build_origin(server: Server, folder: Path) -> Origin:
    Raw(server).flush()
    src = Workspace.create(folder)
    write_modules(src)
    first = machine(src, folder, "origin", server)
    result, stderr = run(first, *MODULES)
    assert set(result["how"].values()) == {"built"} and stderr == "", stderr
    raw = Raw(server)
    blobs = {}
    for entry in first.entries():
        module = json.loads((entry / "manifest.json").read_bytes())["module"]
        blob = raw.get(f"entry/{entry.name}")
        assert blob is not None, f"{module} was not pushed"
        blobs[module] = (entry.name, blob)
    records = {name: raw.get(f"shortcut/{name}") for name in raw.entries("shortcut")}
    assert len(records) == len(MODULES)
    return Origin(src, blobs, {n: d for n, d in records.items() if d is not None})


def make_tar(members: dict[str, bytes | None], gz: bool = True, **links: str) -> bytes:
    """A tar of ``members`` (None: a directory), plus symlinks ``links`` (name -> target)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz" if gz else "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        for name, target in links.items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return out.getvalue()


def read_tar(blob: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar  # type: ignore[union-attr]
                if m.isreg()}
