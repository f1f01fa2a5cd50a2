"""``conform sweep`` on the local executor, with real backends: its command-line values, a
sweep's figures whatever its chunking and slot count, resuming a killed sweep, and hostile
adapters that cost one chunk alone; the merge and tier rules on hand-made summaries."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conform.harness.cli.main import main
from conform.harness.judge.accuracy import ulp_buckets, ulp_errors
from conform.harness.run.sweep import MANIFEST, SweepConfig, run_sweep
from conform.harness.run.sweep_merge import ANCHORS, RUN_FIELDS, merged, plot_points, tier
from conform.spec import load_specs
from tests.harness.sweep_adapters import HANG, SEGFAULT

FIRST, STOP = 0x3F000000, 0x3F004000   # 16,384 float32 inputs in [0.5, 0.502)


@pytest.fixture(scope="module")
def specs():
    return load_specs(None)


def found(summary: dict) -> dict:
    """The accuracy map's entry without the fields that say how the sweep ran."""
    entry, = summary["accuracy_map"]
    return {k: v for k, v in entry.items() if k not in RUN_FIELDS}


@pytest.mark.parametrize("args, message", [
    (["--range", "zz"], "--range: 'zz' is not LO:HI in hexadecimal"),
    (["--range", "10:5"], "--range: '10:5' is empty: LO must be below HI"),
    (["--chunk", "0"], "--chunk: 0 is below 1"),
    (["--executor", "dask"], "--executor: invalid choice: 'dask'"),
    (["--dtypes", "float16", "--range", "0:20000"], "--range 0x0:0x20000 is outside float16's"),
])
def test_bad_values_are_one_line_and_status_2(args, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exited:
        raise SystemExit(main(["sweep", "--backend", "numpy", "--ops", "tanh",
                               "--out", str(tmp_path / "out"), *args]))
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err


def test_same_figures_whatever_the_chunking_and_a_killed_sweep_resumes(specs, tmp_path):
    whole = run_sweep(SweepConfig("numpy", ("tanh",), first=FIRST, stop=STOP, chunk=STOP - FIRST,
                                  workers=1, out=tmp_path / "whole"), specs)
    config = SweepConfig("numpy", ("tanh",), first=FIRST, stop=STOP, chunk=2048, workers=2,
                         out=tmp_path / "chunked")

    def killed(summary, done, planned):
        if done == 3:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        run_sweep(config, specs, on_done=killed)
    with open(tmp_path / "chunked" / MANIFEST, "a") as manifest:
        manifest.write('{"key": "torn')   # a line cut short by the kill
    ran = []
    resumed = run_sweep(config, specs, on_done=lambda summary, done, planned: ran.append(summary))
    assert len(ran) == 8 - 3   # the chunks done before the kill are not run again
    assert found(resumed) == found(whole)
    entry = found(whole)
    assert entry["inputs"] == entry["checked"] == STOP - FIRST and entry["failed"] == 0
    assert sum(entry["ulp_histogram"]) == STOP - FIRST
    assert entry["tier"] in ("correctly_rounded", "<=1", "<=2", "<=4")
    assert resumed["accuracy_map"][0]["chunks"] == {"ok": 8}
    written = json.loads((tmp_path / "chunked" / "summary.json").read_text())
    assert written["accuracy_map"][0]["tier"] == entry["tier"]
    page = (tmp_path / "chunked" / "report.html").read_text()
    assert '<table id="accuracy">' in page and 'id="plot-tanh-float32"' in page
    assert page.count("<polyline") == 1 and "CORE-MATH" in page and "glibc" in page


def test_a_hostile_adapter_costs_its_chunks_alone(specs, tmp_path):
    adapter = "tests.harness.sweep_adapters:CrashesOnOneChunkHangsOnAnother"
    summary = run_sweep(SweepConfig(adapter, ("tanh",), first=FIRST, stop=STOP, chunk=4096,
                                    workers=2, timeout=2, out=tmp_path / "out"), specs)
    entry, = summary["accuracy_map"]
    assert entry["chunks"] == {"ok": 2, "crash": 1, "timeout": 1}
    assert [(lost["first"], lost["status"]) for lost in entry["lost"]] == [
        (SEGFAULT & ~4095, "crash"), (HANG & ~4095, "timeout")]
    assert entry["checked"] == 2 * 4096 and entry["failed"] == 0
    lines = [json.loads(line) for line in (tmp_path / "out" / MANIFEST).read_text().splitlines()]
    # each run once more, on a new worker, before it is recorded
    assert sorted(line["attempts"] for line in lines) == [1, 1, 2, 2]


def test_ulp_figures_and_buckets():
    x = np.float32([1.0, 1.0, np.nan, np.inf, 0.0])
    errors = ulp_errors(x, np.array([1.0, 1.0 + 2 ** -22, np.nan, 5.0, -0.0]), "float32")
    assert errors[:3].tolist() == [0.0, 2.0, 0.0]
    assert 2 ** 100 < errors[3] < np.inf and np.isinf(errors[4])   # inf for 5: measured as 2**128
    assert ulp_buckets(errors).tolist() == [2, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1]


def _summary(first, stop, ulp, bits, failing=()):
    result = {"inputs": stop - first, "checked": stop - first, "failed": len(failing),
              "impl_defined": 0, "model": "ulp(5)", "unit": "ulp",
              "worst": {"bits": bits, "ratio": ulp / 5}, "ulp_histogram": [0] * 11,
              "correctly_rounded": 0, "max_ulp": {"ulp": ulp, "bits": bits, "input": 0.0},
              "regions": {"zero": [1, 0, ulp]}, "failing": [[b] for b in failing],
              "profile": [[bits >> 16, ulp]]}
    return {"key": str(first), "first": first, "stop": stop, "status": "ok", "result": result}


def test_the_merge_takes_the_first_of_equal_worsts_in_any_order():
    parts = [_summary(0, 10, 2.0, 7, failing=[8, 9]), _summary(10, 20, 2.0, 12, failing=[11]),
             _summary(20, 30, 1.0, 25)]
    total = merged(parts)
    assert total == merged(parts[::-1])
    assert total["max_ulp"]["bits"] == 7 and total["worst"]["bits"] == 7
    assert [f[0] for f in total["failing"]] == [8, 9, 11]
    assert total["regions"]["zero"] == [3, 0, 2.0] and tier(total) == "beyond_bound"
    assert plot_points(total["profile"], "float32", 0, 30) == [[0, 2.0]]


def test_tiers_name_their_anchor():
    passing = {**merged([_summary(0, 10, 1.5, 3)]), "correctly_rounded": 4}
    assert tier(passing) == "<=2"
    assert tier({**passing, "correctly_rounded": 10}) == "correctly_rounded"
    assert tier({**passing, "max_ulp": {"ulp": 0.0}}) == "exact"
    assert tier({**passing, "max_ulp": {"ulp": 4.5}}) == "within_bound"
    assert "glibc" in ANCHORS["<=1"] and "CUDA" in ANCHORS["<=2"] and "OpenCL" in ANCHORS["<=4"]
    assert "CORE-MATH" in ANCHORS["correctly_rounded"]


def test_a_binary_op_sweeps_its_lattice_whatever_the_chunking(specs, tmp_path):
    from conform.generators import lattice_case, lattice_description
    from conform.generators._lattice import lattice_mantissas

    mantissas = lattice_mantissas("float32").tolist()
    assert mantissas[:2] == [0, 1] and mantissas[-1] == (1 << 23) - 1 and len(mantissas) == 8
    # index ((code_a * 512 + code_b) * 8 + m_a) * 8 + m_b: code 0x7f is 2**0, 0xff inf and NaN
    index = ((0x7F * 512 + 0xFF) * 8 + 1) * 8 + 7
    a, b = (x.view(np.uint32).tolist() for x in lattice_case(specs["divide"], "float32", index,
                                                                index + 1).inputs)
    assert a == [(0x7F << 23) | 1] and b == [(0xFF << 23) | ((1 << 23) - 1)]   # 1 + 2**-23, NaN
    first, stop = index - 3000, index + 3000   # 1, 1 + 2**-23, ... over large, inf, NaN, -0, ...
    whole = run_sweep(SweepConfig("numpy", ("divide",), first=first, stop=stop, chunk=stop - first,
                                  workers=1, out=tmp_path / "whole"), specs)
    chunked = run_sweep(SweepConfig("numpy", ("divide",), first=first, stop=stop, chunk=1024,
                                    workers=1, out=tmp_path / "chunked"), specs)
    assert found(chunked) == found(whole)
    entry = found(whole)
    assert entry["lattice"] == lattice_description("float32") and entry["range"] == [first, stop]
    assert entry["inputs"] == stop - first and chunked["accuracy_map"][0]["chunks"] == {"ok": 6}
    assert entry["tier"] == "correctly_rounded" and entry["failed"] == 0   # IEEE division
    assert len(entry["max_ulp"]["input"]) == 2 and entry["regions"]["non_finite"][0] > 0
    written = json.loads((tmp_path / "chunked" / "summary.json").read_text())
    assert written["accuracy_map"][0]["lattice"]["size"] == 512 ** 2 * 8 ** 2


@pytest.mark.parametrize("op, dtype, space, first, stop", [("tanh", "float32", "bits", FIRST, STOP),
                                                            ("add", "float16", "lattice", 5_000, 5_064)])
def test_a_chunks_case_reaches_the_worker_as_its_range_and_output_shapes(specs, op, dtype, space,
                                                                         first, stop):
    # what the slot sends the backend's worker: a few hundred bytes that remake the chunk's
    # inputs bit for bit (writable there, read-only here), and the outputs' shapes (no oracle)
    import pickle

    from conform.harness.run.sweep_chunk import ChunkTask

    case = ChunkTask(op, dtype, "numpy", "x", first, stop, "c", space=space).case(specs[op])
    sent = pickle.dumps([case.for_backend()])
    received, = pickle.loads(sent)
    assert len(sent) < 1000 and received.output_shapes == ((stop - first,),)
    assert [x.tobytes() for x in received.inputs] == [x.tobytes() for x in case.inputs]
    assert received.inputs[0].flags.writeable and not case.inputs[0].flags.writeable
    case.inputs[0] = case.inputs[0] + 1   # (replaced: the arrays themselves are sent)
    assert pickle.loads(pickle.dumps(case.inputs))[0].tolist() == case.inputs[0].tolist()
