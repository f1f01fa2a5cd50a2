"""Vendor adapters: the starter package (``conform adapter new``) and the self-check
(``conform adapter check``). See docs/adapters.md.

The check loads the adapter in a worker process (never in the caller), reads its declarations,
sends it two probe cases (one it cannot express, one that must raise) and runs a small smoke
suite through :class:`~conform.harness.run.isolation.WorkerPool` and
:func:`~conform.harness.judge.judging.result_record`, exactly as ``conform run`` would.
"""
from __future__ import annotations

import multiprocessing as mp
import re
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path

from conform.harness.backends.base import API_VERSION
from conform.model_formats import KNOWN_FORMATS
from conform.verdicts import BROKEN

SUBNORMAL_POLICIES = ("ieee", "ftz")
SMOKE_PROFILE = "smoke"   # the built-in profile (spec/profiles.yaml) the smoke suite runs
PROBE_OP = "conform_adapter_check_unclaimed_op"   # an op no adapter can claim
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class AdapterError(Exception):
    """A usage error (bad adapter name, target directory in the way): exit status 2."""


@dataclass
class Check:
    """One line of the checklist."""

    title: str
    ok: bool
    detail: str = ""
    fix: str = ""


@dataclass
class CheckReport:
    adapter: str
    checks: list = field(default_factory=list)
    info: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def add(self, title: str, ok: bool, detail: str = "", fix: str = "") -> None:
        self.checks.append(Check(title, bool(ok), detail, "" if ok else fix))

    def render(self) -> str:
        lines = [f"conform adapter check {self.adapter}"]
        for check in self.checks:
            lines.append(f"  [{'x' if check.ok else ' '}] {check.title}"
                         + (f": {check.detail.splitlines()[0]}" if check.detail else ""))
            rest = check.detail.splitlines()[1:] if check.detail else []
            lines.extend(f"        {line}" for line in rest)
            if check.fix:
                lines.append(f"      fix: {check.fix}")
        failed = [c for c in self.checks if not c.ok]
        lines.append(f"\n{self.adapter}: all {len(self.checks)} checks pass" if not failed else
                     f"\n{self.adapter}: {len(failed)} of {len(self.checks)} checks fail; to fix:")
        lines.extend(f"  - {c.title}: {c.fix}" for c in failed if c.fix)
        return "\n".join(lines)


# --- the probe worker -------------------------------------------------------------------------

def _plain(value):
    """``value`` as plain data (collections as lists), else its repr (an adapter may return
    anything)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (set, frozenset, list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _plain(v) for k, v in value.items()}
    return f"<{type(value).__name__}> {value!r}"


def _smoke():
    from conform.harness.assurance.certify import find_profile

    return find_profile(SMOKE_PROFILE)


def _probe_spec(specs: dict, model_format: str):
    """The smoke suite's first element-wise float32 op of two inputs that ``model_format`` can
    express (the probes' op), or None."""
    from conform.harness.run.claims import FORMAT_BINDINGS

    binding = FORMAT_BINDINGS.get(model_format)
    for op in _smoke().ops:
        spec = specs.get(op)
        if spec is not None and spec.elementwise and len(spec.inputs) == 2 \
                and "float32" in spec.dtypes and (binding is None or binding in spec.bindings):
            return spec
    return None


def _probe_cases(op: str):
    """``(well_formed, unclaimed, malformed)`` cases of the binary element-wise op ``op``: the
    second names an op no adapter claims, the third has one input where ``op`` takes two."""
    import numpy as np

    from conform.generators import Case

    ones = np.ones(4, np.float32)
    good = Case(id=f"adapter-check.{op}.float32", op=op, dtype="float32",
                input_dtypes=("float32", "float32"), out_dtype="float32", inputs=[ones, ones + 1],
                attrs={}, plan="adapter-check", seed=0)
    return good, replace(good, id=f"adapter-check.{PROBE_OP}", op=PROBE_OP), \
        replace(good, id=f"adapter-check.{op}.malformed", inputs=[ones])


def _run_probe(backend, spec, case) -> dict:
    from conform.model_formats import Unsupported

    from conform.harness.backends.models import call_run

    try:
        outputs = call_run(backend, spec, case)   # the probes reach run() whatever it claims
        return {"kind": "ok", "message": f"returned {len(list(outputs))} output(s)"}
    except Unsupported as exc:
        return {"kind": "unsupported", "message": str(exc)}
    except Exception as exc:
        return {"kind": "error", "message": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc()}


def _inspect_main(conn, backend_name: str, spec_dir) -> None:
    """Load the adapter, send its declarations, then the outcome of each probe."""
    try:
        from conform.harness.backends.registry import load_backend_class

        backend = load_backend_class(backend_name)()
    except BaseException:  # SystemExit from an import included
        conn.send(("fatal", traceback.format_exc()))
        return
    info = {key: _plain(getattr(backend, key, None)) for key in
            ("name", "model_format", "subnormals", "api_version", "ops", "dtypes", "devices")}
    for method in ("version", "device", "stats"):
        try:
            info[method] = _plain(getattr(backend, method)())
        except Exception:
            info[method] = None
            info[f"{method}_error"] = traceback.format_exc()
    conn.send(("info", info))
    from conform.harness.judge.outcome import Outcome
    from conform.harness.judge.judging import result_record
    from conform.spec import load_specs

    spec = _probe_spec(load_specs(spec_dir), getattr(backend, "model_format", "native"))
    if spec is None:
        conn.send(("done", None))
        return
    good, unclaimed, malformed = _probe_cases(spec.op)
    unclaimed_spec = replace(spec, op=PROBE_OP, bindings={})
    conn.send(("unsupported", _run_probe(backend, unclaimed_spec, unclaimed)))
    result = _run_probe(backend, spec, malformed)
    if result["kind"] == "error":  # the record the run would write for it
        outcome = Outcome("error", message=result["message"], traceback=result["traceback"])
        result["record"] = result_record(spec, good, outcome, backend_name)
    conn.send(("error", result))
    conn.send(("done", None))


def _inspect(backend_name: str, spec_dir, timeout: float) -> tuple[list, str]:
    """The messages the probe worker sent, and why it stopped early ('' if it did not)."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_inspect_main, args=(child, backend_name, spec_dir), daemon=True)
    process.start()
    child.close()
    messages, stopped = [], ""
    try:
        while True:
            if not parent.poll(timeout):
                stopped = f"no answer within {timeout:g} s"
                break
            try:
                message = parent.recv()
            except EOFError:
                process.join(5)
                from conform.harness.run.isolation import death_message

                stopped = death_message(process.exitcode)
                break
            messages.append(message)
            if message[0] in ("done", "fatal"):
                break
    finally:
        process.join(5)
        if process.is_alive():
            process.kill()
            process.join(5)
        parent.close()
    return messages, stopped


# --- the check --------------------------------------------------------------------------------

def _load_fix(name: str) -> str:
    if ":" in name:
        return (f"make the module in {name!r} importable here (install its package, or put its "
                "directory on PYTHONPATH) and fix the error at the bottom of the traceback")
    return (f"install the adapter's package in this environment (pip install -e DIR), register "
            f'it as `{name} = "your_module:YourBackend"` under '
            '[project.entry-points."conform.backends"], and fix the error the traceback ends with')


def _check_declarations(report: CheckReport, info: dict, spec_dir=None) -> None:
    name = info.get("name")
    report.add("name", isinstance(name, str) and bool(name.strip()), f"name = {name!r}",
               'set the class attribute `name = "yourname"` (the name reports show)')
    fmt = info.get("model_format")
    report.add("model_format", fmt in KNOWN_FORMATS, f"model_format = {fmt!r}",
               f"set `model_format` to one of {', '.join(KNOWN_FORMATS)}")
    policy = info.get("subnormals")
    report.add("subnormals", policy in SUBNORMAL_POLICIES, f"subnormals = {policy!r}",
               '`subnormals = "ieee"` if subnormal inputs and results are honoured, "ftz" if '
               "they are flushed to zero")
    version = info.get("version")
    report.add("version()", isinstance(version, str) and bool(version.strip()),
               info.get("version_error") or f"version() = {version!r}",
               "return the runtime's version as a non-empty str (it goes into every report)")
    device, stats = info.get("device"), info.get("stats")
    ok = isinstance(device, str) and bool(device) and isinstance(stats, dict)
    report.add("device() and stats()", ok,
               info.get("device_error") or info.get("stats_error")
               or f"device() = {device!r}, stats() = {stats!r}",
               "device() returns a non-empty str, stats() a dict of counters (or drop the "
               "overrides and inherit the defaults)")
    _check_claims(report, info, spec_dir)
    api = info.get("api_version")
    ok = isinstance(api, int) and not isinstance(api, bool) and 1 <= api <= API_VERSION
    report.add("API version", ok, f"written against contract {api!r}; this conform provides "
               f"{API_VERSION}",
               f"set `api_version` to the contract version you implement (1..{API_VERSION}); "
               "a newer one needs a newer conform")


def _check_claims(report: CheckReport, info: dict, spec_dir=None) -> None:
    """``ops``, ``dtypes`` and ``devices``: collections of known names (or None for ops/dtypes)."""
    from conform.spec import load_specs
    from conform.spec import DTYPES

    problems = []
    known = {"ops": set(load_specs(spec_dir)), "dtypes": set(DTYPES)}
    for key, names in known.items():
        value = info.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            problems.append(f"{key} = {value!r} is not a collection of names")
        elif unknown := sorted(set(value) - names):
            problems.append(f"{key} has unknown names {unknown}")
    devices, device = info.get("devices"), info.get("device")
    if not (isinstance(devices, list) and devices and all(isinstance(d, str) for d in devices)):
        problems.append(f"devices = {devices!r} is not a non-empty collection of names")
    elif device not in devices:
        problems.append(f"device() = {device!r} is not one of devices {devices}")
    claimed = (f"ops: {'all' if info.get('ops') is None else len(info['ops'])}, dtypes: "
               f"{'all' if info.get('dtypes') is None else ', '.join(sorted(info['dtypes']))}, "
               f"devices: {devices}")
    report.add("ops, dtypes and devices", not problems, "; ".join(problems) or claimed,
               "declare `ops` and `dtypes` as frozensets of the names `conform list` shows (or "
               "None for all), and `devices` as a tuple holding what device() returns")


def _check_probes(report: CheckReport, messages: dict) -> None:
    probe = messages.get("unsupported")
    if probe is not None:
        report.add("unexpressible case -> unsupported", probe["kind"] == "unsupported",
                   f"op {PROBE_OP!r} came back {probe['kind']}: {probe['message']}"
                   + (f"\n{probe['traceback'].rstrip()}" if probe.get("traceback") else ""),
                   "raise conform.harness.backends.Unsupported (with a reason) for an op, dtype or "
                   "attribute the backend cannot express: an unknown op is not an error")
    probe = messages.get("error")
    if probe is not None:
        record = probe.get("record") or {}
        ok = probe["kind"] == "error" and record.get("verdict") == "error" \
            and "traceback" in record
        report.add("exception -> error with traceback", ok,
                   f"a binary op given one input came back {probe['kind']}: {probe['message']}",
                   "let exceptions propagate out of run(): catching them (or turning them into "
                   "Unsupported, or returning outputs anyway) hides real failures")


def _smoke_cases(specs: dict) -> list:
    from conform.generators import generate_cases

    smoke, cases = _smoke(), []
    for op in smoke.ops:
        spec = specs.get(op)
        for dtype in smoke.dtypes if spec else ():
            if dtype in spec.dtypes:
                cases.extend(generate_cases(spec, dtype, count=smoke.max_examples, seed=smoke.seed))
    return cases


def _check_smoke(report: CheckReport, backend_name: str, spec_dir, timeout: float) -> list:
    from conform.harness.run.isolation import BackendLoadError, PoolSettings, WorkerPool
    from conform.spec import load_specs

    cases = _smoke_cases(load_specs(spec_dir))
    try:
        settings = PoolSettings(timeout=timeout, load_timeout=timeout, spec_dir=spec_dir, judge=True)
        with WorkerPool(backend_name, settings) as pool:
            records = [outcome.record or {"id": case.id, "op": case.op, "dtype": case.dtype,
                                          "verdict": outcome.kind, "message": outcome.message}
                       for case, outcome in pool.run(cases)]
    except BackendLoadError as exc:
        report.add("smoke suite", False, str(exc), _load_fix(backend_name))
        return []
    counts: dict = {}
    for record in records:
        counts[record["verdict"]] = counts.get(record["verdict"], 0) + 1
    broken = [r for r in records if r["verdict"] in BROKEN]
    computed = sum(counts.get(v, 0) for v in ("pass", "fail", "impl_defined"))
    smoke = _smoke()
    detail = (f"{len(records)} cases of {', '.join(smoke.ops)} x {', '.join(smoke.dtypes)}: "
              + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    detail += "".join(f"\n{r['id']}: {r['verdict']}: {r.get('message', '')}" for r in broken[:5])
    fix = ("see the messages above: run() must return a list of arrays in case.out_dtype, one "
           "per output, and must not crash or hang" if broken else
           "implement at least one of the smoke ops (or raise Unsupported only for what the "
           "runtime really cannot do)")
    report.add("smoke suite", not broken and computed > 0, detail, fix)
    return records


def check_adapter(backend_name: str, *, spec_dir=None, timeout: float = 60.0) -> CheckReport:
    """Run every check on the adapter registered as ``backend_name`` (or ``module:Class``)."""
    from conform.harness.backends.registry import UnknownBackend, check_backend

    report = CheckReport(backend_name)
    try:
        check_backend(backend_name)
    except UnknownBackend as exc:
        report.add("registered", False, str(exc), _load_fix(backend_name))
        return report
    messages, stopped = _inspect(backend_name, spec_dir, timeout)
    by_kind = {kind: payload for kind, payload in messages}
    if "fatal" in by_kind or "info" not in by_kind:
        detail = by_kind.get("fatal") or stopped
        report.add("loads in a worker", False,
                   f"adapter {backend_name!r} failed to load:\n{str(detail).rstrip()}",
                   _load_fix(backend_name))
        return report
    report.info = by_kind["info"]
    report.add("loads in a worker", True, f"{report.info.get('name')!r} "
               f"{report.info.get('version')!r} on {report.info.get('device')!r}")
    _check_declarations(report, report.info, spec_dir)
    _check_probes(report, by_kind)
    if stopped and "done" not in by_kind:
        report.add("probes", False, f"the worker stopped during the probes: {stopped}",
                   "run() must not crash or hang on a case it cannot express: raise Unsupported")
    _check_smoke(report, backend_name, spec_dir, timeout)
    return report


# --- the starter package ----------------------------------------------------------------------

def class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_")) + "Backend"


def new_adapter(name: str, directory: Path | None = None) -> Path:
    """Write the starter package for adapter ``name`` into ``directory`` (default
    ``./conform-<name>``); returns the directory."""
    if not _NAME.match(name or ""):
        raise AdapterError(f"adapter name {name!r}: use lower-case letters, digits and _, "
                           "starting with a letter (it becomes a Python package name)")
    directory = Path(directory) if directory is not None else Path(f"conform-{name}")
    if directory.exists() and any(directory.iterdir()):
        raise AdapterError(f"{directory} exists and is not empty; choose another --dir")
    package = directory / f"conform_{name}"
    package.mkdir(parents=True, exist_ok=True)
    values = {"name": name, "cls": class_name(name), "package": f"conform_{name}",
              "api": API_VERSION}
    (directory / "pyproject.toml").write_text(_template("pyproject.toml", values), encoding="utf-8")
    (package / "__init__.py").write_text(_template("__init__.py", values), encoding="utf-8")
    (directory / "README.md").write_text(_template("README.md", values), encoding="utf-8")
    return directory


def _template(name: str, values: dict) -> str:
    """The starter package's file ``name`` (harness/templates/adapter/<name>.tmpl) filled in."""
    import importlib.resources

    folder = importlib.resources.files("conform.harness") / "templates" / "adapter"
    return (folder / f"{name}.tmpl").read_text(encoding="utf-8").format(**values)
