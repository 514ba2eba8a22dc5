"""Optional signatures over entry manifests, for shared or remote caches.

The manifest names every file of an entry with its SHA-256, so a signature over the
manifest's bytes covers the whole entry. An entry signed at publish time has a
``manifest.sig`` next to its manifest:

    {"format": "cuvil_aot.cache.signature", "schema": 1, "alg": "hmac-sha256",
     "key_id": "<16 hex>", "signature": "<hex>"}

Two kinds of key:

- ``HmacKey``: HMAC-SHA-256 with a shared secret (``CUVIL_AOT_SIGNING_KEY``). Whoever
  can verify can also sign.
- ``Ed25519Key``: through the ``cryptography`` package, when it is installed. A
  reader given only the public key (``CUVIL_AOT_VERIFY_KEY``) can verify, not sign.

A ``Policy`` says which key signs new entries, which keys are trusted, and whether an
entry without a valid signature from a trusted key is refused. See SECURITY.md for
what this protects against and what it does not.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

from .errors import CacheError
from .manifest import load_json

SIG_FILE = "manifest.sig"
FORMAT = "cuvil_aot.cache.signature"
MAX_BYTES = 4096
_DOMAIN = b"cuvil_aot.cache.entry.v1\0"  # a signature made for anything else never fits
_HEX = re.compile(r"[0-9a-f]{1,1024}")


class Key(Protocol):
    alg: str
    key_id: str

    def sign(self, data: bytes) -> str: ...

    def verify(self, data: bytes, signature: str) -> bool: ...


class HmacKey:
    """HMAC-SHA-256 with a shared secret."""

    alg = "hmac-sha256"

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 16:
            raise CacheError("an HMAC signing key must be at least 16 bytes")
        self._secret = secret
        self.key_id = hashlib.sha256(b"cuvil_aot key id\0" + secret).hexdigest()[:16]

    def sign(self, data: bytes) -> str:
        return hmac.new(self._secret, _DOMAIN + data, hashlib.sha256).hexdigest()

    def verify(self, data: bytes, signature: str) -> bool:
        return hmac.compare_digest(self.sign(data), signature)


class Ed25519Key:
    """An Ed25519 private key (signs and verifies) or public key (verifies only)."""

    alg = "ed25519"

    def __init__(self, private: object | None, public: object) -> None:
        from cryptography.hazmat.primitives import serialization

        self._private, self._public = private, public
        raw = public.public_bytes(  # type: ignore[attr-defined]
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        self.key_id = hashlib.sha256(raw).hexdigest()[:16]

    @classmethod
    def from_pem(cls, data: bytes) -> Ed25519Key:
        """A PEM private key (PKCS#8) or public key (SubjectPublicKeyInfo)."""
        try:
            from cryptography.hazmat.primitives import serialization
            from cryptography.hazmat.primitives.asymmetric import ed25519
        except ImportError:
            raise CacheError("Ed25519 keys need the 'cryptography' package") from None
        try:
            if b"PRIVATE KEY" in data:
                private = serialization.load_pem_private_key(data, password=None)
                if not isinstance(private, ed25519.Ed25519PrivateKey):
                    raise CacheError("the private key is not an Ed25519 key")
                return cls(private, private.public_key())
            public = serialization.load_pem_public_key(data)
        except ValueError as exc:
            raise CacheError(f"cannot read the Ed25519 key: {exc}") from None
        if not isinstance(public, ed25519.Ed25519PublicKey):
            raise CacheError("the public key is not an Ed25519 key")
        return cls(None, public)

    @property
    def can_sign(self) -> bool:
        return self._private is not None

    def sign(self, data: bytes) -> str:
        if self._private is None:
            raise CacheError("an Ed25519 public key cannot sign")
        return str(self._private.sign(_DOMAIN + data).hex())  # type: ignore[attr-defined]

    def verify(self, data: bytes, signature: str) -> bool:
        from cryptography.exceptions import InvalidSignature

        try:
            self._public.verify(bytes.fromhex(signature), _DOMAIN + data)  # type: ignore[attr-defined]
        except (InvalidSignature, ValueError):
            return False
        return True


class Policy(NamedTuple):
    signer: Key | None = None
    """Signs every entry this process publishes."""
    trusted: Sequence[Key] = ()
    """Keys whose signatures are checked; a wrong signature by one of them is refused."""
    required: bool = False
    """Refuse entries that carry no valid signature by a trusted key."""


NO_SIGNING = Policy()
"""Neither sign nor check: the default."""


def load_key(spec: str) -> Key:
    """A key from its knob value: ``ed25519:/path/key.pem``, ``file:/path/secret`` (the
    file's bytes are an HMAC secret), or the HMAC secret itself."""
    kind, _, rest = spec.partition(":")
    try:
        if kind == "ed25519":
            return Ed25519Key.from_pem(Path(rest).read_bytes())
        if kind == "file":
            return HmacKey(Path(rest).read_bytes().strip())
    except OSError as exc:
        raise CacheError(f"cannot read the signing key {rest}: {exc.strerror}") from None
    return HmacKey(spec.encode())


def policy(signing_key: str, verify_key: str, required: bool) -> Policy:
    """The policy the knobs CUVIL_AOT_SIGNING_KEY, CUVIL_AOT_VERIFY_KEY and
    CUVIL_AOT_REQUIRE_SIGNED ask for; CacheError if a key cannot be used."""
    signer = load_key(signing_key) if signing_key else None
    if isinstance(signer, Ed25519Key) and not signer.can_sign:
        raise CacheError("CUVIL_AOT_SIGNING_KEY is an Ed25519 public key: it cannot sign")
    trusted = [k for k in (signer, load_key(verify_key) if verify_key else None) if k]
    if required and not trusted:
        raise CacheError("CUVIL_AOT_REQUIRE_SIGNED=1 needs CUVIL_AOT_SIGNING_KEY or "
                         "CUVIL_AOT_VERIFY_KEY")
    return Policy(signer, tuple(trusted), required)


def signature_doc(key: Key, manifest: bytes) -> bytes:
    doc = {"format": FORMAT, "schema": 1, "alg": key.alg, "key_id": key.key_id,
           "signature": key.sign(manifest)}
    return json.dumps(doc, sort_keys=True).encode() + b"\n"


def _parse(data: bytes) -> tuple[str, str, str]:
    doc = load_json(data)
    if not isinstance(doc, dict) or set(doc) != {"format", "schema", "alg", "key_id",
                                                 "signature"}:
        raise CacheError("malformed signature file")
    if doc["format"] != FORMAT or doc["schema"] != 1:
        raise CacheError("malformed signature file")
    alg, key_id, sig = doc["alg"], doc["key_id"], doc["signature"]
    if not all(isinstance(v, str) for v in (alg, key_id, sig)) or not _HEX.fullmatch(sig):
        raise CacheError("malformed signature file")
    return alg, key_id, sig


def check(rules: Policy, manifest: bytes, sig_data: bytes | None) -> str | None:
    """Why an entry with this manifest and signature file must be refused, or None."""
    if not rules.trusted:
        return None
    if sig_data is None:
        return "it is not signed, and signatures are required" if rules.required else None
    try:
        alg, key_id, sig = _parse(sig_data)
    except CacheError as exc:
        return str(exc)
    key = next((k for k in rules.trusted if (k.alg, k.key_id) == (alg, key_id)), None)
    if key is None:
        return f"it is signed by an unknown key ({alg} {key_id})" if rules.required else None
    if not key.verify(manifest, sig):
        return f"its signature ({alg} {key_id}) does not match its manifest"
    return None
