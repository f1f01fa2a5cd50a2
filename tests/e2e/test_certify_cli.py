"""End-to-end: `conform certify` on a real backend with a tiny profile, `conform verify` on the
honest certificate, on certificates and results with a changed byte, and on a forged but
self-consistent certificate (which only `--rerun` catches); `conform run --profile`."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from conform.harness.assurance import certify, verify

# jax flushes float32 subnormals; judged by `ieee`, the edge sweep (and other cases holding
# subnormals) fail, so the strict bar below is not met and some verdicts are worth forging.
PROFILES = """\
profiles:
  tiny:
    summary: multiply in float32, strict, for the tests
    ops: [multiply]
    dtypes: [float32]
    subnormals: ieee
    manifests: false
    max_examples: 8
    seed: 7
    min_pass_rate: 1.0
    min_coverage: 0.9
"""


@pytest.fixture(scope="module")
def certified(tmp_path_factory, conform_cli):
    root = tmp_path_factory.mktemp("certify")
    (root / "profiles.yaml").write_text(PROFILES, encoding="utf-8")
    proc = conform_cli("certify", "--backend", "jax", "--profile", "tiny", "--profiles",
                       root / "profiles.yaml", "--out", root / "cert", "--quiet")
    return root, proc


@pytest.fixture
def copy(certified, tmp_path):
    """A copy of the certificate directory, to tamper with."""
    return shutil.copytree(certified[0] / "cert", tmp_path / "cert")


def _cert(directory) -> dict:
    return json.loads((directory / "certificate.json").read_text(encoding="utf-8"))


def test_certify_writes_a_certificate_of_what_ran(certified):
    root, proc = certified
    assert proc.returncode == 1, proc.stdout + proc.stderr  # ran; the strict bar is not met
    assert "profile tiny: NOT CERTIFIED" in proc.stdout and "pass rate" in proc.stdout
    out = root / "cert"
    for name in ("certificate.json", "certificate.html", "results.jsonl", "summary.json",
                 "report.html"):
        assert (out / name).is_file(), name
    cert = _cert(out)
    assert cert["digest"] == certify.digest_of(cert)
    assert cert["verdict"] == "not certified" and cert["totals"]["counts"]["fail"] >= 1
    assert cert["profile"]["name"] == "tiny" and cert["profile"]["settings"]["max_examples"] == 8
    assert cert["profile"]["source"].endswith("profiles.yaml")
    env = cert["environment"]
    assert (env["backend"], env["subnormals_declared"], env["subnormals_applied"]) == ("jax", "ftz", "ieee")
    assert env["backend_version"].startswith("jax") and env["python"] and env["numpy"] and env["platform"]
    assert re.fullmatch(r"[0-9a-f]{64}", cert["corpus"]["sha256"])
    assert list(cert["specs"]["files"]) == ["multiply"] and not cert["manifest"]["applied"]
    cell = cert["by_op"]["multiply"]["float32"]
    assert cell["cases"] == cert["corpus"]["cases"] == len(cert["results"]["cases"])
    assert cell["worst_error"] is not None and cell["bound"] == 0.0   # correctly_rounded: bit for bit
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert sorted(certify.sha256(line) for line in lines) == sorted(
        c["sha256"] for c in cert["results"]["cases"])
    html = (out / "certificate.html").read_text(encoding="utf-8")
    assert "not certified" in html and cert["digest"] in html and cert["corpus"]["sha256"] in html


def test_verify_reruns_the_honest_certificate_and_restates_its_verdict(certified, conform_cli):
    root, _ = certified
    cases = len(_cert(root / "cert")["results"]["cases"])
    proc = conform_cli("verify", root / "cert" / "certificate.json", check_status=0)
    assert f"rerun: all {cases} cases give the claimed verdicts on jax" in proc.stdout
    assert "corpus: conform" in proc.stdout and "digest:" in proc.stdout
    assert re.search(r"\nthe certificate's own verdict: NOT CERTIFIED \(pass rate [\d.]+% < "
                     r"100\.00% \(min_pass_rate\); coverage", proc.stdout)
    assert "the certificate is not signed: nothing proves who made it" in proc.stderr
    proc = conform_cli("verify", root / "cert" / "certificate.json", "--rerun", 5, check_status=0)
    assert "VERIFIED" in proc.stdout
    assert "rerun: 5 sampled cases covering all 1 op x dtype cells give the claimed" in proc.stdout


def test_one_changed_byte_of_results_in_the_certificate_fails(copy, conform_cli):
    path = copy / "certificate.json"
    text = path.read_text(encoding="utf-8")
    at = text.index('"verdict": "pass"', text.index('"results"')) + len('"verdict": "')
    path.write_text(text[:at] + "b" + text[at + 1:], encoding="utf-8")  # "pass" -> "bass"
    proc = conform_cli("verify", path, "--rerun", 0, check_status=1)
    assert "NOT VERIFIED" in proc.stderr and "digest: the certificate says" in proc.stderr
    assert re.search(r"results: multiply\.float32\.\w+: verdict 'bass' in the certificate, 'pass' "
                     r"in results\.jsonl", proc.stderr)


def test_one_changed_byte_in_results_jsonl_fails(copy, conform_cli):
    results = copy / "results.jsonl"
    data = bytearray(results.read_bytes())
    at = re.search(rb'"seconds": ?\d+\.\d', data).end() - 1   # a digit of the first case's time
    data[at] = ord("7") if data[at] != ord("7") else ord("3")
    results.write_bytes(bytes(data))
    proc = conform_cli("verify", copy, "--rerun", 0, check_status=1)
    assert "results.jsonl has sha256" in proc.stderr
    assert re.search(r"results: multiply\.float32\.\w+: its result line hashes to", proc.stderr)


def _forge(directory, case_id: str) -> dict:
    """Turn ``case_id``'s failure into a pass everywhere, as a forger with conform's code would:
    result line, per-case entries, figures, verdict, file hash and digest."""
    results = directory / "results.jsonl"
    records = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    for record in records:
        if record["id"] == case_id:
            record["verdict"] = "pass"
            record.pop("message", None)
    results.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    cert = _cert(directory)
    cert.update(certify.results_part(results, cert["profile"]["settings"],
                                     [c["id"] for c in cert["results"]["cases"]]))
    cert = certify.seal(cert)
    (directory / "certificate.json").write_text(json.dumps(cert, indent=1), encoding="utf-8")
    return cert


def test_rerun_catches_a_forged_self_consistent_certificate(certified, copy, conform_cli):
    failing = [c["id"] for c in _cert(copy)["results"]["cases"] if c["verdict"] == "fail"]
    # forge a failure into a pass, then find a sample seed whose sample of 5 re-runs it (the
    # sample follows the digest, which follows the spec files' bytes, so no fixed seed is safe)
    found = None
    for case_id in failing:
        shutil.rmtree(copy)
        shutil.copytree(certified[0] / "cert", copy)
        forged = _forge(copy, case_id)
        seed = next((s for s in range(200) if case_id in verify.rerun_sample(forged, 5, s)), None)
        if seed is not None:
            found = (case_id, seed)
            break
    assert found, f"no sample seed re-runs any of {failing}"
    case_id, seed = found
    quiet = conform_cli("verify", copy / "certificate.json", "--rerun", 0, check_status=0)
    assert "VERIFIED" in quiet.stdout  # every hash and figure is consistent: only a rerun can tell
    proc = conform_cli("verify", copy / "certificate.json", "--rerun", 5, "--sample-seed", seed,
                       check_status=1)
    assert f"rerun: {case_id}: the certificate claims pass, jax gives fail" in proc.stderr
    assert "the certificate claims (not verified): NOT CERTIFIED (pass rate" in proc.stderr
    every = conform_cli("verify", copy / "certificate.json", check_status=1)   # all cases re-run
    assert f"rerun: {case_id}: the certificate claims pass, jax gives fail" in every.stderr


def test_a_signed_certificate_and_a_forgery_of_it(certified, tmp_path, conform_cli):
    root, _ = certified
    made = conform_cli("key", "new", tmp_path / "vendor.key", check_status=0)
    key_id = re.search(r"key id ([0-9a-f]{16})", made.stdout).group(1)
    conform_cli("key", "new", tmp_path / "vendor.key", check_status=2)   # never overwritten
    out = tmp_path / "signed"
    proc = conform_cli("certify", "--backend", "jax", "--profile", "tiny", "--profiles",
                       root / "profiles.yaml", "--out", out, "--quiet", "--key",
                       tmp_path / "vendor.key", check_status=1)
    assert f"signed by key {key_id}" in proc.stdout
    text = (out / "certificate.json").read_text(encoding="utf-8")
    absolute = [line.strip() for line in text.splitlines()
                if str(tmp_path) in line or str(root) in line or '"/' in line]
    assert absolute == [], absolute   # (names the lines, should a path ever leak in)
    assert f"key <span class=\"hash\">{key_id}</span>" in (out / "certificate.html").read_text()
    pub = tmp_path / "vendor.key.pub"
    _the_in_toto_statement_verifies(out, json.loads(text), pub)
    ok = conform_cli("verify", out, "--trusted-key", pub, "--rerun", 0, check_status=0)
    assert f"ok: signature: signed by trusted key {key_id}" in ok.stdout
    unsigned = conform_cli("verify", root / "cert", "--trusted-key", pub, "--rerun", 0,
                           check_status=1)
    assert "signature: the certificate is not signed" in unsigned.stderr
    failing = next(c["id"] for c in _cert(out)["results"]["cases"] if c["verdict"] == "fail")
    forged = _forge(out, failing)
    assert "signature" not in forged   # resealing drops it; putting the old one back fails too
    vendors = json.loads(text)["signature"]
    (out / "certificate.json").write_text(json.dumps({**forged, "signature": vendors}),
                                          encoding="utf-8")
    proc = conform_cli("verify", out, "--trusted-key", pub, "--rerun", 0, check_status=1)
    assert "does not verify under the trusted key(s)" in proc.stderr
    conform_cli("verify", out, "--trusted-key", tmp_path / "vendor.key", check_status=2)   # private
    bad = conform_cli("certify", "--backend", "jax", "--profile", "tiny", "--profiles",
                      root / "profiles.yaml", "--key", pub, check_status=2)
    assert bad.stderr.strip() == f"conform: error: {pub} is not a PEM private key"


def test_verify_refuses_a_module_path_backend_unless_allowed(certified, copy, conform_cli):
    cert = _cert(copy)
    cert["environment"]["backend"] = "conform.harness.backends.numpy_backend:NumpyBackend"
    (copy / "certificate.json").write_text(json.dumps(certify.seal(cert)), encoding="utf-8")
    proc = conform_cli("verify", copy, check_status=2)
    assert len(proc.stderr.splitlines()) == 1 and "--allow-module-backend" in proc.stderr
    conform_cli("verify", copy, "--rerun", 0, check_status=0)
    allowed = conform_cli("verify", copy, "--allow-module-backend", check_status=1)
    # allowed to load, the module's backend is still not the adapter the certificate names
    assert "rerun: refused: the installed adapter is not the certified one: adapter.module: the " \
           "certificate says \"conform.harness.backends.jax_backend\", installed " \
           "\"conform.harness.backends.numpy_backend\"" in allowed.stderr


def test_run_with_a_profile_runs_its_corpus(certified, tmp_path, conform_cli):
    root, _ = certified
    conform_cli("run", "--backend", "numpy", "--profile", "tiny", "--profiles",
                root / "profiles.yaml", "--out", tmp_path / "run", "--quiet", check_status=0)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert (summary["profile"], summary["seed"], summary["max_examples"],
            summary["subnormals_applied"]) == ("tiny", 7, 8, "ieee")
    ids = sorted(json.loads(line)["id"] for line in (tmp_path / "run" / "results.jsonl").open())
    assert ids == sorted(c["id"] for c in _cert(root / "cert")["results"]["cases"])


def _the_in_toto_statement_verifies(out, certificate: dict, pub):
    """certificate.intoto.json is a DSSE envelope securesystemslib (the in-toto project's
    library) verifies under the vendor's key, of an in-toto statement with the test-result
    predicate naming the adapter's digest and the certificate's; another key refuses it."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError
    from securesystemslib.signer import SSlibKey

    from conform.harness.assurance.signing import load_public_key

    envelope = Envelope.from_dict(json.loads((out / "certificate.intoto.json").read_text("utf-8")))
    assert envelope.payload_type == "application/vnd.in-toto+json"
    assert len(envelope.verify([SSlibKey.from_crypto(load_public_key(pub))], 1)) == 1
    with pytest.raises(VerificationError):
        envelope.verify([SSlibKey.from_crypto(Ed25519PrivateKey.generate().public_key())], 1)
    statement = json.loads(envelope.payload)
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == "https://in-toto.io/attestation/test-result/v0.1"
    adapter = certificate["environment"]["adapter"]
    assert statement["subject"][0]["digest"] == {"sha256": adapter["sha256"]}
    predicate = statement["predicate"]
    assert predicate["result"] == ("PASSED" if certificate["verdict"] == "certified" else "FAILED")
    assert {"name": "certificate.json", "digest": {"sha256": certificate["digest"]}} in \
        predicate["configuration"]
    assert predicate["failedTests"] or predicate["passedTests"]
