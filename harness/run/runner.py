"""The run: select specs, generate cases, execute them in isolated workers, judge, write results."""
from __future__ import annotations

import contextlib
import fnmatch
import gc
import hashlib
import multiprocessing
import os
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from conform.generators import (dtype_labels, exhaustive_cases, fill_corpus, generate_cases,
                                prune_corpus)
from conform.harness.run.claims import standard_allows, standard_refuses
from conform.harness.run.isolation import Judged, PoolSettings, WorkerPool
from conform.oracles.expectations import expect
from conform.harness.run.processes import backend_binding, forking_context
from conform.harness.backends.base import onnx_opset
from conform.harness.judge.judging import result_record
from conform.harness.run.outdir import (NotResumable, check_same_run, complete_lines, read_previous,
                                    remove_stale_reports)
from conform.reports import ResultWriter, Tally, encode, write_summary
from conform.verdicts import PROBLEMS

#: How often a running run rewrites its summary.json (marked incomplete: "N of M cases"): every
#: CHECKPOINT_SECONDS, or CHECKPOINT_SHARE times the last rewrite's cost if that is longer (a
#: summary of 30k cases takes 0.3-2 s to build and write, on the parent's critical path).
CHECKPOINT_SECONDS = 5.0
CHECKPOINT_SHARE = 20


@dataclass
class RunConfig:
    backend: str
    ops: list[str] | None = None
    dtypes: list[str] | None = None
    max_examples: int = 20
    seed: int = 0
    out: Path = Path("conform-out")
    workers: int = 1
    timeout: float = 60.0
    load_timeout: float | None = None   # None: WorkerPool's default
    subnormals: str | None = None   # None: the policy the backend declares
    exhaustive: bool = False
    programs: bool = False          # add the program suite (conform.spec.programs) of the format
    use_cache: bool = True
    spec_dir: Path | None = None
    memory_limit_mb: int | None = None
    recycle_after: int | None = None
    manifest: object | None = None  # a conform.harness.assurance.manifests.Manifest: skip, xfail, waiver
    cases: list | None = None       # a precomputed corpus (conform certify): run exactly these
    resume: bool = False            # continue the interrupted run in ``out``, skipping its cases
    interruptible: bool = False     # Ctrl-C ends the run early, with what it has (and kills
                                    # this process's multiprocessing children: the workers)
    executor: str = "local"         # where the cases run: "local" (WorkerPool) or "ray"
    address: str | None = None      # the Ray cluster's (None: Ray's default)

    def pool_settings(self) -> PoolSettings:
        """How the run's worker pool runs: its workers judge and tally the cases themselves."""
        return PoolSettings(workers=self.workers, timeout=self.timeout,
                            load_timeout=self.load_timeout, judge=True,
                            subnormals=self.subnormals, manifest=self.manifest,
                            memory_limit_mb=self.memory_limit_mb,
                            recycle_after=self.recycle_after,
                            spec_dir=None if self.spec_dir is None else str(self.spec_dir))


@contextlib.contextmanager
def cyclic_gc_paused():
    """Pause Python's cycle collector. A run holds a million small acyclic objects (the cases,
    then the result records) that reference counting frees; the collector would walk them all
    again and again as more arrive (measured: decoding a worker's reply took 3x as long)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _rounded(counts: dict) -> dict:
    return {key: round(value, 3) if isinstance(value, float) else value
            for key, value in counts.items()}


class SelectionError(ValueError):
    pass


def select(specs: dict, ops: list[str] | None, dtypes: list[str] | None) -> list[tuple]:
    """(spec, dtype label) pairs chosen by op globs and dtype names (either side of a conversion)."""
    chosen = []
    for name, spec in specs.items():
        if ops and not any(fnmatch.fnmatchcase(name, pattern) for pattern in ops):
            continue
        for label in dtype_labels(spec):
            if dtypes and not any(d in dtypes for d in label.split("->")) and label not in dtypes:
                continue
            chosen.append((spec, label))
    if not chosen:
        raise SelectionError(f"no op/dtype matches --ops {ops} --dtypes {dtypes}; "
                             f"ops are: {', '.join(specs)}")
    return chosen


class _Concatenated:
    """Several lazy case sequences as one, with a length (for the progress display)."""

    def __init__(self, parts):
        self.parts = parts

    def __len__(self) -> int:
        return sum(len(part) for part in self.parts)

    def __iter__(self):
        for part in self.parts:
            yield from part


class Progress:
    """A one-line progress display on stderr: cases done, rate, ETA, failures so far."""

    def __init__(self, total: int, label: str, stream=sys.stderr):
        self.total, self.label, self.stream = total, label, stream
        self.done = self.failures = 0
        self.start = self.last = time.monotonic()
        self.tty = stream.isatty()

    def update_many(self, counts) -> None:
        """Count finished cases: ``counts`` holds verdict -> count mappings."""
        for part in counts:
            self.done += sum(part.values())
            self.failures += sum(part.get(v, 0) for v in PROBLEMS)
        now = time.monotonic()
        if now - self.last >= (0.2 if self.tty else 5.0) or self.done == self.total:
            self.last = now
            rate = self.done / max(now - self.start, 1e-9)
            eta = (self.total - self.done) / rate if rate else 0.0
            line = (f"[{self.label}] {self.done}/{self.total} cases  {rate:,.0f}/s  "
                    f"ETA {eta:,.0f}s  failures {self.failures}")
            self.stream.write(("\r" + line) if self.tty else line + "\n")
            if self.tty and self.done == self.total:
                self.stream.write("\n")
            self.stream.flush()


def run_suite(config: RunConfig, specs: dict, *, progress: bool = True) -> tuple[dict, Tally]:
    """Run the suite, writing its result records to ``config.out``/results.jsonl; returns the
    run metadata and the records' :class:`~conform.reports.Tally` (what the reports need; the
    records themselves are not kept: ``read_results`` reads them back).

    While it runs, summary.json beside results.jsonl says the run is incomplete (rewritten every
    :data:`CHECKPOINT_SECONDS`), and the reports of an earlier run are gone. ``config.resume``
    continues the run an earlier, interrupted one left in ``config.out``; with
    ``config.interruptible``, Ctrl-C ends the run early and ``meta["complete"]`` is False."""
    with cyclic_gc_paused(), _interrupts_reach_parent_only():
        return _run_suite(config, specs, progress)


def with_programs(specs: dict, config: RunConfig, binding: str | None) -> dict:
    """``specs``, the programs ``config.ops`` names (not as globs) and, with ``config.programs``,
    the program suite of the model format whose spec binding is ``binding`` (the XLA ops' for a
    backend that runs every op: None), by name."""
    from conform.spec.programs import chain_names, is_program

    names = [op for op in config.ops or () if is_program(op) and op in specs]
    if config.programs:
        names += chain_names(specs, binding or "xla", seed=config.seed)
    return {**specs, **{name: specs[name] for name in names}} if names else specs


_ASK = object()   # by_format's default: ask the backend


def by_format(pairs: list, backend: str, binding: "str | None | object" = _ASK) -> list:
    """The (spec, dtype label) pairs whose op the backend's model format can express: the ops
    with the spec binding it consumes (an ONNX backend runs the ONNX ops, jax the XLA ones, nnef
    the NNEF ones), and the types the format's standard allows (ONNX: the operator's schema at
    the run's opset; NNEF: the fragment's declared tensor types; XLA: the StableHLO class of the
    op's operand, conform.ops.xla_types); all
    of them for a backend that names no ``binding`` (numpy). The backend's workers say which
    binding it consumes (this process never imports the adapter); without ``binding``, a
    process of its own is asked (:func:`~conform.harness.run.isolation.backend_binding`)."""
    if binding is _ASK:
        binding = backend_binding(backend)
    if binding is None:
        return pairs
    bound = [(spec, label) for spec, label in pairs if binding in spec.bindings]
    if not bound:
        raise SelectionError(f"none of the selected ops has the {binding} binding that "
                             f"{backend} runs")
    allows = standard_allows(binding)
    return [(spec, label) for spec, label in bound if allows(spec, label)] if allows else bound


def expressible(cases: list, specs: dict, binding: str | None) -> tuple[list, list]:
    """``(cases, left out)``: those of ``cases`` the model format whose spec binding is
    ``binding`` can express, and for those it cannot (never run, nor counted: not part of the
    format's suite) ``{"op", "dtype", "reason", "cases"}`` per op, dtype and reason, the
    summary's ``not_expressible``. All of them where the format's lowerings refuse nothing."""
    refuses = standard_refuses(binding)
    if refuses is None:
        return cases, []
    kept, left = [], Counter()
    for case in cases:
        spec = specs.get(case.op)
        # (a given corpus, conform certify's, may hold ops of no binding for the format: the run
        # reports them unsupported, as before)
        reason = refuses(spec, case) if spec is not None and binding in spec.bindings else None
        if reason is None:
            kept.append(case)
        else:
            left[case.op, case.dtype, reason] += 1
    return kept, [{"op": op, "dtype": dtype, "reason": reason, "cases": n}
                  for (op, dtype, reason), n in sorted(left.items())]


def _generate(config: RunConfig, specs: dict, binding: str | None) -> tuple[list, object, list,
                                                                           list]:
    """``(pairs, cases to run, records of the cases a manifest skips, the cases the format
    cannot express by op, dtype and reason: :func:`expressible`)``, for a backend whose model
    format consumes the spec binding ``binding``."""
    pairs = by_format(select(with_programs(specs, config, binding), config.ops, config.dtypes),
                      config.backend, binding)
    if config.exhaustive:
        # float32 (2**32 inputs per op) only when asked for by name
        sweeps = [(spec, label, exhaustive_cases(spec, label)) for spec, label in pairs
                  if label != "float32" or "float32" in (config.dtypes or [])]
        sweeps = [sweep for sweep in sweeps if sweep[2]]
        if not sweeps:
            raise SelectionError("--exhaustive covers unary element-wise ops in float16 and "
                                 "bfloat16 (and float32 with --dtypes float32); the selection "
                                 "has none")
        pairs = [(spec, label) for spec, label, _ in sweeps]
        cases = _Concatenated([chunks for _, _, chunks in sweeps])
    elif config.cases is not None:
        cases = list(config.cases)
    else:
        if config.use_cache:   # a cold cache: the slices are drawn on all the run's cores
            fill_corpus(pairs, count=config.max_examples, seed=config.seed,
                        processes=config.workers, context=forking_context(), answer=expect)
        cases = [case for spec, label in pairs
                 for case in generate_cases(spec, label, count=config.max_examples, seed=config.seed,
                                            use_cache=config.use_cache, answer=expect)]
    prune_corpus()   # after a run that generated cases: the cache stays under its size cap
    left_out: list = []
    if not config.exhaustive:   # a sweep (unary element-wise ops) stays lazy
        cases, left_out = expressible(cases, {**specs, **{spec.op: spec for spec, _ in pairs}},
                                      binding)
    skipped: list = []
    if config.manifest is not None and not config.exhaustive:  # a sweep stays lazy: not partitioned
        cases, skipped = config.manifest.partition(cases)
    return pairs, cases, skipped, left_out


def run_key(config: RunConfig, pairs: list, specs: dict) -> dict:
    """What a run's results depend on besides the backend's version: a resumed run must match
    the interrupted one in all of it (the spec files and manifests by content)."""
    import conform

    def digest(paths) -> str:
        h = hashlib.sha256()
        for path in paths:
            h.update(f"{path}\0".encode() + hashlib.sha256(Path(path).read_bytes()).digest())
        return h.hexdigest()

    ops = sorted({spec.op for spec, _ in pairs})
    manifest = list(config.manifest.files) if config.manifest is not None else []
    return {"backend": config.backend, "ops": config.ops, "dtypes": config.dtypes,
            "max_examples": config.max_examples, "seed": config.seed,
            "exhaustive": config.exhaustive, "programs": config.programs,
            "subnormals": config.subnormals,
            "conform_version": conform.__version__,
            "onnx_opset": onnx_opset(),
            "specs_sha256": digest(node.path for op in ops
                                   for node in specs[op].node_specs
                                   if node.path),
            "manifest": manifest, "manifest_sha256": digest(manifest)}


class _Remaining:
    """The cases of a lazy sequence (an exhaustive sweep) that a resumed run has still to run."""

    def __init__(self, cases, done: set):
        self.cases, self.done = cases, done

    def __len__(self) -> int:
        return len(self.cases) - len(self.done)

    def __iter__(self):
        return (case for case in self.cases if case.id not in self.done)


class Terminated(KeyboardInterrupt):
    """SIGTERM reached the run: it ends as a Ctrl-C ends it (partial reports, a resume hint)."""


#: What each signal that interrupts a run raises, and its name in summary.json.
_INTERRUPTS = {signal.SIGINT: (KeyboardInterrupt, "SIGINT"), signal.SIGTERM: (Terminated, "SIGTERM")}


@contextlib.contextmanager
def _interrupts_reach_parent_only():
    """While a run goes on, Ctrl-C (SIGINT, which the terminal sends to every process of the
    command) and SIGTERM interrupt this process alone: the processes it forks to draw the corpus
    inherit a handler that ignores them, so they print no traceback (the workers ignore them
    themselves)."""
    parent = os.getpid()

    def interrupt(signum, frame):
        if os.getpid() == parent:
            raise _INTERRUPTS[signum][0]

    try:
        previous = {signum: signal.signal(signum, interrupt) for signum in _INTERRUPTS}
    except ValueError:   # not the main thread: signals are not ours to handle
        yield
        return
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _meta(config: RunConfig, info: dict, policy: str, pairs: list, key: dict, planned: int) -> dict:
    return {
        "backend": config.backend, "backend_name": info.get("name") or config.backend,
        "backend_version": info.get("version", "unknown"),
        "device": info.get("device", "cpu"), "model_format": info.get("model_format"),
        **({"onnx_opset": onnx_opset()} if info.get("model_format") == "onnx" else {}),
        "subnormals_declared": info.get("subnormals"), "subnormals_applied": policy,
        "seed": config.seed, "max_examples": config.max_examples, "exhaustive": config.exhaustive,
        "selected_ops": sorted({spec.op for spec, _ in pairs}),
        "complete": False, "cases_planned": planned, "run_key": key,
        "worker_restarts": 0, "workers_recycled": 0, "wall_seconds": 0.0,
    }


def _resume_from(out: Path, config: RunConfig, key: dict):
    """``(previous run or None, ids it finished)`` for a run into ``out``."""
    if not config.resume:
        return None, set()
    previous = read_previous(out)
    if previous is None:
        print(f"conform: note: --resume: {out} holds no run; starting afresh", file=sys.stderr)
        return None, set()
    check_same_run(previous, key, out)
    return previous, previous.done


def _resumed_tally(previous, meta: dict, out: Path) -> Tally:
    """The tally of the cases the interrupted run finished (which must have run on the same
    backend version as this one); notes their number in ``meta``."""
    if previous.summary.get("backend_version") != meta["backend_version"]:
        raise NotResumable(f"--resume: the run in {out} used {meta['backend']} "
                           f"{previous.summary.get('backend_version')}, this one "
                           f"{meta['backend_version']}; run without --resume")
    meta["resumed_cases"] = len(previous.records)
    tally, previous.records = Tally.of(previous.records), []
    return tally


def make_pool(config: RunConfig, specs: dict):
    """Where ``config``'s cases run: a :class:`WorkerPool` of ``config.workers`` workers, or
    (``executor`` ``ray``) a :class:`~conform.harness.run.ray_pool.RayPool` with as many
    shards in flight."""
    if config.executor == "ray":
        from conform.harness.run.ray_pool import RayPool

        return RayPool(config.backend, config.pool_settings(), address=config.address,
                       tasks=config.workers)
    return WorkerPool(config.backend, config.pool_settings(), specs=specs)


def _run_suite(config: RunConfig, specs: dict, progress: bool) -> tuple[dict, Tally]:
    import conform

    started = time.time()
    with make_pool(config, specs) as pool:
        generating = time.time()
        pairs, cases, skipped, left_out = _generate(config, specs, pool.info.get("binding"))
        generation_seconds = time.time() - generating
        out = Path(config.out)
        out.mkdir(parents=True, exist_ok=True)
        key = run_key(config, pairs, specs)
        planned = len(cases) + len(skipped)
        previous, done = _resume_from(out, config, key)
        if done:
            cases = (_Remaining(cases, done) if config.exhaustive
                     else [c for c in cases if c.id not in done])
            skipped = [record for record in skipped if record["id"] not in done]
        policy = config.subnormals or pool.info.get("subnormals", "ieee")
        meta = _meta(config, pool.info, policy, pairs, key, planned)
        if left_out:
            meta["not_expressible"] = left_out
        tally = _resumed_tally(previous, meta, out) if previous is not None else Tally()
        remove_stale_reports(out, keep_summary=previous is not None)
        with ResultWriter(out / "results.jsonl",
                          keep_bytes=previous.valid_bytes if previous else None) as writer:
            write_summary(out, meta, conform.__version__, tally)   # incomplete: 0 (or N) of M
            interrupted = False
            try:
                _execute(config, specs, pool, writer, tally, skipped, cases, policy, progress,
                         checkpoint=lambda: write_summary(out, meta, conform.__version__, tally))
            except KeyboardInterrupt as exc:
                if not config.interruptible:
                    raise
                interrupted = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
                for worker in multiprocessing.active_children():   # what they owe is lost anyway:
                    worker.kill()                                  # stop now, not after it
            info, restarts, recycled = pool.info, pool.restarts, pool.recycled
            given_up = pool.load_failures
    if interrupted:   # the file is the truth: a reply may have been cut between write and tally
        tally = Tally.of(complete_lines(out / "results.jsonl")[0])
    stats, spent = (_rounded(counts) for counts in (pool.stats, pool.spent))
    meta.update({
        "complete": not interrupted, "worker_restarts": restarts, "workers_recycled": recycled,
        **({"interrupted_by": interrupted} if interrupted else {}),
        "backend_stats": stats,
        "workers_given_up": given_up,   # why each worker that could not load was given up
        # where the harness's own time went: judging, here (oracle answers are kept with
        # the cases: comparing), tallying and encoding, and the parent writing results.jsonl
        "worker_seconds": spent, "write_seconds": round(writer.seconds, 3),
        "generation_seconds": round(generation_seconds, 3),
        "wall_seconds": round(time.time() - started, 3),
    })
    return meta, tally


def _execute(config, specs, pool, writer, tally, skipped, cases, policy, progress,
             checkpoint) -> None:
    """Run ``cases`` on ``pool``, writing each result line as it comes and adding it to
    ``tally``; ``checkpoint()`` every CHECKPOINT_SECONDS."""
    meter = Progress(len(cases), config.backend) if progress else None
    if skipped:
        writer.write_lines([encode(record) for record in skipped])
        for record in skipped:
            tally.add(record)
    last, interval = time.monotonic(), CHECKPOINT_SECONDS
    for done in pool.run_batches(cases):
        if isinstance(done, Judged):   # judged and tallied (here or in judge processes)
            writer.write_lines(done.lines)
            tally.merge(done.cells, done.record)
            if meter:
                meter.update_many(part["counts"] for part in done.cells.values())
        else:
            for case, outcome in done:   # a crash or timeout, judged here
                record = result_record(specs[case.op], case, outcome, config.backend, policy)
                if config.manifest is not None:
                    record = config.manifest.apply(record)
                writer.write(record)
                tally.add(record)
                if meter:
                    meter.update_many([{record["verdict"]: 1}])
        if time.monotonic() - last >= interval:
            began = time.monotonic()
            checkpoint()
            last = time.monotonic()
            interval = max(CHECKPOINT_SECONDS, CHECKPOINT_SHARE * (last - began))
