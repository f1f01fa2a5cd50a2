"""Isolation with real processes: crashes and hangs cost one case; the run goes on."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conform.generators import Case
from conform.harness.run.isolation import BackendLoadError, WorkerPool
from conform.harness.judge.judging import result_record

MISBEHAVING = "tests.harness.misbehaving_backend:MisbehavingBackend"


def _add_case(index: int, first: int, dtype: str = "int32") -> Case:
    lhs = np.array([first, 1, 2, 3, 4, 5, 6, 7], dtype)
    return Case(id=f"add.{dtype}.{index}", op="add", dtype=dtype, input_dtypes=(dtype, dtype),
                out_dtype=dtype, inputs=[lhs, np.ones(8, dtype)], attrs={}, plan="normal", seed=index)


def _run(backend, cases, **kwargs):
    with WorkerPool(backend, **kwargs) as pool:
        outcomes = {case.id: outcome for case, outcome in pool.run(cases)}
        return outcomes, pool.restarts


def test_segfault_and_exception_cost_one_case_each():
    cases = [_add_case(i, first) for i, first in enumerate([1, 13, 2, 23, 3, 13, 4])]
    outcomes, restarts = _run(MISBEHAVING, cases, workers=1, batch_size=4)
    kinds = [outcomes[c.id].kind for c in cases]
    assert kinds == ["ok", "crash", "ok", "error", "ok", "crash", "ok"]
    assert "SIGSEGV" in outcomes["add.int32.1"].message
    assert "adapter failed on purpose" in outcomes["add.int32.3"].message
    assert "RuntimeError" in outcomes["add.int32.3"].traceback
    # each crash struck a worker that had run other cases: confirmed alone in a fresh one
    assert restarts == 4


def test_a_case_struck_by_an_earlier_cases_damage_is_not_blamed():
    """Case 1 poisons its worker without failing (as a silent heap corruption does); case 2
    dies of it. Run again alone in a fresh worker, case 2 passes: no case is a crash."""
    cases = [_add_case(i, first) for i, first in enumerate([1, 29, 2, 3])]
    outcomes, restarts = _run(MISBEHAVING, cases, workers=1, batch_size=4)
    assert [outcomes[c.id].kind for c in cases] == ["ok", "ok", "ok", "ok"]
    # cases 0 and 1 died unreported with the first worker, so they run again after case 2's
    # confirming run, and case 1 poisons that worker too: case 3 is struck and confirmed alone
    assert restarts == 2


def test_hang_becomes_timeout_and_the_rest_completes():
    cases = [_add_case(0, 1), _add_case(1, 17), _add_case(2, 2)]
    outcomes, _ = _run(MISBEHAVING, cases, workers=2, timeout=3.0, batch_size=2)
    assert [outcomes[c.id].kind for c in cases] == ["ok", "timeout", "ok"]
    assert "3 s" in outcomes["add.int32.1"].message


def test_with_a_second_batch_in_flight_a_hang_still_costs_only_its_case():
    cases = [_add_case(i, first) for i, first in enumerate([1, 2, 17, 3, 4, 5])]
    outcomes, restarts = _run(MISBEHAVING, cases, workers=1, timeout=3.0, batch_size=2)
    assert [outcomes[c.id].kind for c in cases] == ["ok", "ok", "timeout", "ok", "ok", "ok"]
    assert restarts == 1


PACKING = "tests.harness.misbehaving_backend:PackingMisbehavingBackend"


@pytest.mark.parametrize("marker, kind", [(13, "crash"), (17, "timeout")])
def test_a_crash_or_hang_inside_a_pack_is_blamed_on_its_case_alone(marker, kind):
    """The first case of the pack is computing when the third one's marker strikes: nobody is
    blamed then; the batch runs again case by case, and only the third case is lost."""
    cases = [_add_case(i, first) for i, first in enumerate([1, 2, marker, 3, 4, 5])]
    # (the pack of four has four cases' time limits: a hang in it is found after 10 s; a case's
    # 2.5 s leaves a loaded machine slack for the cases that must be "ok")
    outcomes, restarts = _run(PACKING, cases, workers=1, timeout=2.5, batch_size=4)
    assert [outcomes[c.id].kind for c in cases] == ["ok", "ok", kind, "ok", "ok", "ok"]
    # the pack's failure, then the case's own, then its confirmation in a fresh worker (it
    # struck a worker that had run cases 0 and 1 first)
    assert restarts == (3 if kind == "crash" else 2)


def test_a_pack_slower_than_one_cases_time_limit_has_the_limits_of_its_cases():
    """The pack of four computes for 2 s while its first case is asked for: one case's limit
    is 1.25 s, the pack's four times that (3 s of slack for a loaded machine). Nothing times out
    and no worker is replaced (a pack that passed one case's limit was killed, and its batch
    sent again case by case)."""
    cases = [_add_case(i, first) for i, first in enumerate([1, 31, 2, 3])]
    outcomes, restarts = _run(PACKING, cases, workers=1, timeout=1.25, batch_size=4)
    assert [outcomes[c.id].kind for c in cases] == ["ok"] * 4 and restarts == 0


def test_unbounded_allocation_is_stopped_by_the_worker_memory_cap():
    cases = [_add_case(0, 1), _add_case(1, 19), _add_case(2, 2)]
    outcomes, _ = _run(MISBEHAVING, cases, workers=1, memory_limit_mb=3072)
    assert outcomes["add.int32.0"].kind == outcomes["add.int32.2"].kind == "ok"
    hoarder = outcomes["add.int32.1"]
    assert hoarder.kind == "crash" or (hoarder.kind == "error" and "MemoryError" in hoarder.message)


def test_onnxruntime_int64_min_divided_by_minus_one_is_a_crash_not_a_lost_run(specs):
    low = np.iinfo(np.int64).min
    crashing = Case(id="onnx_div.int64.x", op="onnx_div", dtype="int64", input_dtypes=("int64", "int64"),
                    out_dtype="int64", inputs=[np.array([5, low, 3] + [1] * 5, np.int64),
                                               np.array([2, -1, 1] + [1] * 5, np.int64)],
                    attrs={}, plan="edge", seed=0)
    fine = Case(id="onnx_div.int64.y", op="onnx_div", dtype="int64", input_dtypes=("int64", "int64"),
                out_dtype="int64", inputs=[np.arange(8, dtype=np.int64), np.full(8, 2, np.int64)],
                attrs={}, plan="normal", seed=0)
    outcomes, restarts = _run("onnxruntime", [crashing, fine], workers=1)
    assert outcomes["onnx_div.int64.x"].kind == "crash"
    assert "SIGFPE" in outcomes["onnx_div.int64.x"].message
    assert outcomes["onnx_div.int64.y"].kind == "ok" and restarts == 1
    record = result_record(specs["onnx_div"], fine, outcomes["onnx_div.int64.y"], "onnxruntime")
    assert record["verdict"] == "pass"


def test_a_backend_that_fails_to_import_names_itself_and_shows_the_traceback():
    with pytest.raises(BackendLoadError, match="no_such_module") as info:
        with WorkerPool("no_such_module:Backend", workers=1):
            pass
    assert "ModuleNotFoundError" in str(info.value)


def test_lazy_queue_reads_the_source_only_as_far_as_needed():
    from conform.harness.run.case_queue import LazyQueue

    pulled = []

    def source():
        for i in range(10):
            pulled.append(i)
            yield _add_case(i, 1)

    queue = LazyQueue(source())
    assert [c.seed for c in queue.take(3)] == [0, 1, 2] and len(pulled) == 4
    queue.extendleft([_add_case(99, 1)])
    assert [c.seed for c in queue.take(2)] == [99, 3]
    big = LazyQueue([_add_case(i, 1) for i in range(5)])
    assert len(big.take(5, max_bytes=100)) == 2   # each case holds 64 bytes of inputs


def test_workers_are_recycled_after_n_cases_without_losing_any():
    cases = [_add_case(i, 1) for i in range(10)]
    with WorkerPool(MISBEHAVING, workers=1, batch_size=2, recycle_after=4) as pool:
        outcomes = [outcome.kind for _, outcome in pool.run(cases)]
        assert outcomes == ["ok"] * 10
        assert pool.recycled == 2 and pool.restarts == 0


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_forked_and_spawned_workers_judge_the_same_and_survive_crashes(method, specs):
    cases = [_add_case(i, first) for i, first in enumerate([1, 13, 2, 3, 23, 4, 5, 6])]
    with WorkerPool(MISBEHAVING, workers=2, batch_size=3, judge=True, specs=specs,
                    cases=cases, method=method) as pool:
        assert pool.method == method
        results = {case.id: outcome for case, outcome in pool.run(cases)}
    kinds = [results[c.id].kind for c in cases]
    assert kinds == ["ok", "crash", "ok", "ok", "error", "ok", "ok", "ok"]
    assert [results[c.id].record["verdict"] for c in cases if results[c.id].kind == "ok"] \
        == ["pass"] * 6
    raised = results["add.int32.4"].record   # its traceback formatted in the worker
    assert raised["verdict"] == "error" and "RuntimeError" in raised["traceback"]


@pytest.mark.parametrize("setup, method", [
    ("", "fork"),
    ("import onnxruntime", "spawn"),                  # a backend runtime in the parent
    ("import threading, time; threading.Thread(target=time.sleep, args=(5,), daemon=True).start()",
     "spawn"),                                        # a thread in the parent
])
def test_workers_are_forked_only_from_a_parent_without_threads_or_runtimes(setup, method):
    import subprocess
    import sys

    code = f"{setup}\nfrom conform.harness.run.processes import start_method; print(start_method())"
    chosen = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert chosen.stdout.strip() == method


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_forked_workers_exit_when_the_parent_dies(tmp_path, method):
    import os
    import signal
    import subprocess
    import sys
    import time

    script = f"""
import os, sys, time
from conform.harness.run.isolation import WorkerPool
with WorkerPool({MISBEHAVING!r}, workers=2, method={method!r}) as pool:
    print(" ".join(str(w.process.pid) for w in pool._pool), flush=True)
    time.sleep(60)
"""
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              cwd=os.getcwd())
    pids = [int(p) for p in parent.stdout.readline().split()]
    assert len(pids) == 2
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in pids), "workers outlived their parent"


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        status = open(f"/proc/{pid}/stat").read().split()[2]
    except (FileNotFoundError, ProcessLookupError):   # reaped between the signal and the read
        return False   # (the read raises ENOENT, or ESRCH if the process goes while it is read)
    return status != "Z"


def test_the_judge_stage_gives_the_parent_each_record_as_its_line_reads(specs):
    from conform.harness.judge.outcome import Outcome
    from conform.harness.run.stages import Judging
    from conform.reports import Tally

    cases = [_add_case(0, 1), _add_case(1, 2)]
    outputs = [np.add(*cases[0].inputs), np.zeros(8, "int32")]
    reply = Judging(specs, "b", "ieee")(cases, [Outcome("ok", [o]) for o in outputs], {"n": 1})
    assert len(reply) == 2 and reply.stats == {"n": 1} and set(reply.spent) == {"judge", "tally", "encode"}
    (case, first), (_, second) = reply.pairs()
    assert case is cases[0] and (first.record["verdict"], second.record["verdict"]) == ("pass", "fail")
    assert first.record == json.loads(first.line) and second.record == json.loads(second.line)
    merged = Tally()
    merged.merge(reply.cells, reply.record)   # the records it keeps are read from their lines
    assert merged.summary({}, "0") == Tally.of([first.record, second.record]).summary({}, "0")


def test_a_worker_reply_is_read_without_unpickling_and_a_forged_one_is_refused():
    import pickle

    from conform.harness.judge.outcome import Outcome
    from conform.harness.run.wire import WireError, computed_frame, computed_outcomes, pack, unpack, wire_array

    arrays = [wire_array(np.arange(6, dtype=">f4").reshape(2, 3)), wire_array(np.ones(2, "bfloat16"))]
    frame = computed_frame([Outcome("ok", arrays, seconds=0.5), Outcome("error", message="m", traceback="t")],
                           {"sessions": 2})
    outcomes, counters = computed_outcomes(*unpack(frame)[1:])
    assert counters == {"sessions": 2} and [o.kind for o in outcomes] == ["ok", "error"]
    assert outcomes[0].outputs[0].tolist() == [[0, 1, 2], [3, 4, 5]] and outcomes[0].outputs[1].dtype.name == "bfloat16"
    assert outcomes[0].outputs[0].flags.writeable and outcomes[1].message == "m"

    class Evil:
        def __reduce__(self):
            return (exec, ("import os; os._exit(9)",))

    for forged in [pickle.dumps(("computed", Evil())), pack("computed", {"rows": [["pass", "", "", 0, True, 0]],
                                                                        "counters": {}}),
                   pack("computed", {"rows": [["ok", "", "", 0, True, 2]], "counters": {}},
                        [np.zeros(1, "f8")]),
                   frame[:-4], pack("computed", None, []) + b"x",
                   pack("x", None)[:8] + b'{"kind":"computed","body":null,"arrays":[["object",[1]]]}']:
        with pytest.raises(WireError):
            computed_outcomes(*unpack(forged)[1:])


def test_the_parent_holds_at_most_two_batches_per_worker_of_big_cases():
    pulled = []

    def source():   # 20 MB of inputs per case: a batch stops at two (BATCH_BYTES is 32 MB)
        for i in range(12):
            pulled.append(i)
            lhs = np.full(2_500_000, 1, np.int32)
            yield Case(id=f"add.int32.{i}", op="add", dtype="int32", input_dtypes=("int32", "int32"),
                       out_dtype="int32", inputs=[lhs, lhs.copy()], attrs={}, plan="normal", seed=i)

    with WorkerPool(MISBEHAVING, workers=1) as pool:
        for done, (_, outcome) in enumerate(pool.run(source())):
            assert outcome.kind == "ok"
            assert len(pulled) - done <= 2 * 2 + 1   # two batches of two, one case read ahead
    assert len(pulled) == 12


def test_a_long_run_is_judged_in_judge_processes_with_the_records_of_judging_here(specs):
    """From JUDGE_PROCESSES_FROM cases on, replies are judged in processes forked from the
    pool's (never the adapter's); the records are those the pool's own judge gives. Judge
    processes are forked only from a process that can be forked safely (no runtime such as
    onnxruntime loaded, one thread): where this test process cannot be (earlier tests loaded
    runtimes), it runs in a fresh interpreter."""
    from conform.harness.run.processes import start_method

    if start_method() == "fork":
        _judged_in_judge_processes(specs)
        return
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = ("import importlib.util, sys\n"
            f"sys.path.insert(0, {str(root)!r})\n"
            f"spec = importlib.util.spec_from_file_location('isolation_test', {__file__!r})\n"
            "module = importlib.util.module_from_spec(spec)\n"
            "spec.loader.exec_module(module)\n"
            "from conform.spec import load_specs\n"
            "module._judged_in_judge_processes(load_specs())\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _judged_in_judge_processes(specs):
    from conform.harness.run import stages

    cases = [_add_case(i, i % 7) for i in range(stages.JUDGE_PROCESSES_FROM + 100)]
    seen = []
    real = stages.JudgeProcesses.submit
    with WorkerPool(MISBEHAVING, workers=2, judge=True, specs=specs) as pool:
        pool_judging = pool.judging
        stages.JudgeProcesses.submit = lambda self, *a: seen.append(1) or real(self, *a)
        try:
            results = {case.id: outcome.record for case, outcome in pool.run(cases)}
        finally:
            stages.JudgeProcesses.submit = real
    assert seen and len(results) == len(cases)
    crashed = {c.id for c in cases if c.inputs[0][0] == 13}   # (the backend's own misdeeds)
    here = {c.id: r for c, r in pool_judging(cases[:50], [_outcome(c) for c in cases[:50]], {}).pairs()}
    for case in cases[:50]:
        if case.id not in crashed and results[case.id]["verdict"] != "crash":
            assert results[case.id]["verdict"] == "pass"
    assert all(r["verdict"] == "pass" for r in (o.record for o in here.values()))


def _outcome(case):
    from conform.harness.judge.outcome import Outcome

    return Outcome("ok", [np.add(*case.inputs)])


def test_every_dtype_of_the_vocabulary_travels_on_the_wire():
    """A backend's output of any type conform draws reaches the judge (a type missing from the
    wire made every case of it an `error`)."""
    from conform.dtypes import np_dtype
    from conform.harness.run.wire import pack, unpack, wire_array
    from conform.spec import DTYPES

    arrays = [wire_array(np.full((2, 3), "ß").astype(object) if name == "string"   # text
                         else np.zeros((2, 3), np_dtype(name))) for name in DTYPES]
    kind, _, back = unpack(pack("outputs", None, arrays))
    assert kind == "outputs"
    assert [a.dtype.name for a in back] == [a.dtype.name for a in arrays]
    assert all(b.shape == (2, 3) for b in back)
