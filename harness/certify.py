"""Certification: named profiles, their frozen corpora, certificates and their verification.

A *profile* (``spec/profiles.yaml``, shipped as ``conform/spec/profiles.yaml``, or a file given
with ``--profiles``) fixes the ops, the dtypes, the subnormal policy results are judged by,
whether a manifest of known deviations may be applied, the budget, the seed and the bar
(``min_pass_rate``, ``min_coverage``). The profile's *corpus* is the cases this conform version
generates for it; it is named by its hash. :func:`certify` runs the corpus on a backend and
writes a certificate; :func:`verify` checks one.

Hashes (all SHA-256, hex):

* corpus: over the :func:`conform.generators.case_digest` of every case, in corpus order (the
  digests' hex text concatenated); each op x dtype slice is hashed the same way;
* specs: over ``op NUL sha256(file) LF`` for each selected op, by op name;
* result line: over the line of ``results.jsonl`` as written (UTF-8, without its newline);
* ``results.sha256``: over the bytes of ``results.jsonl``;
* ``digest``: over the canonical JSON (sorted keys, no spaces, UTF-8) of the certificate
  without its ``digest`` field.

The digest is a checksum, not a signature: whoever edits a certificate can recompute it. What it
guarantees is that every figure in the certificate is bound to the result lines it came from,
and :func:`verify` re-derives every figure from those lines; ``--rerun N`` then re-runs a sample
of cases on the backend, which catches a forged but self-consistent certificate.
"""
from __future__ import annotations

import datetime
import hashlib
import importlib.resources
import json
import platform
import random
from dataclasses import dataclass, field
from pathlib import Path

from conform.spec import SpecError
from conform.spec._loader import _line_of, _read_mapping, _validate

FORMAT = "conform-certificate/1"
CERTIFICATE_FILE, RESULTS_FILE = "certificate.json", "results.jsonl"
POLICIES = ("ieee", "ftz", "declared")
UNCOUNTED = ("unsupported", "skip", "xfail", "waived")  # outside the coverage: not run or excused
EXCUSED = ("skip", "xfail", "xpass", "waived")           # verdicts only a manifest gives
SHOWN = 20  # mismatches listed per kind before the rest are counted

_TEXT = {"type": "string", "minLength": 1}
_RATE = {"type": "number", "minimum": 0, "maximum": 1}
PROFILE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "conform certification profiles",
    "type": "object",
    "additionalProperties": False,
    "required": ["profiles"],
    "properties": {"profiles": {
        "type": "object",
        "minProperties": 1,
        "propertyNames": {"pattern": "^[a-z0-9][a-z0-9_.-]*$"},
        "additionalProperties": {
            "type": "object",
            "additionalProperties": False,
            "required": ["summary", "ops", "subnormals", "manifests", "max_examples", "seed",
                         "min_pass_rate"],
            "properties": {
                "summary": _TEXT,
                "ops": {"type": "array", "items": _TEXT, "minItems": 1},
                "dtypes": {"type": "array", "minItems": 1,
                           "items": {"type": "string", "pattern": "^[a-z0-9]+$"}},
                "subnormals": {"enum": list(POLICIES)},
                "manifests": {"type": "boolean"},
                "max_examples": {"type": "integer", "minimum": 1},
                "seed": {"type": "integer", "minimum": 0},
                "min_pass_rate": _RATE,
                "min_coverage": _RATE,
            },
        },
    }},
}


class ProfileError(SpecError):
    """A profiles file is malformed (the message names file, line and field): exit status 2."""


class CertifyError(Exception):
    """A usage error: an unknown profile, a manifest a profile forbids, an unreadable
    certificate (exit status 2)."""


def sha256(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


# ---------------------------------------------------------------------------------- profiles

@dataclass(frozen=True)
class Profile:
    """A named selection, error-model strictness, budget, seed and bar."""

    name: str
    summary: str
    ops: tuple[str, ...]
    dtypes: tuple[str, ...] | None
    subnormals: str          # ieee | ftz | declared
    manifests: bool
    max_examples: int
    seed: int
    min_pass_rate: float
    min_coverage: float = 0.0
    source: str = "builtin"  # "builtin", or the profiles file it was read from
    source_sha256: str | None = None

    @property
    def subnormal_policy(self) -> str | None:
        """The policy to pass to a run: None means the one the backend declares."""
        return None if self.subnormals == "declared" else self.subnormals

    def settings(self) -> dict:
        """Everything the profile fixes, as recorded in a certificate."""
        return {"summary": self.summary, "ops": list(self.ops),
                "dtypes": list(self.dtypes) if self.dtypes else None,
                "subnormals": self.subnormals, "manifests": self.manifests,
                "max_examples": self.max_examples, "seed": self.seed,
                "min_pass_rate": float(self.min_pass_rate),
                "min_coverage": float(self.min_coverage)}

    @classmethod
    def from_settings(cls, name: str, settings: dict, source: str = "builtin",
                      source_sha256: str | None = None) -> Profile:
        return cls(name=name, summary=" ".join(settings["summary"].split()),
                   ops=tuple(settings["ops"]),
                   dtypes=tuple(settings["dtypes"]) if settings.get("dtypes") else None,
                   subnormals=settings["subnormals"], manifests=bool(settings["manifests"]),
                   max_examples=int(settings["max_examples"]), seed=int(settings["seed"]),
                   min_pass_rate=float(settings["min_pass_rate"]),
                   min_coverage=float(settings.get("min_coverage") or 0.0),
                   source=source, source_sha256=source_sha256)


def builtin_profiles_path() -> Path:
    return Path(str(importlib.resources.files("conform.spec") / "profiles.yaml"))


def load_profiles(path: Path | str | None = None) -> dict[str, Profile]:
    """The profiles of ``path`` (default: the built-in ones), validated."""
    builtin = path is None
    path = builtin_profiles_path() if builtin else Path(path)
    try:
        data, root = _read_mapping(path, "a profiles file", ProfileError)
    except OSError as exc:
        raise ProfileError(path, None, "", f"cannot read profiles: {exc.strerror}") from None
    _validate(data, root, path, PROFILE_SCHEMA, ProfileError)
    source, digest = ("builtin", None) if builtin else (str(path), sha256(path.read_bytes()))
    return {name: Profile.from_settings(name, settings, source, digest)
            for name, settings in data["profiles"].items()}


def find_profile(name: str, profiles_file: Path | str | None = None) -> Profile:
    """The profile ``name``: a built-in one, or one from ``profiles_file`` (whose names must not
    shadow built-in ones, so a certificate naming a built-in profile always means it)."""
    profiles = load_profiles()
    if profiles_file is not None:
        extra = load_profiles(profiles_file)
        clash = sorted(set(extra) & set(profiles))
        if clash:
            _, root = _read_mapping(Path(profiles_file), "a profiles file", ProfileError)
            raise ProfileError(profiles_file, _line_of(root, ["profiles", clash[0]]),
                               f"profiles.{clash[0]}",
                               f"{clash[0]!r} is a built-in profile; give yours another name")
        profiles.update(extra)
    if name not in profiles:
        from conform.harness.runner import SelectionError

        raise SelectionError(f"unknown profile {name!r}; profiles are: {', '.join(profiles)}")
    return profiles[name]


# ---------------------------------------------------------------------------- corpus, specs

@dataclass
class Corpus:
    """A profile's frozen corpus: its cases in order and their hashes."""

    cases: list
    sha256: str
    slices: list[dict] = field(default_factory=list)  # {op, dtype, cases, sha256} in order

    def info(self) -> dict:
        return {"sha256": self.sha256, "cases": len(self.cases), "slices": self.slices}


def select_pairs(profile: Profile, specs: dict) -> list[tuple]:
    """(spec, dtype label) pairs of the profile, as ``conform run --ops .. --dtypes ..`` selects."""
    from conform.harness.runner import select

    return select(specs, list(profile.ops), list(profile.dtypes) if profile.dtypes else None)


def corpus_sha256(cases) -> str:
    """SHA-256 over the case digests of ``cases`` (their hex text, concatenated in order)."""
    from conform.generators import case_digest

    return sha256("".join(case_digest(case) for case in cases))


def build_corpus(profile: Profile, specs: dict, *, use_cache: bool = True) -> Corpus:
    """Generate (or load from the corpus cache) the profile's cases and hash them."""
    from conform.generators import generate_cases

    cases, slices = [], []
    for spec, label in select_pairs(profile, specs):
        part = generate_cases(spec, label, count=profile.max_examples, seed=profile.seed,
                              use_cache=use_cache)
        slices.append({"op": spec.op, "dtype": label, "cases": len(part),
                       "sha256": corpus_sha256(part)})
        cases.extend(part)
    return Corpus(cases, corpus_sha256(cases), slices)


def spec_hashes(specs: dict, ops) -> dict:
    """The hash over the spec files of ``ops`` (by content), and each file's hash."""
    files = {}
    for op in sorted(set(ops)):
        spec = specs[op]
        files[op] = sha256(Path(spec.path).read_bytes() if spec.path else repr(spec))
    return {"sha256": sha256("".join(f"{op}\0{h}\n" for op, h in files.items())), "files": files}


# ------------------------------------------------------------------------- digest, results

def canonical(value) -> bytes:
    """The canonical JSON encoding that digests are computed over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def digest_of(certificate: dict) -> str:
    """SHA-256 over the canonical JSON of everything in ``certificate`` but its ``digest``."""
    return sha256(canonical({k: v for k, v in certificate.items() if k != "digest"}))


def seal(certificate: dict) -> dict:
    """``certificate`` with its ``digest`` (re)computed (the digest goes last)."""
    body = {k: v for k, v in certificate.items() if k != "digest"}
    return {**body, "digest": digest_of(body)}


def read_result_lines(path: Path) -> tuple[bytes, list[tuple[str, dict]]]:
    """The bytes of a results.jsonl file and its ``(line, record)`` pairs (blank lines skipped).
    Raises ValueError on a line that is not a JSON object with an id and a verdict."""
    data = Path(path).read_bytes()
    pairs = []
    for number, line in enumerate(data.decode("utf-8").split("\n"), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"line {number} is not JSON: {exc.msg}") from None
        if not isinstance(record, dict) or "id" not in record or "verdict" not in record:
            raise ValueError(f"line {number} is not a result record")
        pairs.append((line, record))
    return data, pairs


def case_entries(pairs: list[tuple[str, dict]], order: list[str]) -> list[dict]:
    """Per case: id, verdict (and the verdict the backend earned where a manifest changed it)
    and the hash of its result line, in corpus order (cases outside ``order`` go last)."""
    rank = {case_id: i for i, case_id in enumerate(order)}
    entries = []
    for line, record in pairs:
        entry = {"id": record["id"], "verdict": record["verdict"]}
        if "raw_verdict" in record:
            entry["raw_verdict"] = record["raw_verdict"]
        entry["sha256"] = sha256(line)
        entries.append(entry)
    return sorted(entries, key=lambda e: (rank.get(e["id"], len(rank)), e["id"]))


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}%"


def tally(records: list[dict], settings: dict) -> dict:
    """Totals, per op x dtype figures and the verdict under the profile ``settings``: the part of
    a certificate that :func:`verify` recomputes from the result lines."""
    from conform.reports import build_summary, to_json_safe

    summary = build_summary(records, {}, "")
    counts, cases = summary["counts"], summary["cases"]
    coverage = (cases - sum(counts[v] for v in UNCOUNTED)) / cases if cases else None
    rate = summary["pass_rate"]
    reasons, certified = [], True
    for what, value, floor in (("pass rate", rate, settings["min_pass_rate"]),
                               ("coverage", coverage, settings["min_coverage"])):
        held = value is not None and value >= floor
        certified = certified and held
        key = "min_pass_rate" if what == "pass rate" else "min_coverage"
        reasons.append(f"{what} {_share(value)} {'>=' if held else '<'} {_share(floor)} ({key})")
    by_op = {op: {label: {"cases": cell["cases"], "counts": cell["counts"],
                          "pass_rate": cell["pass_rate"], "worst_error": cell["worst_error"],
                          "bound": cell["bound"], "unit": cell["unit"],
                          "worst_case": cell["worst_case"]}
                  for label, cell in cells.items()}
             for op, cells in summary["by_op"].items()}
    return to_json_safe({
        "verdict": "certified" if certified else "not certified", "reasons": reasons,
        "totals": {"cases": cases, "counts": counts, "pass_rate": rate, "coverage": coverage},
        "by_op": by_op})


# ------------------------------------------------------------------------------- certify

def environment(meta: dict) -> dict:
    """Backend, runtime version, device, subnormal policies and the host's software."""
    import hypothesis
    import numpy as np

    keys = ("backend", "backend_version", "device", "model_format", "subnormals_declared",
            "subnormals_applied")
    return {**{k: meta.get(k) for k in keys},
            "python": f"{platform.python_implementation()} {platform.python_version()}",
            "numpy": np.__version__, "hypothesis": hypothesis.__version__,
            "platform": platform.platform(), "machine": platform.machine()}


def manifest_section(profile: Profile, manifest) -> dict:
    """Whether the profile allows manifests, and the files and entries that were applied."""
    files = [{"path": str(f), "sha256": sha256(Path(f).read_bytes())}
             for f in (manifest.files if manifest else ())]
    return {"allowed": profile.manifests, "applied": bool(manifest), "files": files,
            "entries": [e.as_json() for e in manifest.entries] if manifest else []}


def results_part(results_path: Path, settings: dict, order: list[str]) -> dict:
    """The parts of a certificate that follow from its result lines under the profile
    ``settings``: verdict, reasons, totals, by_op and results (file hash, per-case entries in
    the corpus order ``order``)."""
    data, pairs = read_result_lines(results_path)
    return {**tally([record for _, record in pairs], settings),
            "results": {"file": Path(results_path).name, "sha256": sha256(data),
                        "lines": len(pairs), "cases": case_entries(pairs, order)}}


def build_certificate(*, profile: Profile, corpus: Corpus, specs_info: dict, meta: dict,
                      manifest, results_path: Path, conform_version: str,
                      run: dict | None = None, created: str | None = None) -> dict:
    """The sealed certificate of a finished run of ``corpus`` whose results are at
    ``results_path``."""
    from conform.reports import to_json_safe

    outcome = results_part(results_path, profile.settings(), [c.id for c in corpus.cases])
    created = created or datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    profile_info = {"name": profile.name, "source": profile.source, "settings": profile.settings()}
    if profile.source_sha256:
        profile_info["source_sha256"] = profile.source_sha256
    certificate = {
        "format": FORMAT,
        "created": created,
        "verdict": outcome["verdict"],
        "reasons": outcome["reasons"],
        "profile": profile_info,
        "conform_version": conform_version,
        "environment": environment(meta),
        "corpus": corpus.info(),
        "specs": specs_info,
        "manifest": manifest_section(profile, manifest),
        "run": {"workers": None, "timeout": None, **(run or {}),
                "wall_seconds": meta.get("wall_seconds"),
                "worker_restarts": meta.get("worker_restarts")},
        "totals": outcome["totals"],
        "by_op": outcome["by_op"],
        "results": outcome["results"],
    }
    return seal(to_json_safe(certificate))


def certify(profile: Profile, backend: str, specs: dict, out: Path, *, spec_dir=None,
            workers: int = 1, timeout: float = 60.0, manifest=None, use_cache: bool = True,
            progress: bool = True) -> dict:
    """Run ``profile``'s corpus on ``backend`` into ``out`` (results.jsonl and the usual reports),
    then write certificate.json and certificate.html there. Returns the certificate."""
    import conform
    from conform.harness.manifests import manifest_summary
    from conform.harness.runner import RunConfig, run_suite
    from conform.reports import read_results, write_reports
    from conform.reports._certificate import write_certificate

    if manifest is not None and not profile.manifests:
        raise CertifyError(f"profile {profile.name} does not allow manifests of known deviations")
    corpus = build_corpus(profile, specs, use_cache=use_cache)
    out = Path(out)
    config = RunConfig(backend=backend, ops=list(profile.ops),
                       dtypes=list(profile.dtypes) if profile.dtypes else None,
                       max_examples=profile.max_examples, seed=profile.seed, out=out,
                       workers=workers, timeout=timeout, subnormals=profile.subnormal_policy,
                       use_cache=use_cache, spec_dir=spec_dir, manifest=manifest,
                       cases=corpus.cases)
    meta = run_suite(config, specs, progress=progress)
    meta["profile"] = profile.name
    if manifest is not None:
        meta["manifest"] = manifest_summary(manifest, list(read_results(out / RESULTS_FILE)))
    write_reports(out, meta, conform.__version__)
    certificate = build_certificate(
        profile=profile, corpus=corpus, specs_info=spec_hashes(specs, meta["selected_ops"]),
        meta=meta, manifest=manifest, results_path=out / RESULTS_FILE,
        conform_version=conform.__version__, run={"workers": workers, "timeout": timeout})
    write_certificate(out, certificate)
    return certificate


# -------------------------------------------------------------------------------- verify

@dataclass
class Verification:
    """What held, what did not (each a printable line), and notes."""

    checks: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

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


def rerun_sample(certificate: dict, n: int, sample_seed: int = 0) -> list[str]:
    """``n`` case ids (all if fewer) drawn from the certificate's cases that were run (not
    ``skip``), determined by its digest and ``sample_seed``; in corpus order."""
    eligible = [c["id"] for c in certificate["results"]["cases"] if c["verdict"] != "skip"]
    rng = random.Random(f"{certificate['digest']}/{sample_seed}")
    picked = rng.sample(range(len(eligible)), min(n, len(eligible)))
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
    from conform.harness.manifests import Entry, Manifest

    entries = []
    for e in cert["manifest"]["entries"]:
        path, _, line = e["entry"].rpartition(":")
        entries.append(Entry(op=e["op"], dtype=e["dtype"], kind=e["kind"], reason=e["reason"],
                             link=e["link"], path=path, line=int(line), case=e.get("case")))
    return Manifest(tuple(entries), tuple(f["path"] for f in cert["manifest"]["files"]))


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
    wrong = [f"{r['id']}: {r.get('raw_verdict', r['verdict'])} -> {r['verdict']}, the recorded "
             f"manifest gives {rebuilt.apply(r)['verdict']}"
             for r in records if rebuilt.apply(r)["verdict"] != r["verdict"]]
    if wrong:
        report.problem_list("manifest", wrong)
    elif manifest["applied"]:
        report.checks.append(f"manifest: every excused verdict follows from the "
                             f"{len(manifest['entries'])} recorded entries")


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


def _check_hashes(cert: dict, specs: dict, report: Verification, use_cache: bool):
    """Regenerate the corpus and re-hash the specs; returns the corpus (None if it differs)."""
    from conform.harness.runner import SelectionError

    settings = cert["profile"]["settings"]
    profile = Profile.from_settings(cert["profile"]["name"], settings)
    try:
        corpus = build_corpus(profile, specs, use_cache=use_cache)
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


def _rerun(cert: dict, corpus: Corpus, specs: dict, n: int, sample_seed: int,
           report: Verification, *, spec_dir=None, workers: int = 1) -> None:
    """Re-run a sample of the cases on the certificate's backend and compare the verdicts the
    backend earns (before any manifest) with the claimed ones."""
    from conform.harness.isolation import WorkerPool
    from conform.harness.judge import result_record
    from conform.harness.registry import UnknownBackend, check_backend

    env = cert["environment"]
    try:
        check_backend(env["backend"])
    except UnknownBackend as exc:
        raise CertifyError(f"--rerun: {exc}") from None
    by_id = {c.id: c for c in corpus.cases}
    ids = [i for i in rerun_sample(cert, n, sample_seed) if i in by_id]
    claimed = {c["id"]: c.get("raw_verdict", c["verdict"]) for c in cert["results"]["cases"]}
    timeout = cert.get("run", {}).get("timeout") or 60.0
    got, policy = {}, env["subnormals_applied"]
    with WorkerPool(env["backend"], workers=max(1, min(workers, len(ids))), timeout=timeout,
                    spec_dir=spec_dir, judge=True, subnormals=policy) as pool:
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
    if wrong:
        report.problem_list("rerun", wrong)
    else:
        report.checks.append(f"rerun: {len(ids)} sampled cases give the claimed verdicts on "
                             f"{env['backend']} {version} ({', '.join(ids)})")


def verify(path: Path | str, specs: dict, *, rerun: int = 0, sample_seed: int = 0,
           results: Path | None = None, spec_dir=None, use_cache: bool = True,
           workers: int = 1) -> Verification:
    """Check a certificate: its digest; results.jsonl against it (file and line hashes); every
    figure and the verdict, recomputed from the result lines; the profile's strictness; the
    profile, spec and corpus hashes against this conform; and, with ``rerun``, a sample of the
    claimed verdicts on the backend."""
    report = Verification()
    path, cert, damaged = load_certificate(path)
    if cert is None:
        report.problems.append(f"certificate: {damaged}")
        return report
    try:
        _verify(cert, path, specs, report, rerun=rerun, sample_seed=sample_seed, results=results,
                spec_dir=spec_dir, use_cache=use_cache, workers=workers)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        report.problems.append(f"certificate: malformed ({type(exc).__name__}: {exc})")
    return report


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
    records = _check_results(cert, Path(results) if results else path.parent / cert["results"]["file"],
                             report)
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
    corpus = _check_hashes(cert, specs, report, use_cache)
    if rerun:
        if corpus is None:
            report.problems.append("rerun: not done, the corpus differs from the certificate's")
        else:
            _rerun(cert, corpus, specs, rerun, sample_seed, report, spec_dir=spec_dir,
                   workers=workers)
