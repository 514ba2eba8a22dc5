"""The remote cache tier (issue 25) against real servers: a ``redis-server`` on a
loopback port and moto's S3 server. A "machine" is a cache directory over the same
sources; every workload runs in a fresh interpreter (helpers/proc.py).

Trust: whatever the remote returns is verified like a local entry, signature
required, before it is published and loaded; a bad blob costs a build and a warning,
never a wrong load. Most checks run in strict mode (CUVIL_AOT_MODE=strict: a miss raises
instead of compiling) so that they cost no build; one shows the build and the repair.
Faults and the stampede are in test_remote_cache_faults.py.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.proc import Workspace
from helpers.remote_servers import (
    KEY,
    MODULES,
    OTHER_KEY,
    Origin,
    Raw,
    Server,
    build_origin,
    machine,
    make_tar,
    read_tar,
    run,
    running,
)

from cuvil_aot.cache import BadEntry, CacheKey, Store
from cuvil_aot.cache.remote import pack, unpack
from cuvil_aot.cache.signing import HmacKey, Policy, signature_doc

STRICT = {"CUVIL_AOT_MODE": "strict"}


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running("redis", tmp_path_factory.mktemp("redis")) as found:
        yield found


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running("s3", tmp_path_factory.mktemp("s3")) as found:
        yield found


_ORIGINS: dict[str, Origin] = {}


def _origin(kind: str, request: pytest.FixtureRequest,
            factory: pytest.TempPathFactory) -> tuple[Server, Origin]:
    """The three modules built once per backend and pushed by an origin machine."""
    server: Server = request.getfixturevalue(f"{kind}_server")
    if kind not in _ORIGINS:
        _ORIGINS[kind] = build_origin(server, factory.mktemp(f"origin-{kind}"))
    return server, _ORIGINS[kind]


@pytest.fixture(scope="module", params=["redis", "s3"])
def both(request: pytest.FixtureRequest,
         tmp_path_factory: pytest.TempPathFactory) -> tuple[Server, Origin]:
    return _origin(request.param, request, tmp_path_factory)


@pytest.fixture(scope="module")
def on_redis(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Origin:
    return _origin("redis", request, tmp_path_factory)[1]


# --- the round trip -----------------------------------------------------------------------


def test_a_second_machine_loads_from_the_remote_and_builds_nothing(
        both: tuple[Server, Origin], tmp_path: Path) -> None:
    server, origin = both
    origin.seed(server, "mod_a")
    second = machine(origin.src, tmp_path, "two", server)
    result, stderr = run(second, "mod_a")
    assert result["how"] == {"mod_a": "remote"} and result["builds"] == 0 and stderr == ""
    digest = origin.blobs["mod_a"][0]
    assert [e.name for e in second.entries()] == [digest]
    assert (second.cache / "entries" / digest / "manifest.sig").exists()  # kept, signed

    assert result["compiler"]  # without the origin's record: the full key decides

    result, _ = run(second, "mod_a")  # now a local hit: no remote client is even imported
    assert result["how"] == {"mod_a": "shortcut"} and not result["redis"] and not result["boto3"]
    if server.kind == "redis":
        assert Raw(server).counters()["hits"] >= 1


def test_a_machine_like_the_builder_loads_without_the_compiler(
        both: tuple[Server, Origin], tmp_path: Path) -> None:
    """The origin's signed record (cheap key and compiler stamp -> full key) lets a
    machine with the same sources and toolchain skip the full key, as a local hit does."""
    server, origin = both
    origin.seed(server, shortcuts=True)
    result, stderr = run(machine(origin.src, tmp_path, "two", server), *MODULES)
    assert set(result["how"].values()) == {"remote"} and not result["compiler"], stderr
    raw = Raw(server)
    (name, data), *_ = origin.shortcuts.items()
    raw.put(f"shortcut/{name}", data.replace(b'"prekey"', b'"prekey" ', 1))  # altered
    for other in list(origin.shortcuts)[1:]:
        raw.put(f"shortcut/{other}", data)  # another module's record under its name
    result, stderr = run(machine(origin.src, tmp_path, "three", server), *MODULES)
    assert set(result["how"].values()) == {"remote"} and result["compiler"], stderr


def test_strict_mode_takes_from_the_remote_and_never_builds(
        both: tuple[Server, Origin], tmp_path: Path) -> None:
    server, origin = both
    origin.seed(server, "mod_a", "mod_b")
    result, stderr = run(machine(origin.src, tmp_path, "strict", server), *MODULES, **STRICT)
    assert result["how"] == {"mod_a": "remote", "mod_b": "remote", "mod_c": "missing"}
    assert result["builds"] == 0 and "CacheWarning" not in stderr


def test_a_reader_with_only_the_public_key_pulls(
        on_redis: Origin, redis_server: Server, tmp_path: Path) -> None:
    pytest.importorskip("cryptography")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    private = ed25519.Ed25519PrivateKey.generate()
    (tmp_path / "key.pem").write_bytes(private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    (tmp_path / "pub.pem").write_bytes(private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    Raw(redis_server).flush()
    builder = machine(on_redis.src, tmp_path, "builder", redis_server,
                      CUVIL_AOT_SIGNING_KEY=f"ed25519:{tmp_path / 'key.pem'}")
    assert run(builder, "mod_a")[0]["how"] == {"mod_a": "built"}
    reader = machine(on_redis.src, tmp_path, "reader", redis_server,
                     CUVIL_AOT_VERIFY_KEY=f"ed25519:{tmp_path / 'pub.pem'}")
    reader.extra_env.pop("CUVIL_AOT_SIGNING_KEY")
    result, stderr = run(reader, "mod_a", **STRICT)
    assert result["how"] == {"mod_a": "remote"} and stderr == ""


def test_without_a_signing_key_the_remote_is_off_with_one_warning(
        on_redis: Origin, redis_server: Server, tmp_path: Path) -> None:
    on_redis.seed(redis_server)
    ws = machine(on_redis.src, tmp_path, "unsigned", redis_server)
    ws.extra_env.pop("CUVIL_AOT_SIGNING_KEY")
    result, stderr = run(ws, "mod_a", "mod_b", **STRICT)
    assert result["how"] == {"mod_a": "missing", "mod_b": "missing"}  # not taken unchecked
    assert stderr.count("CacheWarning") == 1 and "is off" in stderr
    assert "CUVIL_AOT_SIGNING_KEY" in stderr


# --- what the remote returns is verified ----------------------------------------------------


def _flip(blob: bytes) -> bytes:
    middle = len(blob) // 2
    return blob[:middle] + bytes([blob[middle] ^ 0xFF]) + blob[middle + 1:]


def _with(change: Callable[[dict[str, bytes]], object]) -> Callable[[bytes], bytes]:
    def rewrite(blob: bytes) -> bytes:
        files = read_tar(blob)
        change(files)
        return make_tar(dict(files))

    return rewrite


def _replant(files: dict[str, bytes]) -> None:
    """The same manifest and signature, another library under the extension's name."""
    so = next(n for n in files if n.endswith(".so"))
    files[so] = files[so][:-64] + b"\0" * 64


def _resign(files: dict[str, bytes]) -> None:
    files["manifest.sig"] = signature_doc(HmacKey(OTHER_KEY.encode()), files["manifest.json"])


def _extra(files: dict[str, bytes]) -> None:
    files["0123456789abcdef-planted.so"] = b"\x7fELF"


BREAKS: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "flipped": (_flip, "holds an unusable entry"),  # a deflate, CRC or hash error
    "truncated": (lambda b: b[: len(b) // 3], "not a whole entry"),
    "garbage": (lambda b: b"\x1f\x8b garbage, not a tar" * 40, "not a whole entry"),
    "empty": (lambda b: b"", "not a whole entry"),
    "replanted": (_with(_replant), "does not match its SHA-256"),
    "unsigned": (_with(lambda f: f.pop("manifest.sig")), "it is not signed"),
    "other-signer": (_with(_resign), "signed by an unknown key"),
    "extra-file": (_with(_extra), "does not list"),
    "traversal": (lambda b: make_tar({"../../escaped": b"x"}), "a member named"),
    "symlink": (lambda b: make_tar({}, **{"manifest.json": "/etc/passwd"}), "not a regular"),
}


@pytest.mark.parametrize("how", sorted(BREAKS))
def test_a_broken_remote_value_is_refused_with_a_warning(
        on_redis: Origin, redis_server: Server, tmp_path: Path, how: str) -> None:
    on_redis.seed(redis_server)
    digest, good = on_redis.blobs["mod_a"]
    breaker, message = BREAKS[how]
    Raw(redis_server).put(f"entry/{digest}", breaker(good))
    ws = machine(on_redis.src, tmp_path, "two", redis_server)
    result, stderr = run(ws, "mod_a", "mod_b", **STRICT)
    assert result["how"] == {"mod_a": "missing", "mod_b": "remote"}, stderr
    assert stderr.count("holds an unusable entry") == 1
    assert message in stderr, stderr
    assert not (tmp_path / "escaped").exists() and not (on_redis.src.root / "escaped").exists()
    assert [p.name for p in (ws.cache / "tmp").iterdir()] == []  # nothing left of the blob
    assert [e.name for e in ws.entries()] == [on_redis.blobs["mod_b"][0]]


def test_a_broken_value_costs_one_build_which_repairs_the_remote(
        both: tuple[Server, Origin], tmp_path: Path) -> None:
    server, origin = both
    origin.seed(server)
    raw = Raw(server)
    (digest_a, good_a), (digest_b, good_b) = origin.blobs["mod_a"], origin.blobs["mod_b"]
    raw.put(f"entry/{digest_a}", good_b)  # swapped: each key holds the other's entry
    raw.put(f"entry/{digest_b}", good_a[: len(good_a) // 2])  # and a truncated one
    result, stderr = run(machine(origin.src, tmp_path, "two", server), "mod_a", "mod_b")
    assert result["how"] == {"mod_a": "built", "mod_b": "built"} and result["builds"] == 2
    assert stderr.count("holds an unusable entry") == 2 and "is for key" in stderr
    repaired = raw.get(f"entry/{digest_a}")  # the build pushed a good one over it
    assert repaired is not None
    manifest = json.loads(read_tar(repaired)["manifest.json"])
    assert manifest["key"] == digest_a
    result, stderr = run(machine(origin.src, tmp_path, "three", server), "mod_a", "mod_b",
                         **STRICT)
    assert result["how"] == {"mod_a": "remote", "mod_b": "remote"} and stderr == ""


# --- the blob format, without a server ------------------------------------------------------


def _twice(name: str) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for data in (b"1", b"2"):
            info = tarfile.TarInfo(name)
            info.size = 1
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_pack_and_unpack_round_trip_and_refuse_unsafe_members(tmp_path: Path) -> None:
    rules = Policy(HmacKey(KEY.encode()), (HmacKey(KEY.encode()),), False)
    store = Store(tmp_path / "store", rules=rules)
    key = CacheKey({"module": "m", "source": "x"})
    store.publish(key, lambda folder: (folder / "m.so").write_bytes(b"\x7fELF" * 100) and {},
                  "m")
    entry = store.lookup(key)
    assert entry is not None
    blob = pack(entry, store.rules._replace(required=True))
    other = Store(tmp_path / "other", rules=store.rules)
    adopted = other.adopt(key, lambda folder: unpack(blob, folder))
    assert adopted.manifest == entry.manifest and other.lookup(key) is not None
    unsafe = {
        "absolute": make_tar({"/tmp/x": b"1"}),
        "dotdot": make_tar({"..": b"1"}),
        "nested": make_tar({"a/b": b"1"}),
        "directory": make_tar({"folder": None}),
        "duplicate": _twice("manifest.json"),
        "plain-tar": make_tar({"manifest.json": b"{}"}, gz=False),
        "no-manifest": make_tar({"a.so": b"1"}),
    }
    for why, data in unsafe.items():
        folder = tmp_path / why
        folder.mkdir()
        with pytest.raises(BadEntry):
            unpack(data, folder)
    with pytest.raises(BadEntry, match="over"):
        unpack(blob, tmp_path / "no-manifest", limit=10)
    with pytest.raises(BadEntry, match="not signed"):  # unsigned: never adopted
        Store(tmp_path / "third", rules=rules).adopt(key, lambda folder: unpack(
            make_tar({n: d for n, d in read_tar(blob).items() if n != "manifest.sig"}), folder))


def test_the_remote_clients_are_not_imported_by_cuvil_aot(tmp_path: Path) -> None:
    code = textwrap.dedent("""
        import sys, cuvil_aot, cuvil_aot.load.artifacts
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("redis", "boto3",
              "botocore", "tarfile") or m.startswith("cuvil_aot.cache.remote")))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=Workspace.create(tmp_path).env(), check=True).stdout
    assert out.strip() == "[]"


def test_cache_push_pull_and_info(on_redis: Origin, redis_server: Server, tmp_path: Path) -> None:
    raw = Raw(redis_server)
    raw.flush()
    origin = machine(on_redis.src, on_redis.src.root.parent, "origin", redis_server)
    pushed = origin.cli("cache", "push", "--all")
    assert pushed.returncode == 0 and "3 of 3 entries pushed" in pushed.stdout, pushed.stderr
    assert len(raw.entries()) == 3
    reader = machine(on_redis.src, tmp_path, "reader", redis_server)
    digest = on_redis.blobs["mod_b"][0]
    pulled = reader.cli("cache", "pull", digest[:12])
    assert pulled.returncode == 0 and f"pulled {digest[:16]}  mod_b" in pulled.stdout
    assert [e.name for e in reader.entries()] == [digest]
    assert reader.cli("cache", "pull", "mod_c").returncode == 0  # by module: the full key
    info = reader.cli("cache", "info")
    assert "entries:       3" in info.stdout and "2 hits, 0 misses" in info.stdout, info.stdout
    down = reader.cli("cache", "info", CUVIL_AOT_REMOTE_CACHE="redis://127.0.0.1:1/0")
    assert down.returncode == 1 and "failed" in down.stderr
