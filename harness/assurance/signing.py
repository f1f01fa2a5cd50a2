"""Ed25519 signatures on certificates, made and checked with ``cryptography``.

A certificate's digest proves integrity, not authorship: anyone can recompute it. A signature
can only be made with the private key, and :func:`check_signature` accepts it only under a
public key the verifier trusts (``conform verify --trusted-key``). Keys are PEM files, the
formats OpenSSL reads and writes (``openssl genpkey -algorithm ed25519`` makes a private key
conform can use): the private key unencrypted PKCS #8, the public key SubjectPublicKeyInfo.

The signature covers the canonical JSON (:func:`canonical`) of the
certificate without its ``signature`` field, digest included; it is recorded as::

    "signature": {"algorithm": "ed25519", "key_id": <16 hex digits>,
                  "public_key": <base64 of the 32-byte raw key>, "value": <base64>}

``key_id`` is the start of the SHA-256 of the raw public key, as ``conform key new`` prints it.
"""
from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from conform.records import canonical

ALGORITHM = "ed25519"
SIGNATURE = "signature"


class SigningError(Exception):
    """A key file that cannot be read or is not an Ed25519 key (exit status 2)."""


def public_key_path(private_path: Path | str) -> Path:
    """Where :func:`new_key_pair` puts the public key of ``private_path``: beside it, ``.pub``
    appended."""
    private_path = Path(private_path)
    return private_path.with_name(private_path.name + ".pub")


def new_key_pair(private_path: Path | str) -> tuple[Path, Path, str]:
    """Make an Ed25519 key pair: the private key at ``private_path`` (readable by its owner
    only), the public key beside it (:func:`public_key_path`). Refuses to overwrite either
    file. Returns both paths and the key id.

    >>> new_key_pair("vendor.key")   # doctest: +SKIP
    (PosixPath('vendor.key'), PosixPath('vendor.key.pub'), '3f0c9a51d27e8b64')
    """
    private_path = Path(private_path)
    public_path = public_key_path(private_path)
    for path in (private_path, public_path):
        if path.exists():
            raise SigningError(f"{path} exists; conform does not overwrite a key")
    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
    try:
        fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(private_pem)
        public_path.write_bytes(public_pem)
    except OSError as exc:
        raise SigningError(f"cannot write {exc.filename}: {exc.strerror}") from None
    return private_path, public_path, key_id(key.public_key())


def key_id(public_key: Ed25519PublicKey) -> str:
    """The first 16 hex digits of the SHA-256 of the raw public key."""
    return hashlib.sha256(_raw(public_key)).hexdigest()[:16]


def _raw(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _read(path: Path | str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise SigningError(f"cannot read {what} {path}: {exc.strerror}") from None


def load_private_key(path: Path | str) -> Ed25519PrivateKey:
    """The Ed25519 private key in the PEM file ``path``."""
    try:
        key = serialization.load_pem_private_key(_read(path, "private key"), password=None)
    except TypeError:
        raise SigningError(f"{path} is an encrypted private key; conform reads unencrypted "
                           f"PEM keys only") from None
    except (ValueError, UnsupportedAlgorithm):
        raise SigningError(f"{path} is not a PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningError(f"{path} is not an Ed25519 private key")
    return key


def load_public_key(path: Path | str) -> Ed25519PublicKey:
    """The Ed25519 public key in the PEM file ``path``."""
    try:
        key = serialization.load_pem_public_key(_read(path, "public key"))
    except (ValueError, UnsupportedAlgorithm):
        raise SigningError(f"{path} is not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise SigningError(f"{path} is not an Ed25519 public key")
    return key


def _message(certificate: dict) -> bytes:
    return canonical({k: v for k, v in certificate.items() if k != SIGNATURE})


def sign(certificate: dict, key: Ed25519PrivateKey) -> dict:
    """``certificate`` (sealed: its digest is signed too) with its ``signature`` field."""
    public = key.public_key()
    value = key.sign(_message(certificate))
    return {**{k: v for k, v in certificate.items() if k != SIGNATURE},
            SIGNATURE: {"algorithm": ALGORITHM, "key_id": key_id(public),
                        "public_key": base64.b64encode(_raw(public)).decode("ascii"),
                        "value": base64.b64encode(value).decode("ascii")}}


def check_signature(certificate: dict, trusted: list[Ed25519PublicKey]) -> tuple[bool, str]:
    """Whether ``certificate`` carries a valid signature by one of the ``trusted`` keys, and a
    line saying so or why not."""
    signature = certificate.get(SIGNATURE)
    names = ", ".join(key_id(k) for k in trusted)
    if not isinstance(signature, dict):
        return False, f"the certificate is not signed; a signature by {names} is required"
    if signature.get("algorithm") != ALGORITHM:
        return False, f"the certificate is signed with {signature.get('algorithm')!r}, not {ALGORITHM}"
    try:
        value = base64.b64decode(str(signature.get("value")), validate=True)
    except ValueError:
        return False, "the signature is not base64"
    message = _message(certificate)
    for key in trusted:
        try:
            key.verify(value, message)
        except InvalidSignature:
            continue
        return True, f"signed by trusted key {key_id(key)}"
    return False, (f"the signature (by key {str(signature.get('key_id'))[:16]}) does not verify "
                   f"under the trusted key(s) {names}: the certificate was changed after signing "
                   f"or signed by another key")
