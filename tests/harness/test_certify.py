"""Profiles, hashes, certificate digests and tamper detection (no backend runs: the certificates
here are made from synthetic result lines for a real, tiny corpus)."""
from __future__ import annotations

import copy
import dataclasses
import json
import shutil

import numpy as np
import pytest

from conform.generators import generate_cases
from conform.harness.assurance import certify, verify
from conform.harness.cli import main as cli, certify as cli_certify
from conform.harness.judge.judging import case_record
from conform.harness.backends.registry import adapter_identity
from conform.harness.run.runner import SelectionError
from conform.reports._certificate import render_certificate, write_certificate
from conform.spec import BUILTIN_DIR, load_specs
from conform.oracles.expectations import expect

TINY = {"summary": "a tiny test profile", "ops": ["multiply", "reshape"], "dtypes": ["float32"],
        "subnormals": "ieee", "manifests": False, "max_examples": 3, "seed": 11,
        "min_pass_rate": 0.95, "min_coverage": 0.5}
META = {"backend": "numpy", "backend_version": "test", "device": "cpu", "model_format": "numpy",
        "subnormals_declared": "ieee", "subnormals_applied": "ieee", "wall_seconds": 1.0,
        "worker_restarts": 0}


def _profile(**changes) -> certify.Profile:
    return certify.Profile.from_settings("tiny", {**TINY, **changes}, source="tests/tiny.yaml",
                                         source_sha256="0" * 64)


def _write_results(path, records) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _make(tmp_path, specs, profile=None, verdicts=None):
    """A sealed certificate (and its results.jsonl) for the tiny corpus; every case passes
    unless ``verdicts`` says otherwise. Returns the certificate's path."""
    profile = profile or _profile()
    corpus = certify.build_corpus(profile, specs)
    records = [{**case_record(c), "seconds": 0.001 * i,
                "verdict": (verdicts or {}).get(c.id, "pass")}
               for i, c in enumerate(corpus.cases)]
    _write_results(tmp_path / "results.jsonl", records)
    cert = certify.build_certificate(
        profile=profile, corpus=corpus, specs_info=certify.spec_hashes(specs, ["multiply",
                                                                              "reshape"]),
        meta={**META, "adapter": adapter_identity(META["backend"])}, manifest=None,
        results_path=tmp_path / "results.jsonl",
        conform_version=_version(), run={"workers": 1, "timeout": 10.0},
        created="2026-01-01T00:00:00+00:00")
    write_certificate(tmp_path, cert)
    return tmp_path / "certificate.json"


def _version():
    import conform

    return conform.__version__


def _load(path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _save(path, cert) -> None:
    path.write_text(json.dumps(cert, indent=1), encoding="utf-8")


def _reseal_from_results(path) -> dict:
    """What a forger does after editing results.jsonl: re-derive and re-seal everything."""
    cert = _load(path)
    order = [c["id"] for c in cert["results"]["cases"]]
    cert.update(certify.results_part(path.parent / "results.jsonl", cert["profile"]["settings"],
                                     order))
    cert = certify.seal(cert)
    _save(path, cert)
    return cert


def _problems(path, specs, **kwargs) -> list[str]:
    return verify.verify(path, specs, **{"rerun": 0, **kwargs}).problems


# ---------------------------------------------------------------------------------- profiles

def test_builtin_profiles_name_real_ops_and_select_cases(specs):
    profiles = certify.load_profiles()
    assert {"xla-core", "onnx-core", "nnef-core", "full"} <= set(profiles)
    for profile in profiles.values():
        assert certify.select_pairs(profile, specs), profile.name
        for op in profile.ops:  # frozen op lists must name specs that exist
            assert any(ch in op for ch in "*?[") or op in specs, (profile.name, op)
        assert 0 < profile.min_pass_rate <= 1 and profile.max_examples >= 1
    full = profiles["full"]
    assert (full.subnormals, full.manifests, full.ops) == ("ieee", False, ("*",))
    assert {p.subnormals for n, p in profiles.items() if n.endswith("-core")} == {"declared"}
    assert profiles["nnef-core"].dtypes == ("float32",)


def test_profile_settings_round_trip():
    profile = certify.load_profiles()["onnx-core"]
    again = certify.Profile.from_settings(profile.name, profile.settings())
    assert again == profile and again.settings() == profile.settings()
    assert profile.subnormal_policy is None and certify.load_profiles()["full"].subnormal_policy == "ieee"


def test_profiles_file_errors_name_file_line_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("profiles:\n  mine:\n    summary: x\n    ops: [add]\n    subnormals: sometimes\n"
                   "    manifests: false\n    max_examples: 2\n    seed: 0\n    min_pass_rate: 1\n")
    with pytest.raises(certify.ProfileError, match=r"bad\.yaml:5: field profiles\.mine\.subnormals"):
        certify.load_profiles(bad)
    clash = tmp_path / "clash.yaml"
    clash.write_text(bad.read_text().replace("mine", "full").replace("sometimes", "ieee"))
    with pytest.raises(certify.ProfileError, match=r"clash\.yaml:3: .*'full' is a built-in"):
        certify.find_profile("full", clash)
    with pytest.raises(SelectionError, match="unknown profile 'nope'.*xla-core"):
        certify.find_profile("nope")


def test_usage_errors_exit_2(tmp_path, specs, capsys):
    assert cli.main(["verify", str(tmp_path / "nowhere.json")]) == 2
    assert "cannot read certificate" in capsys.readouterr().err
    assert cli.main(["certify", "--backend", "numpy", "--profile", "nope"]) == 2
    assert "unknown profile 'nope'" in capsys.readouterr().err
    assert cli.main(["certify", "--backend", "numpy", "--profile", "full", "--manifest",
                     str(tmp_path / "m.yaml")]) == 2
    assert "profile full allows no manifest" in capsys.readouterr().err
    assert cli.main(["run", "--backend", "numpy", "--profiles", str(tmp_path / "p.yaml")]) == 2
    assert "--profiles needs --profile" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        cli.main(["verify", str(_make(tmp_path, specs)), "--rerun", "-1"])
    assert exit_.value.code == 2


def test_run_options_come_from_the_profile_unless_given():
    def parsed(*argv):
        args = cli._parser().parse_args(["run", "--backend", "numpy", *argv])
        profile = cli_certify.apply_profile(args)
        return args, profile

    args, profile = parsed()
    assert profile is None and (args.max_examples, args.seed, args.ops, args.subnormals) == (20, 0, None, None)
    args, profile = parsed("--profile", "full", "--seed", "3")
    assert (args.seed, args.max_examples, args.subnormals, args.ops) == (3, 20, "ieee", ["*"])
    assert args.no_manifest  # full allows no manifest
    args, profile = parsed("--profile", "onnx-core", "--ops", "add")
    assert args.ops == ["add"] and args.dtypes == list(profile.dtypes)
    assert args.no_manifest   # the core profiles allow none: a certificate says what was earned
    assert (args.max_examples, args.seed, args.subnormals) == (40, 2026, None)


# ------------------------------------------------------------------------------------ hashes

def test_corpus_hash_changes_with_any_input_byte_and_with_order(specs):
    cases = generate_cases(specs["multiply"], "float32", count=3, seed=0, answer=expect)
    base = certify.corpus_sha256(cases)
    assert certify.corpus_sha256(generate_cases(specs["multiply"], "float32", count=3, seed=0, answer=expect)) == base
    flipped = dataclasses.replace(cases[1], inputs=[x.copy() for x in cases[1].inputs])
    flipped.inputs[0].reshape(-1).view(np.uint8)[-1] ^= 1   # (a 0-d input too)
    assert certify.corpus_sha256([cases[0], flipped, cases[2]]) != base
    assert certify.corpus_sha256([cases[1], cases[0], cases[2]]) != base


def test_corpus_hash_covers_every_part_of_the_oracle_answers(specs):
    cases = generate_cases(specs["dot_general"], "float32", count=8, seed=0, answer=expect)
    base = certify.corpus_sha256(cases)
    case = next(c for c in cases if c.expectation[0].accumulation
                and np.isfinite(c.expectation[0].accumulation[0]).any())
    (answer,) = case.expectation
    flipped = answer.expected.copy()
    flipped.view(np.uint8).reshape(-1)[0] ^= 1
    changed = [
        answer._replace(expected=flipped),
        answer._replace(impl_mask=np.zeros(np.shape(answer.expected), bool)),
        answer._replace(accumulation=(answer.accumulation[0], answer.accumulation[1] + 1)),
        answer._replace(accumulation=(answer.accumulation[0] * 2, answer.accumulation[1])),
        None,
    ]
    for poisoned in changed:
        poisoned = poisoned and (poisoned,)
        swapped = [dataclasses.replace(c, expectation=poisoned) if c is case else c for c in cases]
        assert certify.corpus_sha256(swapped) != base, poisoned
    assert certify.corpus_sha256(cases) == base


def test_build_corpus_is_the_same_with_and_without_the_cache(specs):
    profile = _profile()
    cached, fresh = certify.build_corpus(profile, specs), certify.build_corpus(profile, specs,
                                                                              use_cache=False)
    assert cached.sha256 == fresh.sha256 and cached.slices == fresh.slices
    assert [s["op"] for s in cached.slices] == ["multiply", "reshape"]
    assert sum(s["cases"] for s in cached.slices) == len(cached.cases)


def test_spec_hash_follows_the_files_content(tmp_path, specs):
    shutil.copytree(BUILTIN_DIR, tmp_path / "ops")
    copied = load_specs(tmp_path / "ops")
    ops = ["multiply", "reshape"]
    assert certify.spec_hashes(copied, ops) == certify.spec_hashes(specs, ops)
    with (tmp_path / "ops" / "multiply.yaml").open("a") as f:
        f.write("# one more line\n")
    changed = certify.spec_hashes(load_specs(tmp_path / "ops"), ops)
    assert changed["sha256"] != certify.spec_hashes(specs, ops)["sha256"]
    assert changed["files"]["reshape"] == certify.spec_hashes(specs, ops)["files"]["reshape"]


# ------------------------------------------------------------------------- digest, tampering

def test_the_digest_ignores_layout_and_catches_every_changed_character(tmp_path, specs):
    path = _make(tmp_path, specs)
    cert = _load(path)
    assert certify.digest_of(json.loads(json.dumps(cert, indent=4, sort_keys=True))) == cert["digest"]
    text = path.read_text(encoding="utf-8")
    start = text.index('"results"')
    changed = 0
    for i in range(start, text.index('"digest"')):
        if not text[i].isalnum():
            continue
        replacement = "1" if text[i] == "0" else "0" if text[i].isdigit() else (
            "b" if text[i] == "a" else "a")
        mutated = text[:i] + replacement + text[i + 1:]
        try:
            document = json.loads(mutated)
        except json.JSONDecodeError:
            continue
        assert certify.digest_of(document) != cert["digest"], (i, text[i - 20:i + 20])
        changed += 1
    assert changed > 500


def test_an_honest_certificate_verifies(tmp_path, specs):
    report = verify.verify(_make(tmp_path, specs), specs)
    assert report.verified, report.problems
    text = "\n".join(report.checks)
    for part in ("digest:", "results: all", "figures:", "specs:", "corpus: conform",
                 "policy: no manifest"):
        assert part in text
    assert any("not a built-in profile" in n for n in report.notes)


def test_an_edited_verdict_in_the_certificate_fails(tmp_path, specs):
    path = _make(tmp_path, specs)
    cert = _load(path)
    cert["results"]["cases"][2]["verdict"] = "fail"
    _save(path, cert)
    problems = "\n".join(_problems(path, specs))
    assert "digest: the certificate says" in problems
    case = cert["results"]["cases"][2]["id"]
    assert f"results: {case}: verdict 'fail' in the certificate, 'pass' in results.jsonl" in problems


def test_a_changed_byte_in_results_jsonl_fails(tmp_path, specs):
    path = _make(tmp_path, specs)
    results = tmp_path / "results.jsonl"
    lines = results.read_text().splitlines()
    lines[3] = lines[3].replace('"seconds": 0.003', '"seconds": 0.004')
    results.write_text("\n".join(lines) + "\n")
    problems = _problems(path, specs)
    assert any(p.startswith("results: ") and "has sha256" in p for p in problems)
    case = json.loads(lines[3])["id"]
    assert any(p.startswith(f"results: {case}: its result line hashes to") for p in problems)


def test_a_resealed_certificate_whose_figures_do_not_follow_fails(tmp_path, specs):
    path = _make(tmp_path, specs, verdicts={"multiply.float32.1": "fail"})
    cert = _load(path)
    assert cert["verdict"] == "not certified"  # 1 failure of 10 judged < 95%
    cert["verdict"], cert["totals"]["pass_rate"] = "certified", 1.0
    _save(path, certify.seal(cert))
    problems = _problems(path, specs)
    assert not any(p.startswith("digest") for p in problems)
    assert "figures: verdict: the certificate says \"certified\", recomputed \"not certified\"" in problems
    assert any(p.startswith("figures: totals.pass_rate: the certificate says 1.0") for p in problems)


def test_manifest_verdicts_need_a_profile_that_allows_them(tmp_path, specs):
    path = _make(tmp_path, specs, verdicts={"multiply.float32.1": "fail"})
    results = tmp_path / "results.jsonl"
    records = [json.loads(line) for line in results.read_text().splitlines()]
    records[1].update(verdict="waived", raw_verdict="fail")
    _write_results(results, records)
    _reseal_from_results(path)
    problems = "\n".join(_problems(path, specs))
    assert "policy: the profile allows no manifest, yet" in problems
    assert "manifest: multiply.float32.1: fail -> waived, the recorded manifest gives fail" in problems


def test_the_subnormal_policy_must_be_the_profiles(tmp_path, specs):
    path = _make(tmp_path, specs)
    cert = _load(path)
    cert["environment"]["subnormals_applied"] = "ftz"
    _save(path, certify.seal(cert))
    assert _problems(path, specs) == [
        "policy: judged by subnormal policy 'ftz', the profile requires ieee ('ieee')"]


def test_a_builtin_profile_name_must_carry_the_builtin_settings(tmp_path, specs):
    builtin = certify.load_profiles()["nnef-core"]
    profile = dataclasses.replace(_profile(), name="nnef-core", source="builtin",
                                  source_sha256=None, subnormals="declared",
                                  summary=builtin.summary)
    path = _make(tmp_path, specs, profile=profile)
    problems = _problems(path, specs)
    assert "profile nnef-core: settings.max_examples: the certificate says 3, the built-in " \
           "profile has 40" in problems
    assert any(p.startswith("profile nnef-core: settings.ops:") for p in problems)


def test_a_corpus_other_than_this_conforms_is_named_by_slice(tmp_path, specs):
    path = _make(tmp_path, specs)
    cert = _load(path)
    cert["corpus"]["sha256"] = "f" * 64
    cert["corpus"]["slices"][1]["sha256"] = "e" * 64
    _save(path, certify.seal(cert))
    problems = _problems(path, specs, rerun=3)
    assert any(p.startswith("corpus: conform") and "f" * 64 in p for p in problems)
    assert any(p.startswith("corpus: reshape float32: 4 cases eeeeeeeeeeeeeeee…") for p in problems)
    assert "rerun: not done, the corpus differs from the certificate's" in problems


def test_damaged_and_missing_certificates(tmp_path, specs):
    path = _make(tmp_path, specs)
    text = path.read_text()
    path.write_text(text.replace('"results": {', '"results": {{', 1))
    assert _problems(path, specs)[0].startswith("certificate: ")
    (tmp_path / "results.jsonl").unlink()
    path.write_text(text)
    assert any("cannot read" in p for p in _problems(path, specs))
    with pytest.raises(certify.CertifyError, match="cannot read certificate"):
        verify.verify(tmp_path / "nowhere.json", specs)
    (tmp_path / "summary.json").write_text("{}")
    with pytest.raises(certify.CertifyError, match="not a conform certificate"):
        verify.verify(tmp_path / "summary.json", specs)


def test_the_rerun_sample_follows_the_digest(tmp_path, specs):
    cert = _load(_make(tmp_path, specs, verdicts={"reshape.float32.0": "skip"}))
    sample = verify.rerun_sample(cert, 4)
    ids = [c["id"] for c in cert["results"]["cases"]]
    assert sample == verify.rerun_sample(copy.deepcopy(cert), 4) and len(sample) == 4
    assert sample == sorted(sample, key=ids.index) and "reshape.float32.0" not in sample
    assert len(verify.rerun_sample(cert, 100)) == len(ids) - 1
    one = verify.rerun_sample(cert, 1)   # raised to one case of every op x dtype cell
    assert sorted(i.rpartition(".")[0] for i in one) == ["multiply.float32", "reshape.float32"]
    others = {tuple(verify.rerun_sample({**cert, "digest": f"{i:064x}"}, 4)) for i in range(20)}
    assert len(others) > 1
    assert {tuple(verify.rerun_sample(cert, 4, seed)) for seed in range(20)} != {tuple(sample)}


# ----------------------------------------------------------------------------------- html

def test_certificate_html_is_escaped_and_self_contained(tmp_path, specs):
    profile = _profile(summary="<script>alert('x')</script> & <b>bold</b>")
    cert = _load(_make(tmp_path, specs, profile=profile, verdicts={"multiply.float32.2": "fail"}))
    html = render_certificate(cert)
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in html
    assert "<script" not in html and "src=" not in html and "http" not in html.lower()
    assert cert["digest"] in html and cert["corpus"]["sha256"] in html
    assert "not certified" in html and "multiply.float32.2" in html
    assert (tmp_path / "certificate.html").read_text() == html


NAN_WAIVER = """\
entries:
  - op: multiply
    dtype: float32
    when: {inputs: nan}
    kind: waiver
    reason: NaN operands go their own way here
    link: https://example.org/nan
"""


def test_a_certificate_lists_each_waiver_with_its_condition_and_the_cases_it_excused(tmp_path, specs):
    from conform.harness.assurance.manifests import load_manifest

    (tmp_path / "m.yaml").write_text(NAN_WAIVER, encoding="utf-8")
    manifest = load_manifest(tmp_path / "m.yaml")
    profile = _profile(manifests=True)
    corpus = certify.build_corpus(profile, specs)
    profile_of = {"elements": 1, "profiled": 1, "inputs_nan": 1, "inputs_inf": 0,
                  "inputs_nonfinite": 1, "inputs_max_abs": "inf", "inputs_min_of_max_abs": "inf",
                  "expected_zero": 0, "expected_inf": 0, "expected_nan": 1,
                  "expected_min_abs": "inf", "expected_max_abs": 0.0}
    records = []
    for i, case in enumerate(corpus.cases):
        record = {**case_record(case), "seconds": 0.001, "verdict": "pass"}
        if case.id in ("multiply.float32.0", "multiply.float32.1"):   # a NaN failure, another
            record.update(verdict="fail", failing={**profile_of, "inputs_nan": 1 - int(case.id[-1])})
        records.append(manifest.apply(record))
    assert [r["verdict"] for r in records[:2]] == ["waived", "fail"]
    _write_results(tmp_path / "results.jsonl", records)
    cert = certify.build_certificate(
        profile=profile, corpus=corpus, specs_info=certify.spec_hashes(specs, ["multiply", "reshape"]),
        meta=META, manifest=manifest, results_path=tmp_path / "results.jsonl",
        conform_version=_version(), run={"workers": 1, "timeout": 10.0},
        created="2026-01-01T00:00:00+00:00")
    (entry,) = cert["manifest"]["entries"]
    assert entry["when"] == {"inputs": "nan"} and entry["excused"] == 1
    write_certificate(tmp_path, cert)
    path = tmp_path / "certificate.json"
    assert not [p for p in _problems(path, specs) if p.startswith(("manifest", "policy"))]
    assert "condition" in (tmp_path / "certificate.html").read_text()
    cert = _load(path)
    cert["manifest"]["entries"][0]["excused"] = 0   # hiding what the waiver excused
    _save(path, certify.seal(cert))
    assert any(p.startswith("manifest: the certificate's counts of excused cases")
               for p in _problems(path, specs))
