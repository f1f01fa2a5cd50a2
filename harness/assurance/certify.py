"""Certification: named profiles, their frozen corpora, certificates and their verification.

A *profile* (``spec/profiles.yaml``, shipped as ``conform/spec/profiles.yaml``, or a file given
with ``--profiles``) fixes the ops, the dtypes, the subnormal policy results are judged by,
whether a manifest of known deviations may be applied, the budget, the seed and the bar
(``min_pass_rate``, ``min_coverage``). The profile's *corpus* is the cases this conform version
generates for it; it is named by its hash. :func:`certify` runs the corpus on a backend and
writes a certificate; :func:`verify` checks one.

Hashes (all SHA-256, hex):

* corpus: over the :func:`conform.generators.case_digest` and
  :func:`conform.generators.answer_digest` of every case, in corpus order (the digests' hex
  text concatenated): inputs and oracle answers; each op x dtype slice is hashed the same way;
* specs: over ``op NUL sha256(file) LF`` for each selected op, by op name;
* result line: over the line of ``results.jsonl`` as written (UTF-8, without its newline);
* ``results.sha256``: over the bytes of ``results.jsonl``;
* ``digest``: over the canonical JSON (sorted keys, no spaces, UTF-8) of the certificate
  without its ``digest`` and ``signature`` fields.

The digest is a checksum, not a signature: whoever edits a certificate can recompute it. What it
guarantees is that every figure in the certificate is bound to the result lines it came from,
and :func:`verify` re-derives every figure from those lines and re-runs the cases on the
backend. Who made a certificate is proven by its Ed25519 signature
(:mod:`conform.harness.assurance.signing`: ``certify --key``, ``verify --trusted-key``).
"""
from __future__ import annotations

import datetime
import hashlib
import importlib.resources
import json
import platform
from dataclasses import dataclass, field
from pathlib import Path

from conform.records import canonical
from conform.spec import SpecError
from conform.spec import line_of, read_yaml_mapping, validate_document
from conform import verdicts

FORMAT = "conform-certificate/1"
CERTIFICATE_FILE, RESULTS_FILE = "certificate.json", "results.jsonl"
POLICIES = ("ieee", "ftz", "declared")
UNCOUNTED = verdicts.UNCOUNTED       # outside the coverage: not run or excused
ACCEPTS_INVALID = verdicts.ACCEPTS_INVALID
EXCUSED = verdicts.FROM_MANIFEST     # verdicts only a manifest gives
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
                "max_accepts_invalid": {"type": "integer", "minimum": 0},
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
    #: None: an ``accepts_invalid`` result (a value for an input the text forbids) is counted
    #: apart; a number: the most a certified run may have
    max_accepts_invalid: int | None = None
    source: str = "builtin"  # "builtin", or the profiles file it was read from
    source_sha256: str | None = None

    @property
    def subnormal_policy(self) -> str | None:
        """The policy to pass to a run: None means the one the backend declares."""
        return None if self.subnormals == "declared" else self.subnormals

    def settings(self) -> dict:
        """Everything the profile fixes, as recorded in a certificate."""
        settings = {"summary": self.summary, "ops": list(self.ops),
                    "dtypes": list(self.dtypes) if self.dtypes else None,
                    "subnormals": self.subnormals, "manifests": self.manifests,
                    "max_examples": self.max_examples, "seed": self.seed,
                    "min_pass_rate": float(self.min_pass_rate),
                    "min_coverage": float(self.min_coverage)}
        if self.max_accepts_invalid is not None:
            settings["max_accepts_invalid"] = int(self.max_accepts_invalid)
        return settings

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
                   max_accepts_invalid=settings.get("max_accepts_invalid"),
                   source=source, source_sha256=source_sha256)


def builtin_profiles_path() -> Path:
    return Path(str(importlib.resources.files("conform.spec") / "profiles.yaml"))


def load_profiles(path: Path | str | None = None) -> dict[str, Profile]:
    """The profiles of ``path`` (default: the built-in ones), validated."""
    builtin = path is None
    path = builtin_profiles_path() if builtin else Path(path)
    try:
        data, root = read_yaml_mapping(path, "a profiles file", ProfileError)
    except OSError as exc:
        raise ProfileError(path, None, "", f"cannot read profiles: {exc.strerror}") from None
    validate_document(data, root, path, PROFILE_SCHEMA, ProfileError)
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
            _, root = read_yaml_mapping(Path(profiles_file), "a profiles file", ProfileError)
            raise ProfileError(profiles_file, line_of(root, ["profiles", clash[0]]),
                               f"profiles.{clash[0]}",
                               f"{clash[0]!r} is a built-in profile; give yours another name")
        profiles.update(extra)
    if name not in profiles:
        from conform.harness.run.runner import SelectionError

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
    from conform.harness.run.runner import select

    return select(specs, list(profile.ops), list(profile.dtypes) if profile.dtypes else None)


def corpus_sha256(cases) -> str:
    """SHA-256 over the case and answer digests of ``cases`` (their hex text, concatenated in
    order): the inputs and the oracle answers, everything a verdict depends on."""
    from conform.generators import answer_digest, case_digest

    return sha256("".join(case_digest(case) + answer_digest(case) for case in cases))


def build_corpus(profile: Profile, specs: dict, *, use_cache: bool = True,
                 processes: int = 1) -> Corpus:
    """Generate (or load from the corpus cache) the profile's cases and hash them; slices the
    cache lacks are drawn in up to ``processes`` processes."""
    from conform.generators import fill_corpus, generate_cases
    from conform.oracles.expectations import expect
    from conform.harness.run.processes import forking_context

    pairs = select_pairs(profile, specs)
    if use_cache:
        fill_corpus(pairs, count=profile.max_examples, seed=profile.seed, processes=processes,
                    context=forking_context(), answer=expect)
    cases, slices = [], []
    for spec, label in pairs:
        part = generate_cases(spec, label, count=profile.max_examples, seed=profile.seed,
                              use_cache=use_cache, answer=expect)
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

UNSEALED = ("digest", "signature")   # the fields the digest does not cover


def digest_of(certificate: dict) -> str:
    """SHA-256 over the canonical JSON of everything in ``certificate`` but its ``digest`` and
    ``signature``."""
    return sha256(canonical({k: v for k, v in certificate.items() if k not in UNSEALED}))


def seal(certificate: dict) -> dict:
    """``certificate`` with its ``digest`` (re)computed (the digest goes last) and without a
    signature (which sealing would invalidate)."""
    body = {k: v for k, v in certificate.items() if k not in UNSEALED}
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


def tally(records: list[dict], settings: dict) -> dict:
    """Totals, per op x dtype figures and the verdict under the profile ``settings``: the part of
    a certificate that :func:`verify` recomputes from the result lines."""
    from conform.reports import build_summary, rate_text, to_json_safe

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
        reasons.append(f"{what} {rate_text(value)} {'>=' if held else '<'} {rate_text(floor)} "
                       f"({key})")
    if settings.get("max_accepts_invalid") is not None:   # the profile counts them
        accepted, most = counts.get(ACCEPTS_INVALID, 0), settings["max_accepts_invalid"]
        certified = certified and accepted <= most
        reasons.append(f"{ACCEPTS_INVALID} {accepted} {'<=' if accepted <= most else '>'} "
                       f"{most} (max_accepts_invalid)")
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
    """Backend, runtime version, device, subnormal policies, the adapter's code (its
    distribution, version and files' digest: :func:`~conform.harness.backends.registry.adapter_identity`)
    and the host's software."""
    import hypothesis
    import numpy as np

    keys = ("backend", "backend_version", "device", "model_format", "subnormals_declared",
            "subnormals_applied", "adapter")
    return {**{k: meta.get(k) for k in keys},
            "python": f"{platform.python_implementation()} {platform.python_version()}",
            "numpy": np.__version__, "hypothesis": hypothesis.__version__,
            "platform": platform.platform(), "machine": platform.machine()}


def portable_path(path: Path | str) -> str:
    """``path`` as a certificate records it, never absolute: a file shipped with conform as
    ``conform/<package>/<name>``, a file under the working directory relative to it, any other
    by its name alone (its sha256, recorded beside it, says which file it was)."""
    path = Path(path).resolve()
    roots = [(Path(str(importlib.resources.files(f"conform.{package}"))).resolve(),
              f"conform/{package}") for package in ("manifests", "spec", "ops")]
    for root, name in roots:
        if path.is_relative_to(root):
            return f"{name}/{path.relative_to(root).as_posix()}"
    if path.is_relative_to(Path.cwd()):
        return path.relative_to(Path.cwd()).as_posix()
    return path.name


def manifest_section(profile: Profile, manifest, records=()) -> dict:
    """Whether the profile allows manifests, and the files and entries that were applied, each
    with the number of cases it excused among ``records`` (``excused``)."""
    from conform.harness.assurance.manifests import excused_counts

    files = [{"path": portable_path(f), "sha256": sha256(Path(f).read_bytes())}
             for f in (manifest.files if manifest else ())]
    counts = excused_counts(records) if manifest else {}
    entries = []
    for entry in (manifest.entries if manifest else ()):
        recorded = entry.as_json()
        recorded["entry"] = f"{portable_path(entry.path)}:{entry.line}"
        recorded["excused"] = counts.get(entry.where, 0)
        entries.append(recorded)
    return {"allowed": profile.manifests, "applied": bool(manifest), "files": files,
            "entries": entries}


def results_part(results_path: Path, settings: dict, order: list[str]) -> dict:
    """The parts of a certificate that follow from its result lines under the profile
    ``settings``: verdict, reasons, totals, by_op and results (file hash, per-case entries in
    the corpus order ``order``)."""
    return _results_of(results_path, *read_result_lines(results_path), settings, order)


def _results_of(results_path: Path, data: bytes, pairs: list, settings: dict, order: list[str]) -> dict:
    """:func:`results_part` of result lines already read (``data``, their ``pairs``)."""
    return {**tally([record for _, record in pairs], settings),
            "results": {"file": Path(results_path).name, "sha256": sha256(data),
                        "lines": len(pairs), "cases": case_entries(pairs, order)}}


def build_certificate(*, profile: Profile, corpus: Corpus, specs_info: dict, meta: dict,
                      manifest, results_path: Path, conform_version: str,
                      run: dict | None = None, created: str | None = None) -> dict:
    """The sealed certificate of a finished run of ``corpus`` whose results are at
    ``results_path``."""
    from conform.reports import to_json_safe

    data, pairs = read_result_lines(results_path)
    outcome = _results_of(results_path, data, pairs, profile.settings(), [c.id for c in corpus.cases])
    created = created or datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    source = profile.source if profile.source == "builtin" else portable_path(profile.source)
    profile_info = {"name": profile.name, "source": source, "settings": profile.settings()}
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
        "manifest": manifest_section(profile, manifest, [record for _, record in pairs]),
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
            progress: bool = True, key=None) -> dict:
    """Run ``profile``'s corpus on ``backend`` into ``out`` (results.jsonl and the usual reports),
    then write certificate.json and certificate.html there, signed with the Ed25519 private
    ``key`` if one is given (:mod:`conform.harness.assurance.signing`). Returns the certificate."""
    import conform
    from conform.harness.assurance.manifests import manifest_summary
    from conform.harness.run.runner import RunConfig, run_suite
    from conform.reports import write_reports
    from conform.reports import write_certificate

    if manifest is not None and not profile.manifests:
        raise CertifyError(f"profile {profile.name} does not allow manifests of known deviations")
    corpus = build_corpus(profile, specs, use_cache=use_cache, processes=workers)
    out = Path(out)
    config = RunConfig(backend=backend, ops=list(profile.ops),
                       dtypes=list(profile.dtypes) if profile.dtypes else None,
                       max_examples=profile.max_examples, seed=profile.seed, out=out,
                       workers=workers, timeout=timeout, subnormals=profile.subnormal_policy,
                       use_cache=use_cache, spec_dir=spec_dir, manifest=manifest,
                       cases=corpus.cases)
    from conform.harness.backends.registry import adapter_identity

    adapter = adapter_identity(backend)   # before the run: the code that earned the verdicts
    meta, tally = run_suite(config, specs, progress=progress)
    meta["profile"], meta["adapter"] = profile.name, adapter
    if manifest is not None:
        meta["manifest"] = manifest_summary(manifest, tally.manifest_records())
    write_reports(out, meta, conform.__version__, tally=tally)
    certificate = build_certificate(
        profile=profile, corpus=corpus, specs_info=spec_hashes(specs, meta["selected_ops"]),
        meta=meta, manifest=manifest, results_path=out / RESULTS_FILE,
        conform_version=conform.__version__, run={"workers": workers, "timeout": timeout})
    if key is not None:
        from conform.harness.assurance.signing import sign

        certificate = sign(certificate, key)
    write_certificate(out, certificate)
    if key is not None:   # the same, as a signed in-toto statement for supply-chain tooling
        from conform.harness.assurance.attestation import write_envelope

        write_envelope(out, certificate, key)
    return certificate
