"""Is batching safe, and does it pay? Two checks.

*Concatenating* (``--backends``): every element-wise op x dtype of a backend run two ways and
compared bit for bit: each generated case alone, and all of them flattened and concatenated into
one case (what a vmap would compute). Both jax (XLA:CPU) and onnxruntime give shape-dependent
results for several ops, so conform does not batch this way: it would change error figures.

*Packing* (``--packing``): the cases that share an onnxruntime session (same op, dtypes and
attributes) put side by side as independent nodes of one ONNX graph, in packs of up to 16, every
op x dtype of the suite. Each node sees its own inputs at the shape it has alone; the check
compares every output bit for bit with the case run alone, and times both ways: the runtime's
time per case, the session builds, and so how many cases a session must serve before a packed
session pays for itself.

    python bench/check_batching.py [--backends jax,onnxruntime] [--count 40] [--seed 11]
    python bench/check_batching.py --packing [--count 300] [--seed 11]
    python bench/check_batching.py --ort-batches

*Batch packing on onnxruntime* (``--ort-batches``): the default cold run's cases, each batch of
256 (different ops, dtypes and shapes) as one graph and one session, against conform's session
per signature: see :func:`check_ort_batches`. Every output stays bit for bit, but the runtime's
time does not drop: 6,755 cases, model building + sessions + runs 1.19 s alone against 1.13 s
packed in a quiet-ish sitting and 1.54 s against 2.65 s in a busy one (building each case's graph,
~86 us, costs what the 1,226 sessions saved): conform does not pack on onnxruntime
(``bench/results/2026-11-25-ort-batches.json``).
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import numpy as np

from conform.generators import dtype_labels, generate_cases
from conform.harness.backends.models import prepare_case, run_case
from conform.harness.backends.registry import load_backend_class
from conform.spec import load_specs
from conform.dtypes import np_dtype


def kills_the_process(case) -> bool:
    """INT_MIN / -1 raises SIGFPE in onnxruntime's integer Div and Mod (conform's workers
    survive it as a crash; a benchmark running cases in its own process would not)."""
    if case.op not in ("divide", "remainder") or not case.input_dtypes[0].startswith("int"):
        return False
    lhs, rhs = (np.asarray(x) for x in case.inputs)
    return bool(np.any((lhs == np.iinfo(lhs.dtype).min) & (rhs == -1)))


def _packed(cases):
    """One case whose inputs are the cases' inputs flattened and concatenated."""
    inputs = [np.concatenate([np.asarray(c.inputs[i], dtype=np_dtype(d)).ravel() for c in cases])
              for i, d in enumerate(cases[0].input_dtypes)]
    return replace(cases[0], id=f"{cases[0].op}.packed", inputs=inputs)


def check(backend_name: str, count: int, seed: int) -> dict:
    backend, specs = load_backend_class(backend_name)(), load_specs()
    identical, differ = 0, {}
    for spec in specs.values():
        if spec.node_specs != (spec,) or spec.definition.feeding != "aligned":   # ops only
            continue
        for label in dtype_labels(spec):
            cases, singles = [], []
            for case in generate_cases(spec, label, count=count, seed=seed):
                if kills_the_process(case) or len({np.shape(x) for x in case.inputs}) != 1:
                    continue
                try:
                    singles.append(np.asarray(run_case(backend, spec, case)[0]).ravel())
                except Exception:   # unsupported, or raising: nothing to compare
                    continue
                cases.append(case)
            if len(cases) < 2:
                continue
            together = np.asarray(run_case(backend, spec, _packed(cases))[0])
            if together.tobytes() == np.concatenate(singles).tobytes():
                identical += 1
            else:
                differ.setdefault(spec.op, []).append(label)
    return {"backend": backend_name, "identical": identical, "differ": differ}


PACK = 16


def _packed_model(models):
    """One ONNX graph holding each model's graph, its names prefixed ``c<k>_``."""
    from onnx import compose, helper

    graphs = [compose.add_prefix(m.build(), f"c{k}_").graph for k, m in enumerate(models)]
    for k, graph in enumerate(graphs):   # each graph's symbolic dims are its own
        for value in (*graph.input, *graph.output):
            for dim in value.type.tensor_type.shape.dim:
                if dim.dim_param:
                    dim.dim_param = f"c{k}_{dim.dim_param}"
    first = models[0].build()
    graph = helper.make_graph([n for g in graphs for n in g.node], "packed",
                              [i for g in graphs for i in g.input],
                              [o for g in graphs for o in g.output],
                              [t for g in graphs for t in g.initializer])
    return helper.make_model(graph, opset_imports=first.opset_import, ir_version=first.ir_version)


def check_packing(count: int, seed: int) -> dict:
    from conform.harness.backends.models import Model
    from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend

    backend, specs, clock = OnnxRuntimeBackend(), load_specs(), time.perf_counter
    identical, differ, packs = 0, {}, 0
    single_seconds = packed_seconds = packed_model_seconds = packed_session_seconds = 0.0
    single_runs = 0
    sessions = {}   # key -> cases that run through it: (model, feeds, outputs alone)
    for spec in specs.values():
        for label in dtype_labels(spec):
            for case in generate_cases(spec, label, count=count, seed=seed):
                if "bfloat16" in (*case.input_dtypes, case.out_dtype) or kills_the_process(case):
                    continue
                model = Model("onnx", spec, case)
                try:
                    run = prepare_case(backend, spec, case, model=model)
                    run()   # a session's first run apart, as in the packs below
                except Exception:   # unsupported, or raising: nothing to compare
                    continue
                began = clock()
                alone = run()
                single_seconds += clock() - began
                single_runs += 1
                sessions.setdefault(model.key, []).append((model, run.args[1], alone))
    for members in sessions.values():
        for start in range(1, len(members), PACK):   # the first case alone built the session
            pack = members[start:start + PACK]
            began = clock()
            serialized = _packed_model([m for m, _, _ in pack]).SerializeToString()
            built = clock()
            session = backend._ort.InferenceSession(serialized, backend.options,
                                                    providers=["CPUExecutionProvider"])
            packed_model_seconds += built - began
            packed_session_seconds += clock() - built
            feeds = {f"c{k}_{name}": value for k, (_, feed, _) in enumerate(pack)
                     for name, value in feed.items()}
            session.run(None, feeds)
            began = clock()
            outputs = session.run(None, feeds)
            packed_seconds += clock() - began
            packs += 1
            per_case = len(outputs) // len(pack)
            for k, (model, _, alone) in enumerate(pack):
                together = outputs[k * per_case:(k + 1) * per_case]
                if all(a.shape == b.shape and a.tobytes() == b.tobytes()
                       for a, b in zip(map(np.asarray, together), map(np.asarray, alone))):
                    identical += 1
                else:
                    name = f"{model.case.op}.{model.case.dtype}"
                    differ[name] = differ.get(name, 0) + 1
    packed_cases = identical + sum(differ.values())
    single_us = single_seconds / single_runs * 1e6
    packed_us = packed_seconds / packed_cases * 1e6
    saved_us = single_us - packed_us
    return {"backend": "onnxruntime", "packing": PACK, "cases": single_runs,
            "sessions": len(sessions), "cases_per_session": round(single_runs / len(sessions), 1),
            "packed_cases": packed_cases, "identical": identical, "differ": differ,
            "runtime_us_per_case_alone": round(single_us, 1),
            "runtime_us_per_case_packed": round(packed_us, 1),
            "model_build_ms": round(backend.clock.model_build / len(sessions) * 1e3, 2),
            "session_ms": round(backend.clock.compile / len(sessions) * 1e3, 2),
            "packed_model_build_ms": round(packed_model_seconds / packs * 1e3, 2),
            "packed_session_ms": round(packed_session_seconds / packs * 1e3, 2),
            # how many cases a packed session (one more per op signature) must serve to pay for
            # itself; the second figure as if building the packed graph cost nothing
            "break_even_cases": round((packed_model_seconds + packed_session_seconds) / packs
                                      * 1e6 / saved_us, 1),
            "break_even_cases_session_alone": round(packed_session_seconds / packs * 1e6
                                                    / saved_us, 1)}


def check_ort_batches(batch: int) -> dict:
    """A cold onnxruntime run's cases two ways, in one process: as conform runs them (a session
    per signature, cached, and a run per case) and packed as the jax backend packs, one graph
    holding a whole batch's cases (different ops, dtypes and shapes), one session and one run
    per batch. Cases crossing as OrtValues (bfloat16, float8, int4), cases a kernel refuses and
    cases that kill the process are left out of both. Times model building, sessions and runs."""
    from conform.harness.backends.models import Model
    from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend
    from conform.harness.backends.ort_values import needs_ort_values
    from conform.harness.run.runner import RunConfig, _generate

    specs, clock = load_specs(), time.perf_counter
    _, cases, *_ = _generate(RunConfig(backend="onnxruntime"), specs)
    cases = [c for c in cases if not needs_ort_values((*c.input_dtypes, *specs[c.op].out_dtypes(c)))
             and not kills_the_process(c)]
    backend = OnnxRuntimeBackend()
    began, kept = clock(), []
    for case in cases:
        try:
            kept.append((case, run_case(backend, specs[case.op], case)))
        except Exception:   # unsupported or raising: in neither way
            continue
    alone_seconds = clock() - began
    alone_stats = backend.stats()
    packed = OnnxRuntimeBackend()
    build = session_seconds = run_seconds = 0.0
    identical = differ = 0
    for start in range(0, len(kept), batch):
        chunk = kept[start:start + batch]
        began = clock()
        models = [Model("onnx", specs[case.op], case) for case, _ in chunk]
        serialized = _packed_model(models).SerializeToString()
        built = clock()
        session = packed._ort.InferenceSession(serialized, packed.options,
                                               providers=["CPUExecutionProvider"])
        opened = clock()
        feeds = {f"c{k}_{name}": value for k, m in enumerate(models)
                 for name, value in zip(m.input_names, m.inputs())}
        outputs = session.run(None, feeds)
        ran = clock()
        build, session_seconds, run_seconds = build + built - began, session_seconds + opened - built, \
            run_seconds + ran - opened
        at = 0
        for (case, alone) in chunk:
            together = outputs[at:at + len(alone)]
            at += len(alone)
            if all(np.asarray(a).tobytes() == np.asarray(b).tobytes() for a, b in zip(together, alone)):
                identical += 1
            else:
                differ += 1
    return {"backend": "onnxruntime", "batch": batch, "cases": len(kept),
            # runtime: model building, sessions and runs (what packing changes); seconds: the
            # whole calls, conform's per-case preparing included (which packing would keep)
            "alone": {"seconds": round(alone_seconds, 2), "sessions": alone_stats["sessions"],
                      "runtime": round(sum(alone_stats[f"{phase}_seconds"] for phase in
                                           ("model_build", "compile", "execute")), 2),
                      "model_build": round(alone_stats["model_build_seconds"], 2),
                      "session": round(alone_stats["compile_seconds"], 2),
                      "run": round(alone_stats["execute_seconds"], 2)},
            "packed": {"runtime": round(build + session_seconds + run_seconds, 2),
                       "sessions": -(-len(kept) // batch), "model_build": round(build, 2),
                       "session": round(session_seconds, 2), "run": round(run_seconds, 2)},
            "identical": identical, "differ": differ}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="jax,onnxruntime")
    parser.add_argument("--packing", action="store_true",
                        help="check packing cases into one ONNX graph on onnxruntime instead")
    parser.add_argument("--count", type=int, default=None,
                        help="cases per op and dtype (default 40; 300 with --packing)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--ort-batches", action="store_true",
                        help="time a cold onnxruntime run's cases packed a batch per graph")
    args = parser.parse_args()
    if args.ort_batches:
        print(json.dumps(check_ort_batches(256), indent=1))
        return
    if args.packing:
        print(json.dumps(check_packing(args.count or 300, args.seed), indent=1))
        return
    for name in args.backends.split(","):
        print(json.dumps(check(name, args.count or 40, args.seed)))


if __name__ == "__main__":
    main()
