"""How low could the harness overhead ratio go on the warm onnxruntime run?

Runs the built-in suite's warm corpus through onnxruntime in this one process, with every session
built beforehand and run once, and times onnxruntime's own ``session.run`` against the least
Python a judged results.jsonl line needs: the feed, the worst element of the output against the
stored oracle answer (max absolute difference; no error model, no special values), the record's
identity and figures, and its JSON encoding. No tally, no messages, no worker pipes, no reports.
Two ways:

* ``per case``: one case after another, as conform's workers do (judging is per case);
* ``grouped``: the cases of one signature back to back, judged in one vectorised comparison,
  which a columnar record path (corpus stored by signature, records and tallies built per group)
  would allow.

It then projects the ratio ``1 - runtime per worker / wall`` for a 2-worker run from the measured
start-up (this process's imports and corpus reading, the corpus being cached) and these per-case
costs: what conform would score if its whole per-case path cost no more than this floor, and no
report were written; what it would score if the harness did no per-case work at all; and how many
microseconds per case the harness may spend for a ratio of 0.5.

    python bench/overhead_floor.py [--max-examples 300]
"""
from __future__ import annotations

import argparse
import gc
import importlib
import json
import time
import warnings

import numpy as np
import orjson

clock = time.perf_counter


def _load(max_examples: int):
    from conform.generators import dtype_labels, generate_cases
    from conform.spec import load_specs

    specs = load_specs()
    cases = [case for spec in specs.values() for label in dtype_labels(spec)
             for case in generate_cases(spec, label, count=max_examples, seed=0, use_cache=True)]
    return specs, cases


def _runnable(specs, cases):
    """(session, feed names, feed arrays, case, expected) for each case onnxruntime can run."""
    from check_batching import kills_the_process   # bench/, this script's folder
    from conform.harness.backends.models import Model
    from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend

    backend = OnnxRuntimeBackend()
    runnable = []
    for case in cases:
        if case.expectation is None or "bfloat16" in (*case.input_dtypes, case.out_dtype) \
                or kills_the_process(case):
            continue
        model = Model("onnx", specs[case.op], case)
        try:
            session = backend._sessions.get(model.key, lambda: backend._new_session(model))
            feeds = model.inputs()
            session.run(None, dict(zip(model.input_names, feeds)))   # warm: first runs apart
        except Exception:
            continue
        runnable.append((session, tuple(model.input_names), feeds, case, case.expectation[0].expected))
    return runnable, backend.clock.compile


def _record(case, checked: int, worst: int, error: float) -> bytes:
    return orjson.dumps({"id": case.id, "op": case.op, "dtype": case.dtype,
                         "input_dtypes": case.input_dtypes, "out_dtype": case.out_dtype,
                         "shapes": [list(x.shape) for x in case.inputs], "attrs": case.attrs,
                         "plan": case.plan, "seed": case.seed, "verdict": "pass",
                         "checked": checked, "worst": worst, "max_error": error})


def per_case(runnable) -> tuple[float, float]:
    """(runtime, total) seconds, judging each case alone."""
    runtime, start, lines = 0.0, clock(), []
    for session, names, feeds, case, expected in runnable:
        feed = dict(zip(names, feeds))
        began = clock()
        output = session.run(None, feed)[0]
        runtime += clock() - began
        diff = np.abs(output.astype(np.float64) - expected).ravel()
        worst = int(np.argmax(diff)) if diff.size else 0
        lines.append(_record(case, diff.size, worst, float(diff[worst]) if diff.size else 0.0))
    return runtime, clock() - start


def grouped(runnable) -> tuple[float, float]:
    """(runtime, total) seconds, running each signature's cases back to back and judging them in
    one vectorised comparison per signature."""
    groups: dict = {}
    for item in runnable:
        groups.setdefault(id(item[0]), []).append(item)
    runtime, start, lines = 0.0, clock(), []
    for members in groups.values():
        by_shape: dict = {}   # a session may take several shapes: judged per output shape
        for session, names, feeds, case, expected in members:
            feed = dict(zip(names, feeds))
            began = clock()
            output = session.run(None, feed)[0]
            runtime += clock() - began
            by_shape.setdefault(output.shape, []).append((case, output, expected))
        for judged in by_shape.values():
            count = len(judged)
            actual = np.stack([o for _, o, _ in judged]).astype(np.float64).reshape(count, -1)
            expected = np.stack([np.broadcast_to(e, o.shape) for _, o, e in judged])
            diff = np.abs(actual - expected.reshape(count, -1))
            worst = diff.argmax(axis=1) if diff.shape[1] else np.zeros(count, np.intp)
            errors = diff[np.arange(count), worst] if diff.shape[1] else np.zeros(count)
            for (case, _, _), index, error in zip(judged, worst.tolist(), errors.tolist()):
                lines.append(_record(case, diff.shape[1], index, error))
    return runtime, clock() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    warnings.simplefilter("ignore")   # NaN and inf in the differences are expected
    began = clock()
    for module in ("onnx", "onnxruntime", "conform.harness.backends.onnxruntime_backend"):
        importlib.import_module(module)   # what a worker imports
    imported = clock()
    specs, cases = _load(args.max_examples)   # warm: read from the corpus cache
    loaded = clock()
    startup = loaded - began
    runnable, compile_seconds = _runnable(specs, cases)
    gc.freeze()
    gc.disable()
    result = {"cases": len(cases), "runnable": len(runnable),
              "startup_seconds": round(startup, 3),
              "import_seconds": round(imported - began, 3),
              "corpus_read_seconds": round(loaded - imported, 3),
              "compile_seconds": round(compile_seconds, 3)}
    for name, way in (("per_case", per_case), ("grouped", grouped)):
        runtime, total = way(runnable)
        n = len(runnable)
        # a run: start-up, then each worker's share of the cases; each worker is counted as
        # building every session (in conform's runs both meet most signatures), which favours
        # the ratio: compiling is the runtime's time
        runtime_per_worker = runtime / args.workers + compile_seconds
        wall = startup + total / args.workers + compile_seconds
        result[name] = {"runtime_us_per_case": round(runtime / n * 1e6, 1),
                        "harness_us_per_case": round((total - runtime) / n * 1e6, 1),
                        "projected_overhead_ratio": round(1 - runtime_per_worker / wall, 3),
                        # a harness doing nothing per case: start-up and the runtime's calls alone
                        "ratio_with_no_per_case_harness":
                            round(1 - runtime_per_worker / (startup + runtime_per_worker), 3),
                        # what the harness may spend on each runnable case for a ratio of 0.5
                        # (wall = 2 x runtime per worker); the unsupported cases' lines come out
                        # of this budget too
                        "budget_us_per_case_for_half":
                            round((runtime_per_worker - startup) * args.workers / n * 1e6, 1)}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
