"""Authentic certificates: Ed25519 signatures checked under trusted keys, re-runs that import
only installed backends and cover every op x dtype cell, a corpus hash that covers the oracle
answers (a poisoned cache is caught), and paths that are never absolute."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from conform.generators._corpus import corpus_path
from conform.generators._corpus_format import read, write
from conform.harness.assurance import certify, verify, signing
from tests.harness.test_certify import _load, _make, _profile, _save


@pytest.fixture
def keys(tmp_path):
    (tmp_path / "keys").mkdir()
    private, public, key_id = signing.new_key_pair(tmp_path / "keys" / "vendor.key")
    return signing.load_private_key(private), signing.load_public_key(public), key_id


def _verify(path, specs, **kwargs):
    return verify.verify(path, specs, **{"rerun": 0, **kwargs})


def test_a_key_pair_is_pem_private_to_its_owner_and_never_overwritten(tmp_path, keys):
    private = tmp_path / "keys" / "vendor.key"
    assert private.read_text().startswith("-----BEGIN PRIVATE KEY-----")
    assert (tmp_path / "keys" / "vendor.key.pub").read_text().startswith("-----BEGIN PUBLIC KEY-----")
    assert os.stat(private).st_mode & 0o777 == 0o600
    assert re.fullmatch(r"[0-9a-f]{16}", keys[2])
    with pytest.raises(signing.SigningError, match=re.escape(f"{private} exists")):
        signing.new_key_pair(private)


@pytest.mark.parametrize("content, message", [
    (None, "cannot read private key"),
    (b"not a key", "is not a PEM private key"),
])
def test_unusable_private_keys_are_named(tmp_path, content, message):
    path = tmp_path / "key.pem"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(signing.SigningError, match=re.escape(message)):
        signing.load_private_key(path)


def test_a_public_key_is_not_a_private_key(tmp_path, keys):
    with pytest.raises(signing.SigningError, match="is not a PEM private key"):
        signing.load_private_key(tmp_path / "keys" / "vendor.key.pub")


def _signed(tmp_path, specs, key, **kwargs) -> Path:
    path = _make(tmp_path, specs, **kwargs)
    _save(path, signing.sign(_load(path), key))
    return path


def test_a_signed_certificate_verifies_under_its_key_only(tmp_path, specs, keys):
    private, public, key_id = keys
    path = _signed(tmp_path, specs, private)
    report = _verify(path, specs, trusted_keys=[public])
    assert report.verified and f"signature: signed by trusted key {key_id}" in report.checks
    other = signing.load_public_key(signing.new_key_pair(tmp_path / "other.key")[1])
    assert _verify(path, specs, trusted_keys=[other, public]).verified   # one of several
    [problem] = _verify(path, specs, trusted_keys=[other]).problems
    assert problem.startswith(f"signature: the signature (by key {key_id}) does not verify under "
                              f"the trusted key(s) {signing.key_id(other)}")
    untrusted = _verify(path, specs)   # no trusted key: verified, the signer named in a note
    assert untrusted.verified and any(f"signed by key {key_id}, not checked" in n
                                      for n in untrusted.notes)


def test_a_forged_self_consistent_certificate_fails_under_the_trusted_key(tmp_path, specs, keys):
    private, public, _ = keys
    path = _signed(tmp_path, specs, private, verdicts={"multiply.float32.1": "fail"})
    assert _verify(path, specs, trusted_keys=[public]).verified
    # the forger turns the failure into a pass and rebuilds every figure, hash and the digest
    results = tmp_path / "results.jsonl"
    results.write_text(results.read_text().replace('"verdict": "fail"', '"verdict": "pass"'))
    cert = _load(path)
    cert.update(certify.results_part(results, cert["profile"]["settings"],
                                     [c["id"] for c in cert["results"]["cases"]]))
    forged = certify.seal(cert)
    _save(path, forged)
    assert forged["verdict"] == "certified" and _verify(path, specs).verified
    [problem] = _verify(path, specs, trusted_keys=[public]).problems
    assert problem.startswith("signature: the certificate is not signed")
    # ... and signs it with a key of their own, or keeps the vendor's signature
    forger = signing.load_private_key(signing.new_key_pair(tmp_path / "forger.key")[0])
    for signature in (signing.sign(forged, forger)["signature"], _load_signed(tmp_path, specs, private)):
        _save(path, {**forged, "signature": signature})
        [problem] = _verify(path, specs, trusted_keys=[public]).problems
        assert "does not verify under the trusted key(s)" in problem


def _load_signed(tmp_path, specs, private) -> dict:
    other = tmp_path / "honest"
    other.mkdir()
    return _load(_signed(other, specs, private, verdicts={"multiply.float32.1": "fail"}))["signature"]


def test_a_signature_survives_reformatting_but_not_a_changed_value(tmp_path, specs, keys):
    private, public, _ = keys
    path = _signed(tmp_path, specs, private)
    cert = _load(path)
    path.write_text(__import__("json").dumps(cert, indent=4, sort_keys=True))
    assert _verify(path, specs, trusted_keys=[public]).verified
    cert["created"] = "2027-01-01T00:00:00+00:00"
    _save(path, {**certify.seal(cert), "signature": cert["signature"]})
    assert "does not verify" in _verify(path, specs, trusted_keys=[public]).problems[0]


# ---------------------------------------------------------------------------------- re-runs

def _with_backend(path, backend: str) -> None:
    cert = _load(path)
    cert["environment"]["backend"] = backend
    _save(path, certify.seal(cert))


def test_a_module_path_backend_is_imported_only_when_allowed(tmp_path, specs):
    path = _make(tmp_path, specs)
    _with_backend(path, "conform.harness.backends.numpy_backend:NumpyBackend")
    for rerun in (None, "all", 3):
        with pytest.raises(certify.CertifyError, match=re.escape(
                "names the module path 'conform.harness.backends.numpy_backend:NumpyBackend' as "
                "its backend; conform imports only installed backends (entry points in "
                "conform.backends) unless you pass --allow-module-backend")):
            verify.verify(path, specs, rerun=rerun)
    assert verify.verify(path, specs, rerun=0).verified
    report = verify.verify(path, specs, rerun=2, allow_module_backend=True)
    assert report.verified and any(c.startswith("rerun: 2 sampled cases covering all 2 op x "
                                                "dtype cells give the claimed verdicts")
                                   for c in report.checks)


def test_by_default_every_case_is_rerun_where_the_backend_is_installed(tmp_path, specs):
    path = _make(tmp_path, specs)
    cases = len(_load(path)["results"]["cases"])
    assert any(c.startswith(f"rerun: all {cases} cases give the claimed verdicts on numpy")
               for c in verify.verify(path, specs).checks)
    path = _make(tmp_path, specs, verdicts={"reshape.float32.1": "fail"})
    report = verify.verify(path, specs)
    assert f"rerun: reshape.float32.1: the certificate claims fail, numpy gives pass" in report.problems
    assert report.claimed_verdict == "not certified" and report.claimed_reasons
    _with_backend(path, "no-such-backend")
    report = verify.verify(path, specs)
    assert report.verified and any(n.startswith("no case re-run: backend 'no-such-backend' is not "
                                                "installed here") for n in report.notes)
    with pytest.raises(certify.CertifyError, match="--rerun: backend 'no-such-backend' is not "
                                                    "installed here"):
        verify.verify(path, specs, rerun="all")


# ----------------------------------------------------------------------- poisoned answers

def test_a_poisoned_oracle_answer_in_the_cache_fails_verification(tmp_path, specs, monkeypatch):
    monkeypatch.setenv("CONFORM_CACHE_DIR", str(tmp_path / "cache"))
    honest = tmp_path / "honest"
    honest.mkdir()
    honest_path = _make(honest, specs)   # fills the cache
    profile = _profile()
    slice_path = corpus_path(specs["multiply"], "float32", count=profile.max_examples,
                             seed=profile.seed)
    cases = read(slice_path)
    cases[1].expectation[0].expected[...] += 1.0   # poisoned, and its digest rewritten to match
    write(slice_path, cases)
    # certified on the poisoned cache: the backend's right answer now looks like a failure
    poisoned = tmp_path / "poisoned"
    poisoned.mkdir()
    path = _make(poisoned, specs, verdicts={cases[1].id: "fail"})
    assert _load(path)["corpus"]["sha256"] != _load(honest_path)["corpus"]["sha256"]
    problems = _verify(path, specs)   # the corpus is regenerated afresh, not read from the cache
    assert not problems.verified
    assert any(p.startswith("corpus: conform") for p in problems.problems)
    assert any(p.startswith("corpus: multiply float32:") for p in problems.problems)
    assert _verify(honest_path, specs).verified
    # trusting the cache, the honest certificate no longer matches the poisoned corpus
    assert not _verify(honest_path, specs, use_cache=True).verified


# -------------------------------------------------------------------------------- paths

def test_paths_in_a_certificate_are_never_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "m.yaml").write_text("x")
    builtin = Path(str(__import__("importlib").resources.files("conform.manifests"))) / "jax.yaml"
    assert certify.portable_path(builtin) == "conform/manifests/jax.yaml"
    assert certify.portable_path(certify.builtin_profiles_path()) == "conform/spec/profiles.yaml"
    assert certify.portable_path(tmp_path / "sub" / "m.yaml") == "sub/m.yaml"
    assert certify.portable_path("/elsewhere/deep/m.yaml") == "m.yaml"


def test_a_certificate_names_its_adapter_and_a_rerun_on_other_adapter_code_is_refused(tmp_path):
    """The adapter (a module path here; an installed one is named by its distribution and
    version too) is recorded with a digest of its files: after an edit to them, ``verify``
    refuses to re-run it, since that would check other code than the certified one."""
    import json
    import subprocess
    import sys

    package = tmp_path / "mine_adapter"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "wrapped.py").write_text("from conform.harness.backends.wrapping import Wrapping\n\n\n"
                                        "class Mine(Wrapping):\n    wraps = 'numpy'\n    name = 'mine'\n")
    (tmp_path / "profiles.yaml").write_text(json.dumps({"profiles": {"tiny": TINY_PROFILE}}))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}

    def conform(*args):
        return subprocess.run([sys.executable, "-m", "conform.harness.cli", *map(str, args)],
                              capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)

    made = conform("certify", "--backend", "mine_adapter.wrapped:Mine", "--profile", "tiny",
                   "--profiles", tmp_path / "profiles.yaml", "--out", tmp_path / "out", "--quiet")
    assert made.returncode in (0, 1), made.stderr
    adapter = json.loads((tmp_path / "out" / "certificate.json").read_text())["environment"]["adapter"]
    assert adapter["module"] == "mine_adapter.wrapped" and adapter["distribution"] is None
    assert adapter["files"] == 2 and re.fullmatch("[0-9a-f]{64}", adapter["sha256"])
    verify_args = ("verify", tmp_path / "out" / "certificate.json", "--allow-module-backend",
                   "--rerun", "2")
    same = conform(*verify_args)
    assert same.returncode == 0 and "adapter: mine_adapter.wrapped" in same.stdout, same.stdout
    with open(package / "wrapped.py", "a") as source:
        source.write("# another build\n")
    other = conform(*verify_args)
    assert other.returncode != 0
    said = other.stdout + other.stderr
    assert "rerun: refused: the installed adapter is not the certified one: adapter.sha256" in said
    assert "give the claimed verdicts" not in said


TINY_PROFILE = {"summary": "a tiny test profile", "ops": ["multiply"], "dtypes": ["float32"],
                "subnormals": "ieee", "manifests": False, "max_examples": 3, "seed": 11,
                "min_pass_rate": 0.9, "min_coverage": 0.5}
