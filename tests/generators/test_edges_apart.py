"""Edge tensors that do not mask each other (issue 35, item 6): each ``edge_cases`` entry is
alone in its tensor, its filler holding no value another entry names for that input, so that a
backend refusing one combination (a zero divisor) is still judged on the others (INT_MIN / -1,
truncation toward zero)."""
from __future__ import annotations

import multiprocessing
import signal

import numpy as np
from conform.dtypes import resolve_edge_value
from conform.generators._edges import edge_case_cases, edge_sweep_case
from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend
from conform.harness.backends.program import Program
from conform.harness.judge.judging import judge_outputs


def _verdict(backend, spec, case) -> str:
    try:
        outputs = backend.run(program=Program(spec, case), inputs=list(case.inputs))
    except Exception as exc:   # onnxruntime: "Non-zero status code returned while running Div"
        return f"error: {str(exc)[:80]}"
    return judge_outputs(spec, case, outputs).verdict


def test_onnxruntime_refusing_zero_divisors_is_judged_on_every_other_edge(specs):
    """onnxruntime refuses an integer Div whose divisor tensor holds a zero. Before the filler
    avoided named values, onnx_div.int32.edge2 (-7 / 2, truncation toward zero) and
    onnx_div.int64.edge0 (INT_MIN / -1) held a zero divisor by chance and were never computed."""
    spec, backend = specs["onnx_div"], OnnxRuntimeBackend()
    for dtype in ("int8", "int16", "int32", "uint8"):   # int64's INT_MIN / -1 traps: below
        verdicts = {}
        for case in edge_case_cases(spec, dtype, seed=0):
            entry = spec.edge_cases[int(case.id.rsplit("edge", 1)[1])]
            verdicts[str(entry)] = verdict = _verdict(backend, spec, case)
            if entry.get("b") in (0, "zero", "-zero"):
                assert verdict.startswith("error"), (case.id, entry, verdict)
            else:   # truncation, INT_MIN / -1: computed and judged, not masked by a refusal
                assert verdict in ("pass", "impl_defined"), (case.id, entry, verdict)
        if dtype.startswith("int"):
            assert verdicts[str({"a": "int_min", "b": -1})] == "pass"   # computed, judged beside it
        sweep = edge_sweep_case(spec, dtype, seed=0)   # every pair in one tensor: refused whole
        assert _verdict(backend, spec, sweep).startswith("error")


def test_int64_int_min_by_minus_one_now_reaches_onnxruntime(specs):
    """The int64 INT_MIN / -1 case, alone with its filler, is computed: onnxruntime 1.32.0 dies
    of SIGFPE on it (docs/found-bugs.md), where the zero divisor its tensor used to hold made
    it refuse the whole tensor first. Run in a forked child: the trap kills the process."""
    spec = specs["onnx_div"]
    (case,) = [c for c in edge_case_cases(spec, "int64", seed=0) if c.id.endswith("edge0")]
    assert (case.inputs[1] != 0).all()
    child = multiprocessing.get_context("fork").Process(
        target=_verdict, args=(OnnxRuntimeBackend(), spec, case))
    child.start()
    child.join(60)
    assert child.exitcode in (0, -signal.SIGFPE), child.exitcode   # computed: a value or a trap


def _expressible(entry: dict, dtype: str) -> bool:
    try:
        [resolve_edge_value(v, dtype) for v in entry.values()]
    except KeyError:
        return False
    return True


def test_the_filler_avoids_every_named_value(specs):
    """In an edge case, only the entry's own element holds a value some entry that ``dtype``
    can express names for its input (NaN matching NaN, zeros of either sign alike)."""
    for op in ("onnx_div", "divide", "remainder", "onnx_mod_fmod", "power"):
        spec = specs[op]
        for dtype in spec.dtypes:
            for case in edge_case_cases(spec, dtype, seed=0):
                for name, x in zip(spec.inputs, case.inputs):
                    named = [float(resolve_edge_value(e[name], dtype))
                             for e in spec.edge_cases if name in e and _expressible(e, dtype)]
                    wide = np.asarray(x, np.float64)
                    hits = np.isin(wide, named) | (np.isnan(wide) & np.isnan(named).any())
                    assert hits.sum() <= 1, (case.id, name, x)
