"""Verification of certificates written by :mod:`conform.harness.assurance.certify`: the signature (under
the keys the verifier trusts), the digest, the results they name, every figure re-derived from
the result lines, the policy and profile, the corpus (inputs and oracle answers, regenerated
afresh: the local cache is not trusted) and spec hashes of this conform version, and a re-run
of the cases on the backend: all of them when it is installed, or a sample covering every
op x dtype cell."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from conform.harness.assurance.certify import (
    CERTIFICATE_FILE,
    CertifyError,
    Corpus,
    EXCUSED,
    FORMAT,
    Profile,
    SHOWN,
    build_corpus,
    digest_of,
    load_profiles,
    read_result_lines,
    sha256,
    spec_hashes,
    tally,
)
from conform.harness.assurance.manifests import Manifest, excused_counts, recorded_entry


@dataclass
class Verification:
    """What held, what did not (each a printable line), notes, and the verdict the certificate
    itself states (None if it could not be read)."""

    checks: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    claimed_verdict: str | None = None
    claimed_reasons: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return not self.problems

    def expect(self, held: bool, ok: str, problem: str) -> bool:
        (self.checks if held else self.problems).append(ok if held else problem)
        return held

    def problem_list(self, header: str, lines: list[str]) -> None:
        """One problem per line, at most SHOWN of them, then a count."""
        self.problems.extend(f"{header}: {line}" for line in lines[:SHOWN])
        if len(lines) > SHOWN:
            self.problems.append(f"{header}: ... and {len(lines) - SHOWN} more")


def load_certificate(path: Path | str) -> tuple[Path, dict | None, str | None]:
    """``(path of certificate.json, certificate or None, why it cannot be read)``. A missing
    file, or a JSON document that is not a conform certificate, is a :class:`CertifyError`; a
    damaged one (not valid JSON) is returned with the reason, for verification to fail."""
    path = Path(path)
    if path.is_dir():
        path = path / CERTIFICATE_FILE
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise CertifyError(f"cannot read certificate {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        return path, None, f"{path} is not UTF-8 text: {exc.reason}"
    try:
        certificate = json.loads(text)
    except json.JSONDecodeError as exc:
        return path, None, f"{path} is not valid JSON: {exc.msg} (line {exc.lineno})"
    if not isinstance(certificate, dict) or not str(certificate.get("format", "")).startswith(
            "conform-certificate/"):
        raise CertifyError(f"{path} is not a conform certificate (no format "
                           f"'conform-certificate/N')")
    if certificate["format"] != FORMAT:
        raise CertifyError(f"{path} is a {certificate['format']} certificate; this conform reads "
                           f"{FORMAT}")
    return path, certificate, None


def cell_of(case_id: str) -> str:
    """The op x dtype cell of a case id (``op.dtype.index``): the id without its last part."""
    return case_id.rpartition(".")[0]


def rerun_sample(certificate: dict, n: int, sample_seed: int = 0) -> list[str]:
    """``n`` case ids drawn from the certificate's cases that were run (not ``skip``), at least
    one from every op x dtype cell (so ``n`` is raised to the number of cells; all cases if
    fewer), determined by its digest and ``sample_seed``; in corpus order."""
    eligible = [c["id"] for c in certificate["results"]["cases"] if c["verdict"] != "skip"]
    rng = random.Random(f"{certificate['digest']}/{sample_seed}")
    cells: dict[str, list[int]] = {}
    for index, case_id in enumerate(eligible):
        cells.setdefault(cell_of(case_id), []).append(index)
    picked = {rng.choice(members) for members in cells.values()}
    rest = [i for i in range(len(eligible)) if i not in picked]
    picked.update(rng.sample(rest, max(0, min(n - len(picked), len(rest)))))
    return [eligible[i] for i in sorted(picked)]


def _short(digest) -> str:
    return str(digest)[:16] + "…" if digest else str(digest)


def _check_results(cert: dict, results_path: Path, report: Verification) -> list[dict] | None:
    """results.jsonl against the certificate: the file hash, and each case's line hash and
    verdicts. Returns the records (None if the file cannot be read)."""
    results = cert["results"]
    try:
        data, pairs = read_result_lines(results_path)
    except OSError as exc:
        report.problems.append(f"results: cannot read {results_path} named by the certificate: "
                               f"{exc.strerror}")
        return None
    except (ValueError, UnicodeDecodeError) as exc:
        report.problems.append(f"results: {results_path} is damaged: {exc}")
        return None
    report.expect(sha256(data) == results["sha256"],
                  f"results: {results_path.name} has the sha256 the certificate names "
                  f"({_short(results['sha256'])}, {len(pairs)} lines)",
                  f"results: {results_path} has sha256 {sha256(data)}, the certificate names "
                  f"{results['sha256']}")
    entries = results["cases"]
    lines = {}
    for line, record in pairs:
        lines.setdefault(record["id"], []).append((line, record))
    listed = [e["id"] for e in entries]
    bad = [f"{i} is in {results_path.name} {len(v)} times" for i, v in lines.items() if len(v) > 1]
    bad += [f"{i} is listed {listed.count(i)} times" for i in sorted(set(listed))
            if listed.count(i) > 1]
    bad += [f"{i} is in the certificate but not in {results_path.name}"
            for i in listed if i not in lines]
    bad += [f"{i} is in {results_path.name} but not in the certificate"
            for i in lines if i not in set(listed)]
    for entry in entries:
        if entry["id"] not in lines:
            continue
        line, record = lines[entry["id"]][0]
        if sha256(line) != entry.get("sha256"):
            bad.append(f"{entry['id']}: its result line hashes to {_short(sha256(line))}, the "
                       f"certificate says {_short(entry.get('sha256'))}")
        for key in ("verdict", "raw_verdict"):
            if entry.get(key) != record.get(key):
                bad.append(f"{entry['id']}: {key} {entry.get(key)!r} in the certificate, "
                           f"{record.get(key)!r} in {results_path.name}")
    if bad:
        report.problem_list("results", bad)
    else:
        report.checks.append(f"results: all {len(entries)} cases match their result lines")
    return [record for _, record in pairs]


def _differences(claimed, computed, where: str = "", other: str = "recomputed") -> list[str]:
    """Where two JSON values differ, as 'path: the certificate says X, <other> Y' lines."""
    if isinstance(claimed, dict) and isinstance(computed, dict):
        out = []
        for key in sorted(set(claimed) | set(computed), key=str):
            path = f"{where}.{key}" if where else str(key)
            out.extend(_differences(claimed.get(key), computed.get(key), path, other))
        return out
    if claimed != computed:
        return [f"{where}: the certificate says {json.dumps(claimed)[:160]}, {other} "
                f"{json.dumps(computed)[:160]}"]
    return []


def _manifest_from(cert: dict):
    """The manifest the certificate says it applied, rebuilt from its recorded entries."""
    entries = tuple(recorded_entry(e) for e in cert["manifest"]["entries"])
    return Manifest(entries, tuple(f["path"] for f in cert["manifest"]["files"]))


def _check_policy(cert: dict, records: list[dict] | None, report: Verification) -> None:
    """The profile's strictness: subnormal policy applied, manifests (not) applied as allowed."""
    settings, env, manifest = cert["profile"]["settings"], cert["environment"], cert["manifest"]
    wanted = env.get("subnormals_declared") if settings["subnormals"] == "declared" \
        else settings["subnormals"]
    report.expect(env.get("subnormals_applied") == wanted,
                  f"policy: judged by subnormal policy {wanted} as the profile requires "
                  f"({settings['subnormals']})",
                  f"policy: judged by subnormal policy {env.get('subnormals_applied')!r}, the "
                  f"profile requires {settings['subnormals']} ({wanted!r})")
    excused = [c["id"] for c in cert["results"]["cases"]
               if c["verdict"] in EXCUSED or "raw_verdict" in c]
    if not settings["manifests"]:
        report.expect(not manifest["applied"] and not manifest["entries"] and not excused,
                      "policy: no manifest applied, as the profile requires",
                      f"policy: the profile allows no manifest, yet the certificate applies "
                      f"{len(manifest['entries'])} entries and {len(excused)} cases carry "
                      f"manifest verdicts")
    if records is None:
        return
    rebuilt = _manifest_from(cert)
    reapplied = [rebuilt.apply(r) for r in records]
    wrong = [f"{r['id']}: {r.get('raw_verdict', r['verdict'])} -> {r['verdict']}, the recorded "
             f"manifest gives {again['verdict']}"
             for r, again in zip(records, reapplied) if again["verdict"] != r["verdict"]]
    if wrong:
        report.problem_list("manifest", wrong)
    elif manifest["applied"]:
        report.checks.append(f"manifest: every excused verdict follows from the "
                             f"{len(manifest['entries'])} recorded entries")
    if manifest["applied"]:
        counted = excused_counts(reapplied)
        claimed = {e["entry"]: e.get("excused", 0) for e in manifest["entries"]}
        found = {entry: counted.get(entry, 0) for entry in claimed}
        report.expect(claimed == found,
                      "manifest: each entry's count of excused cases matches the result lines",
                      f"manifest: the certificate's counts of excused cases {claimed} differ from "
                      f"the result lines' {found}")


def _check_profile(cert: dict, report: Verification) -> None:
    profile = cert["profile"]
    if profile["source"] != "builtin":
        report.notes.append(f"profile {profile['name']} is not a built-in profile (it came from "
                            f"{profile['source']}); its settings are taken from the certificate")
        return
    builtin = load_profiles().get(profile["name"])
    if builtin is None:
        report.problems.append(f"profile: this conform has no built-in profile "
                               f"{profile['name']!r}")
        return
    diffs = _differences(profile["settings"], builtin.settings(), "settings",
                         "the built-in profile has")
    if diffs:
        report.problem_list(f"profile {profile['name']}", diffs)
    else:
        report.checks.append(f"profile: {profile['name']} has the settings of the built-in "
                             f"profile")


def _check_hashes(cert: dict, specs: dict, report: Verification, use_cache: bool,
                  workers: int = 1):
    """Regenerate the corpus and re-hash the specs; returns the corpus (None if it differs)."""
    from conform.harness.run.runner import SelectionError

    settings = cert["profile"]["settings"]
    profile = Profile.from_settings(cert["profile"]["name"], settings)
    try:
        corpus = build_corpus(profile, specs, use_cache=use_cache, processes=workers)
    except SelectionError as exc:
        report.problems.append(f"corpus: the profile selects nothing in these specs: {exc}")
        return None
    except KeyError as exc:
        report.problems.append(f"corpus: cannot regenerate: {exc}")
        return None
    ops = sorted({s["op"] for s in corpus.slices})
    hashes = spec_hashes(specs, ops)
    claimed = cert["specs"]
    if not report.expect(hashes["sha256"] == claimed["sha256"],
                         f"specs: the spec files of {len(ops)} ops hash to the certificate's "
                         f"{_short(claimed['sha256'])}",
                         f"specs: the spec files hash to {hashes['sha256']}, the certificate "
                         f"names {claimed['sha256']}"):
        files = claimed.get("files", {})
        report.problem_list("specs", [f"{op}: {_short(files.get(op))} in the certificate, "
                                      f"{_short(hashes['files'].get(op))} here"
                                      for op in sorted(set(files) | set(hashes["files"]))
                                      if files.get(op) != hashes["files"].get(op)])
    held = report.expect(corpus.sha256 == cert["corpus"]["sha256"],
                         f"corpus: conform {_version()} regenerates {len(corpus.cases)} cases "
                         f"hashing to the certificate's {_short(corpus.sha256)}",
                         f"corpus: conform {_version()} generates {len(corpus.cases)} cases "
                         f"hashing to {corpus.sha256}, the certificate names "
                         f"{cert['corpus']['sha256']} ({cert['corpus'].get('cases')} cases)")
    if not held:
        claimed_slices = {(s["op"], s["dtype"]): s for s in cert["corpus"].get("slices", [])}
        ours = {(s["op"], s["dtype"]): s for s in corpus.slices}
        report.problem_list("corpus", [
            f"{op} {dtype}: {claimed_slices.get((op, dtype), {}).get('cases', 0)} cases "
            f"{_short(claimed_slices.get((op, dtype), {}).get('sha256'))} in the certificate, "
            f"{ours.get((op, dtype), {}).get('cases', 0)} cases "
            f"{_short(ours.get((op, dtype), {}).get('sha256'))} here"
            for op, dtype in sorted(set(claimed_slices) | set(ours))
            if claimed_slices.get((op, dtype)) != ours.get((op, dtype))])
        return None
    ids = [c.id for c in corpus.cases]
    listed = [c["id"] for c in cert["results"]["cases"]]
    report.expect(ids == listed, "corpus: the certificate lists every case of the corpus, in order",
                  f"corpus: the certificate lists {len(listed)} cases, the corpus has {len(ids)}"
                  f" (first difference: "
                  f"{next((f'{a} / {b}' for a, b in zip(listed, ids) if a != b), 'the length')})")
    return corpus


def _version() -> str:
    import conform

    return conform.__version__


def rerun_count(cert: dict, rerun: int | str | None, allow_module_backend: bool,
                report: Verification) -> int | None:
    """How many cases to re-run: None for all, 0 for none (with a note saying why), else a
    sample size. ``rerun`` None re-runs all where the backend is installed, ``"all"`` insists.
    Only installed backends (entry points in ``conform.backends``) are imported, unless
    ``allow_module_backend``; a re-run asked for on a backend that cannot be run is a
    :class:`CertifyError`."""
    from conform.harness.backends.registry import GROUP, available_backends

    backend = str(cert["environment"]["backend"])
    if rerun == 0:
        return 0
    if ":" in backend and not allow_module_backend:
        raise CertifyError(f"the certificate names the module path {backend!r} as its backend; "
                           f"conform imports only installed backends (entry points in {GROUP}) "
                           f"unless you pass --allow-module-backend (or --rerun 0 not to re-run)")
    if ":" not in backend and backend not in available_backends():
        if rerun is not None:
            raise CertifyError(f"--rerun: backend {backend!r} is not installed here; installed: "
                               f"{', '.join(sorted(available_backends()))}")
        report.notes.append(f"no case re-run: backend {backend!r} is not installed here, so "
                            f"the verdicts are not re-checked (install it, or trust a signature)")
        return 0
    return None if rerun in (None, "all") else int(rerun)


def _rerun(cert: dict, corpus: Corpus, specs: dict, n: int | None, sample_seed: int,
           report: Verification, *, spec_dir=None, workers: int = 1) -> None:
    """Re-run the cases (``n`` None) or a sample of ``n`` covering every op x dtype cell on the
    certificate's backend and compare the verdicts the backend earns (before any manifest)
    with the claimed ones."""
    from conform.harness.run.isolation import PoolSettings, WorkerPool
    from conform.harness.judge.judging import result_record

    env = cert["environment"]
    if not _same_adapter(env, report):
        return
    by_id = {c.id: c for c in corpus.cases}
    every = n is None
    eligible = [c["id"] for c in cert["results"]["cases"] if c["verdict"] != "skip"]
    ids = [i for i in (eligible if every else rerun_sample(cert, n, sample_seed)) if i in by_id]
    claimed = {c["id"]: c.get("raw_verdict", c["verdict"]) for c in cert["results"]["cases"]}
    timeout = cert.get("run", {}).get("timeout") or 60.0
    got, policy = {}, env["subnormals_applied"]
    settings = PoolSettings(workers=max(1, min(workers, len(ids))), timeout=timeout,
                            spec_dir=spec_dir, judge=True, subnormals=policy)
    with WorkerPool(env["backend"], settings) as pool:
        for case, outcome in pool.run([by_id[i] for i in ids]):  # crash, timeout: no record
            got[case.id] = outcome.record or result_record(specs[case.op], case, outcome,
                                                           env["backend"], policy)
        version = pool.info.get("version")
    if version != env.get("backend_version"):
        report.notes.append(f"rerun: {env['backend']} is {version} here, the certificate was "
                            f"made with {env.get('backend_version')}")
    wrong = [f"{i}: the certificate claims {claimed[i]}, {env['backend']} gives "
             f"{got[i]['verdict']}" + (f": {got[i]['message'][:300]}" if got[i].get("message") else "")
             for i in ids if got[i]["verdict"] != claimed[i]]
    cells = len({cell_of(i) for i in ids})
    what = (f"all {len(ids)} cases" if every else
            f"{len(ids)} sampled cases covering all {cells} op x dtype cells")
    if wrong:
        report.problem_list("rerun", wrong)
    else:
        report.checks.append(f"rerun: {what} give the claimed verdicts on {env['backend']} "
                             f"{version}" + ("" if every else f" ({', '.join(ids[:40])}"
                                             f"{', ...' if len(ids) > 40 else ''})"))


def _same_adapter(env: dict, report: Verification) -> bool:
    """Whether the adapter installed here is the one the certificate names (its distribution,
    version and files' digest); a problem saying how it differs if not. A re-run on other
    adapter code would prove nothing about the certified one."""
    from conform.harness.backends.registry import adapter_identity

    claimed = env.get("adapter")
    if not isinstance(claimed, dict):
        report.problems.append("rerun: refused: the certificate names no adapter digest, so no "
                               "re-run here can be shown to run the adapter it certifies")
        return False
    installed = adapter_identity(str(env["backend"]))
    diffs = _differences(claimed, installed, "adapter", "installed")
    if diffs:
        report.problem_list("rerun: refused: the installed adapter is not the certified one", diffs)
        return False
    report.checks.append(f"adapter: {installed['distribution'] or installed['module']} "
                         f"{installed['version'] or ''} installed here has the certified files' "
                         f"digest {_short(installed['sha256'])}")
    return True


def verify(path: Path | str, specs: dict, *, rerun: int | str | None = None, sample_seed: int = 0,
           results: Path | None = None, spec_dir=None, use_cache: bool = False,
           workers: int = 1, trusted_keys=(), allow_module_backend: bool = False) -> Verification:
    """Check a certificate: its signature under ``trusted_keys`` (Ed25519 public keys; a
    certificate that is unsigned or signed by another key fails); its digest; results.jsonl
    against it (file and line hashes); every figure and the verdict, recomputed from the
    result lines; the profile's strictness; the profile, spec and corpus hashes against this
    conform (the corpus is regenerated afresh unless ``use_cache``); and the claimed verdicts
    on the backend: every case (``rerun`` None, when the backend is installed), a sample of
    ``rerun`` cases covering every op x dtype cell, or none (0). A backend named by module
    path is imported only with ``allow_module_backend``."""
    report = Verification()
    path, cert, damaged = load_certificate(path)
    if cert is None:
        report.problems.append(f"certificate: {damaged}")
        return report
    try:
        report.claimed_verdict = str(cert.get("verdict"))
        report.claimed_reasons = [str(r) for r in cert.get("reasons") or []]
        _check_signature(cert, trusted_keys, report)
        count = rerun_count(cert, rerun, allow_module_backend, report)
        _verify(cert, path, specs, report, rerun=count, sample_seed=sample_seed, results=results,
                spec_dir=spec_dir, use_cache=use_cache, workers=workers)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        report.problems.append(f"certificate: malformed ({type(exc).__name__}: {exc})")
    return report


def _check_signature(cert: dict, trusted_keys, report: Verification) -> None:
    from conform.harness.assurance.signing import SIGNATURE, check_signature

    if trusted_keys:
        held, line = check_signature(cert, list(trusted_keys))
        report.expect(held, f"signature: {line}", f"signature: {line}")
    elif isinstance(cert.get(SIGNATURE), dict):
        report.notes.append(f"the certificate is signed by key "
                            f"{str(cert[SIGNATURE].get('key_id'))[:16]}, not checked: pass "
                            f"--trusted-key PUBKEY to prove who made it")
    else:
        report.notes.append("the certificate is not signed: nothing proves who made it")


def _verify(cert, path, specs, report, *, rerun, sample_seed, results, spec_dir, use_cache,
            workers) -> None:
    computed = digest_of(cert)
    report.expect(computed == cert.get("digest"),
                  f"digest: the certificate's content hashes to its digest {_short(computed)}",
                  f"digest: the certificate says {cert.get('digest')}, its content hashes to "
                  f"{computed}")
    if cert.get("conform_version") != _version():
        report.notes.append(f"the certificate was made by conform {cert.get('conform_version')}, "
                            f"this is conform {_version()}")
    named = path.parent / Path(str(cert["results"]["file"])).name   # beside it, nowhere else
    records = _check_results(cert, Path(results) if results else named, report)
    if records is not None:
        recomputed = tally(records, cert["profile"]["settings"])
        diffs = _differences({k: cert.get(k) for k in recomputed}, recomputed)
        if diffs:
            report.problem_list("figures", diffs)
        else:
            report.checks.append(f"figures: totals, per-op figures and the verdict "
                                 f"({cert['verdict']}) follow from the result lines")
    _check_policy(cert, records, report)
    _check_profile(cert, report)
    corpus = _check_hashes(cert, specs, report, use_cache, workers)
    if rerun != 0:
        if corpus is None:
            report.problems.append("rerun: not done, the corpus differs from the certificate's")
        else:
            _rerun(cert, corpus, specs, rerun, sample_seed, report, spec_dir=spec_dir,
                   workers=workers)
