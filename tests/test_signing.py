"""Signed cache entries and ``python -m cuvil_aot verify`` (issue 4, item 14).

HMAC-SHA-256 always; Ed25519 only where the ``cryptography`` package is installed
(those tests skip otherwise). The planted-library proof is as in test_security.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import plant as pl
from helpers import wheels as W
from helpers.entries import EXPECT, build_origin, entry_of, fresh
from helpers.proc import HOOK, REPO, Workspace, last_json, probe
from hypothesis import given, settings
from hypothesis import strategies as st

from cuvil_aot.cache import CacheError, signing

KEY = "correct horse battery staple 42"
OTHER = "another secret, not the one used"
LOGGED = probe(setup=pl.DLOPEN_LOG + HOOK)


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """Both modules built and signed with KEY."""
    return build_origin(tmp_path_factory.mktemp("signed"), CUVIL_AOT_SIGNING_KEY=KEY)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    if pl.compiler() is None:
        pytest.skip("no C compiler to build the planted library")
    return pl.build_plant(tmp_path_factory.mktemp("plant"))


def run_logged(ws: Workspace, tmp: Path, **env: str) -> tuple[dict, str, Path]:
    marker, log = tmp / "marker", tmp / "dlopen.log"
    proc = ws.run(LOGGED, **{pl.MARKER_ENV: str(marker), pl.LOG_ENV: str(log)}, **env)
    return last_json(proc), proc.stderr, marker


def test_signed_entries_hit_and_unsigned_ones_are_refused_then_rebuilt_signed(
        signed: Workspace, tmp_path: Path) -> None:
    ws = fresh(signed, tmp_path)
    assert (entry_of(ws, "mod") / signing.SIG_FILE).exists()
    required = {"CUVIL_AOT_SIGNING_KEY": KEY, "CUVIL_AOT_REQUIRE_SIGNED": "1"}
    hit = last_json(proc := ws.run(probe(), **required))
    assert hit["how"] == "shortcut" and hit["builds"] == 0 and proc.stderr == ""
    (entry_of(ws, "mod") / signing.SIG_FILE).unlink()  # now an unsigned entry
    result, stderr, _ = run_logged(ws, tmp_path, **required)
    assert result["out"] == EXPECT and result["how"] == "built"
    assert "refused by the signing policy: it is not signed" in stderr
    assert (entry_of(ws, "mod") / signing.SIG_FILE).exists()  # rebuilt, signed
    result, stderr, _ = run_logged(ws, tmp_path, CUVIL_AOT_SIGNING_KEY=OTHER,
                                   CUVIL_AOT_REQUIRE_SIGNED="1")
    assert result["how"] == "built" and "signed by an unknown key" in stderr


@pytest.mark.parametrize("required", [True, False], ids=["required", "key-only"])
def test_planted_entry_with_a_stale_signature_is_never_loaded(
        signed: Workspace, planted: bytes, tmp_path: Path, required: bool) -> None:
    ws = fresh(signed, tmp_path)
    pl.plant(entry_of(ws, "mod"), planted)  # manifest rewritten: the signature no longer fits
    env = {"CUVIL_AOT_SIGNING_KEY": KEY} | ({"CUVIL_AOT_REQUIRE_SIGNED": "1"} if required else {})
    result, stderr, marker = run_logged(ws, tmp_path, **env)
    assert result["out"] == EXPECT and result["how"] == "built"
    assert not marker.exists(), "the planted library was loaded"
    assert "does not match its manifest" in stderr


def test_unsigned_planted_entry_is_refused_when_signatures_are_required(
        signed: Workspace, planted: bytes, tmp_path: Path) -> None:
    ws = fresh(signed, tmp_path)
    entry = entry_of(ws, "mod")
    pl.plant(entry, planted)
    (entry / signing.SIG_FILE).unlink()
    result, stderr, marker = run_logged(ws, tmp_path, CUVIL_AOT_SIGNING_KEY=KEY,
                                        CUVIL_AOT_REQUIRE_SIGNED="1")
    assert result["how"] == "built" and not marker.exists()
    assert "it is not signed" in stderr


def test_require_signed_without_a_key_is_a_clear_error(signed: Workspace) -> None:
    proc = signed.run(probe(), CUVIL_AOT_REQUIRE_SIGNED="1")
    assert proc.returncode != 0 and "needs CUVIL_AOT_SIGNING_KEY" in proc.stderr


# ---- Ed25519 ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ed25519_keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    crypto = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.ed25519",
                                 reason="Ed25519 signing needs the optional 'cryptography'")
    from cryptography.hazmat.primitives import serialization as ser

    private = crypto.Ed25519PrivateKey.generate()
    folder = tmp_path_factory.mktemp("keys")
    (folder / "private.pem").write_bytes(private.private_bytes(
        ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption()))
    (folder / "public.pem").write_bytes(private.public_key().public_bytes(
        ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo))
    return folder / "private.pem", folder / "public.pem"


def test_ed25519_readers_verify_with_the_public_key_only(
        ed25519_keys: tuple[Path, Path], planted: bytes, tmp_path: Path) -> None:
    private, public = ed25519_keys
    ws = build_origin(tmp_path / "origin", CUVIL_AOT_SIGNING_KEY=f"ed25519:{private}")
    reader = {"CUVIL_AOT_VERIFY_KEY": f"ed25519:{public}", "CUVIL_AOT_REQUIRE_SIGNED": "1"}
    hit = last_json(ws.run(probe(), **reader))
    assert hit["how"] == "shortcut" and hit["builds"] == 0
    pl.plant(entry_of(ws, "mod"), planted)
    result, stderr, marker = run_logged(ws, tmp_path, **reader)
    # A reader cannot sign, so it does not publish into a cache that requires signatures:
    # it builds privately, once, and says so.
    assert result["out"] == EXPECT and result["how"] == "built" and not marker.exists()
    assert "does not match its manifest" in stderr and "using a private cache" in stderr


# ---- the signature format, in process -----------------------------------------------------


def test_hmac_signatures_are_bound_to_key_and_bytes() -> None:
    key, other = signing.HmacKey(KEY.encode()), signing.HmacKey(OTHER.encode())
    rules = signing.Policy(key, (key,), required=True)
    doc = signing.signature_doc(key, b"manifest")
    assert signing.check(rules, b"manifest", doc) is None
    assert "does not match" in (signing.check(rules, b"manifest!", doc) or "")
    assert "unknown key" in (signing.check(rules, b"manifest",
                                           signing.signature_doc(other, b"manifest")) or "")
    assert "not signed" in (signing.check(rules, b"manifest", None) or "")
    assert signing.check(rules._replace(required=False), b"manifest", None) is None
    with pytest.raises(CacheError, match="at least 16 bytes"):
        signing.HmacKey(b"short")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400) | st.dictionaries(st.sampled_from(
    ["format", "schema", "alg", "key_id", "signature", "x"]), st.text(max_size=70) | st.integers(),
    max_size=6).map(lambda d: json.dumps(d).encode()))
def test_fuzz_signature_file_is_only_ever_a_reason(data: bytes) -> None:
    key = signing.HmacKey(KEY.encode())
    reason = signing.check(signing.Policy(key, (key,), True), b"manifest", data)
    assert isinstance(reason, str)


# ---- python -m cuvil_aot verify -----------------------------------------------------------


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample project's wheel, built by cuvil_aot's backend and pip-installed into a
    target directory."""
    pytest.importorskip("flit_core", reason="the sample project builds with flit-core "
                        "(in the test extra)")
    tmp = tmp_path_factory.mktemp("wheel")
    env = W.clean_env(tmp / "cache")
    wheel = W.build_wheel("pip", W.make_project(tmp / "proj", "flit_core"), tmp / "out", env)
    proc = W.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                  "--target", str(tmp / "site"), str(wheel)],
                 {k: v for k, v in env.items() if k != "PYTHONPATH"})
    assert proc.returncode == 0, proc.stderr
    return tmp / "site"


def verify(site: Path, *names: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": f"{site}:{REPO}", "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "cuvil_aot", "verify", *names], env=env,
                          capture_output=True, text=True, timeout=120)


def _record_rows(site: Path) -> list[list[str]]:
    return [line.split(",") for line in (site / "cvsample-1.0.dist-info" / "RECORD")
            .read_text().splitlines()]


def _tamper(site: Path, how: str) -> None:
    ext = next((site / "cvsample").glob("ops.cuvil_aot.*.so"))
    record = site / "cvsample-1.0.dist-info" / "RECORD"
    if how == "extension bytes":
        data = bytearray(ext.read_bytes())
        data[len(data) // 2] ^= 0xFF
        ext.write_bytes(bytes(data))
    elif how == "extension removed":
        ext.unlink()
    elif how == "unlisted in RECORD":
        rows = [r for r in _record_rows(site) if not r[0].endswith(ext.name)]
        record.write_text("".join(",".join(r) + "\n" for r in rows))
    elif how == "prebuilt manifest":
        manifest = ext.parent / "ops.cuvil_aot.json"
        doc = json.loads(manifest.read_text())
        doc["sha256"] = "0" * 64
        manifest.write_text(json.dumps(doc))


def test_verify_passes_on_the_installed_wheel(installed: Path) -> None:
    proc = verify(installed)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("OK  cvsample 1.0: 2 compiled module(s)")
    assert verify(installed, "cvsample").returncode == 0
    assert verify(installed, "no-such-dist").returncode == 1


@pytest.mark.parametrize("how", ["extension bytes", "extension removed", "unlisted in RECORD",
                                 "prebuilt manifest"])
def test_verify_finds_tampering(installed: Path, tmp_path: Path, how: str) -> None:
    site = tmp_path / "site"
    shutil.copytree(installed, site)
    _tamper(site, how)
    proc = verify(site, "cvsample")
    assert proc.returncode == 1 and proc.stdout.startswith("BAD cvsample 1.0"), proc.stdout
