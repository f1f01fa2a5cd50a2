"""A certificate as an in-toto attestation, so that supply-chain tooling can check it.

The statement is an in-toto Statement v1 (https://in-toto.io/Statement/v1) whose predicate is
the test-result predicate v0.1 (https://in-toto.io/attestation/test-result/v0.1):

* ``subject``: the adapter whose code earned the verdicts, named by its distribution (or
  module) and the SHA-256 of its installed files, as the certificate records it
  (:func:`~conform.harness.backends.registry.adapter_identity`);
* ``predicate.result``: ``PASSED`` for a certified run, else ``FAILED``;
* ``predicate.configuration``: the certificate itself (its digest), the profile (its file's
  SHA-256, or for a built-in profile that of its settings' canonical JSON) and the case corpus;
* ``predicate.passedTests`` / ``failedTests``: the op x dtype cells, ``op/dtype``, whose judged
  cases all passed / not all passed (cells with nothing judged are in neither).

It travels in a DSSE envelope (payload type ``application/vnd.in-toto+json``) signed with the
certificate's Ed25519 key, made and checked by securesystemslib, the in-toto project's library:
``certificate.intoto.json`` beside certificate.json.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from conform.records import canonical

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://in-toto.io/attestation/test-result/v0.1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
FILE = "certificate.intoto.json"


def statement(certificate: dict) -> dict:
    """The in-toto statement of ``certificate`` (sealed: it has its digest)."""
    adapter = certificate["environment"].get("adapter") or {}
    name = adapter.get("distribution") or adapter.get("module") or \
        certificate["environment"]["backend"]
    cells = [(f"{op}/{label}", cell) for op, labels in sorted(certificate["by_op"].items())
             for label, cell in sorted(labels.items()) if cell["pass_rate"] is not None]
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": name, "digest": {"sha256": adapter.get("sha256") or ""},
                     "annotations": {"version": adapter.get("version") or "",
                                     "backend": certificate["environment"]["backend"]}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "result": "PASSED" if certificate["verdict"] == "certified" else "FAILED",
            "configuration": [
                {"name": "certificate.json", "digest": {"sha256": certificate["digest"]}},
                {"name": f"profile {certificate['profile']['name']}",
                 "digest": {"sha256": _profile_digest(certificate["profile"])}},
                {"name": "corpus", "digest": {"sha256": certificate["corpus"]["sha256"]}}],
            "passedTests": [name for name, cell in cells if cell["pass_rate"] == 1],
            "warnedTests": [],
            "failedTests": [name for name, cell in cells if cell["pass_rate"] < 1],
        },
    }


def _profile_digest(profile: dict) -> str:
    return profile.get("source_sha256") or \
        hashlib.sha256(canonical(profile["settings"])).hexdigest()


def envelope(certificate: dict, private_key) -> dict:
    """The DSSE envelope (as JSON data) of ``certificate``'s statement, signed with the Ed25519
    ``private_key`` (a ``cryptography`` key, as :func:`~conform.harness.assurance.signing.load_private_key`
    reads it)."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import CryptoSigner

    payload = json.dumps(statement(certificate), sort_keys=True,
                         separators=(",", ":")).encode("utf-8")
    signed = Envelope(payload=payload, payload_type=PAYLOAD_TYPE, signatures={})
    signed.sign(CryptoSigner(private_key))
    return signed.to_dict()


def verified_statement(data: dict, public_key) -> dict:
    """The statement of the envelope ``data`` once its signature by the Ed25519
    ``public_key`` checks (securesystemslib raises otherwise)."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import SSlibKey

    signed = Envelope.from_dict(data)
    if signed.payload_type != PAYLOAD_TYPE:
        raise ValueError(f"payload type {signed.payload_type!r} is not an in-toto statement")
    signed.verify([SSlibKey.from_crypto(public_key)], 1)
    return json.loads(signed.payload)


def write_envelope(out: Path, certificate: dict, private_key) -> Path:
    """Write ``certificate``'s signed statement to ``out``/certificate.intoto.json."""
    from conform.reports import write_atomically

    path = Path(out) / FILE
    write_atomically(path, json.dumps(envelope(certificate, private_key), indent=2) + "\n")
    return path
