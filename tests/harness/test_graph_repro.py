"""``conform repro graph.N`` of a StableHLO graph (a jax run) and of an NNEF graph (an nnef
run): the failing graph of a real campaign, reduced and written in its format (models that
compile or parse, with one output per value when instrumented) with a repro.py that runs them;
and the refusal of a format the graph cannot be written as."""
from __future__ import annotations

import json
import subprocess
import sys
from typing import NamedTuple

import numpy as np
import pytest


class Campaign(NamedTuple):
    """A backend's campaign (``--max-nodes 3``): its ops; the seed whose graph 0 fails (the
    pinned runtime computes ``blamed`` outside its error model: jax 0.10.2's float32 cosh, the
    nnef 1.0.10 executor's elu, docs/found-bugs.md); the seed whose graph 0 has a value
    that is not a leaf; the graph's model format."""

    ops: tuple
    failing_seed: int
    chained_seed: int
    blamed: str
    model_format: str


CAMPAIGNS = {"jax": Campaign(("sinh", "cosh", "exp"), 5, 6, "cosh", "stablehlo"),
             "nnef": Campaign(("softplus", "logistic", "elu", "exp"), 11, 11, "elu", "nnef")}


def _every(data: dict) -> list:
    return [name for node in data["nodes"] for name in node["outputs"]]


def _repro_lines(written) -> list:
    """What the written repro.py prints, run in a subprocess (it must exit 0), line by line."""
    proc = subprocess.run([sys.executable, str(written / "repro.py")], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return [line.strip() for line in proc.stdout.splitlines()]


def _check_stablehlo(written, data: dict) -> dict:
    """Each module verifies and compiles on jax's CPU client; the instrumented one's values
    (by name)."""
    import jax
    from jax.extend import backend

    from conform.harness.backends.stablehlo_graphs import valid_stablehlo

    feeds = dict(np.load(written / "inputs.npz"))
    client = backend.get_backend("cpu")
    options = backend.get_compile_options(num_replicas=1, num_partitions=1)
    for model, model_io in data["models"].items():
        text = (written / model).read_text()
        valid_stablehlo(text)
        executable = client.compile_and_load(text, client.devices()[:1], options)
        outputs = executable.execute([jax.device_put(feeds[name]) for name in model_io["inputs"]])
    return dict(zip(model_io["outputs"], map(np.asarray, outputs)))


def _check_nnef(written, data: dict) -> dict:
    """Each folder's document parses (``nnef.load_graph``) with the inputs and outputs named;
    the instrumented one's values on the executor (by name)."""
    import nnef

    feeds = dict(np.load(written / "inputs.npz"))
    for model, model_io in data["models"].items():
        parsed = nnef.load_graph(str(written / model))
        assert list(parsed.inputs) == list(model_io["inputs"])
        assert list(parsed.outputs) == model_io["outputs"]
    with nnef.Session(str(written / model), lowered=model_io["lowered"]) as session:
        outputs = session(*(np.asarray(feeds[name], order="C") for name in model_io["inputs"]))
    return dict(zip(model_io["outputs"], outputs))


CHECKS = {"stablehlo": _check_stablehlo, "nnef": _check_nnef}
FILES = {"stablehlo": ("model.mlir", "model-instrumented.mlir"),
         "nnef": ("model.nnef", "model-instrumented.nnef")}


@pytest.mark.parametrize("backend", sorted(CAMPAIGNS))
def test_a_failing_graph_is_written_in_its_format_with_a_script_that_runs_it(
        backend, tmp_path, conform_cli, capsys):
    """A real campaign's failing graph 0 is reduced to the blamed node and written as its
    format's two models, which compile (StableHLO) or parse (NNEF), beside repro.py, which
    runs both and prints each value, its reference and its worst element; asking for
    another format is refused before anything is reduced (exit 2, one line)."""
    from conform.harness.cli.main import main

    campaign = CAMPAIGNS[backend]
    model_format, blamed = campaign.model_format, campaign.blamed
    run = tmp_path / "run"
    conform_cli("fuzz", "--backend", backend, "--ops", ",".join(campaign.ops), "--budget", 1,
                "--max-nodes", 3, "--seed", campaign.failing_seed, "--out", run, "--no-reduce",
                check_status=1)
    (record,) = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert record["verdict"] == "fail" and len(record["nodes"]) > 1, record.get("message")

    assert main(["repro", "graph.0", "--from", str(run), "--format", "onnx"]) == 2
    assert capsys.readouterr().err == (
        f"conform: error: graph.0 of a {backend} run is written as {model_format} only (the "
        f"format its ops were drawn in), not as onnx\n")

    conform_cli("repro", "graph.0", "--from", run, "--format", model_format, check_status=0)
    written = run / "repro" / "graph.0"
    data = json.loads((written / "graph.json").read_text())
    assert data["signature"] == data["recorded_signature"] == ["fail", "node", blamed]
    assert [node["op"] for node in data["nodes"]] == [blamed]
    assert list(data["models"]) == list(FILES[model_format])
    assert data["models"][FILES[model_format][1]]["outputs"] == _every(data)
    CHECKS[model_format](written, data)

    lines = _repro_lines(written)
    assert lines[0] == data["message"] and f"{blamed} [{backend}]" in lines[0]
    for model in FILES[model_format]:
        assert model in lines
    for name in _every(data):
        assert sum(line.startswith(f"{name}: ") for line in lines) == 2   # one per model
    assert sum(line.startswith("farthest at ") and line.endswith(" ulp)") for line in lines) == 2


@pytest.mark.parametrize("backend", sorted(CAMPAIGNS))
def test_the_instrumented_model_gives_every_value_and_the_other_the_leaves(backend, specs,
                                                                          tmp_path):
    """Written unreduced, a graph with a value that is not a leaf gives its leaves as run and
    every value instrumented, the values the graph worker's runner gives its own model (bit
    for bit); the script prints each of them."""
    from conform.harness.assurance.graph_repro import write_graph_files
    from conform.harness.run.fuzz import draw_fuzz_graph, fuzz_strategies, graph_seed
    from conform.harness.run.graph_formats import graph_format

    campaign = CAMPAIGNS[backend]
    seed = graph_seed(campaign.chained_seed, 0)
    graph = draw_fuzz_graph(fuzz_strategies(specs, 3, campaign.ops, backend), seed=seed)
    every = [name for node in graph.nodes for name in node.outputs]
    assert len(every) > len(graph.leaves) >= 1
    written = write_graph_files(graph, tmp_path, campaign.model_format, seed,
                                {"message": "unreduced"})
    data = json.loads((written / "graph.json").read_text())
    assert [model_io["outputs"] for model_io in data["models"].values()] == \
        [list(graph.leaves), every]
    computed = CHECKS[campaign.model_format](written, data)
    form = graph_format(backend)
    _, run = form.runner()
    feeds = {name: np.asarray(x) for name, x in graph.inputs.items()}
    for name, value in zip(every, run(form.build(graph, every), feeds, None)):
        np.testing.assert_array_equal(computed[name], value, strict=True)
    lines = _repro_lines(written)
    for name in every:   # a leaf in both models
        assert sum(line.startswith(f"{name}: ") for line in lines) == 1 + (name in graph.leaves)
    assert sum(line.startswith("farthest at ") for line in lines) == len(graph.leaves) + len(every)


def test_a_module_the_pretty_printer_spoils_is_written_in_generic_form(specs, tmp_path):
    """A dynamic_slice of a 0-d bfloat16 operand: its module's pretty form does not parse back
    (see test_a_module_is_checked_in_generic_form), so model.mlir is the generic form, which
    compiles; repro.py feeds the bfloat16 input (inputs.npz holds its bytes) and runs it."""
    from conform.generators import generate_cases
    from conform.generators.graphs import one_node
    from conform.harness.assurance.graph_repro import write_graph_files
    from conform.oracles.expectations import expect

    spec = specs["dynamic_slice"]
    case = next(c for c in generate_cases(spec, "bfloat16", count=30, seed=0, answer=expect)
                if np.ndim(c.inputs[0]) == 0)
    written = write_graph_files(one_node(spec, case), tmp_path, "stablehlo", 0,
                                {"message": "a 0-d dynamic_slice"})
    data = json.loads((written / "graph.json").read_text())
    assert data["models"]["model.mlir"]["inputs"] == {"in0": "bfloat16"}
    assert (written / "model.mlir").read_text().startswith('"builtin.module"()')
    lines = _repro_lines(written)
    fed = f"out0: jax     {np.ravel(case.inputs[0])}"   # the slice of a 0-d operand is it
    assert lines.count(fed) == 2, lines


def test_a_module_with_a_lapack_call_runs(specs, tmp_path):
    """Cholesky lowers to a LAPACK custom call, which crashes a compiled module unless jax has
    loaded its LAPACK kernels: the script has them loaded before it compiles."""
    from conform.generators import generate_cases
    from conform.generators.graphs import one_node
    from conform.harness.assurance.graph_repro import write_graph_files
    from conform.oracles.expectations import expect

    spec = specs["cholesky"]
    case = generate_cases(spec, "float32", count=1, seed=0, answer=expect)[0]
    written = write_graph_files(one_node(spec, case), tmp_path, "stablehlo", 0,
                                {"message": "cholesky"})
    assert "lapack_spotrf" in (written / "model.mlir").read_text()
    assert sum(line.startswith("farthest at ") for line in _repro_lines(written)) == 2


def test_a_graph_reading_variables_passes_and_its_repro_reads_their_files(specs, tmp_path):
    """An NNEF graph with two ``variable`` nodes: each reads its own tensor file (labelled by
    the graph input it holds), written beside the document the worker runs and the repro's;
    the graph passes on the nnef backend (its variables read as their data, not as zeros),
    and the written repro.py prints each variable's data, 0 ulp from its reference. No drawn
    variable takes a computed value (its file is written before the graph runs)."""
    from conform.harness.assurance.graph_repro import write_graph_files
    from conform.harness.run.fuzz import (draw_fuzz_graph, fuzz_strategies, graph_record,
                                          graph_seed, run_graph)
    from conform.harness.run.graph_formats import graph_format

    strategies = fuzz_strategies(specs, 3, ("nnef_variable", "exp"), "nnef")
    for number in range(12):
        drawn = draw_fuzz_graph(strategies, seed=graph_seed(number, 0))
        for node in drawn.nodes:
            if node.spec.op == "nnef_variable":
                assert node.inputs[0] in drawn.inputs, (number, drawn.describe())
    seed = graph_seed(6, 0)
    graph = draw_fuzz_graph(strategies, seed=seed)
    variables = [node for node in graph.nodes if node.spec.op == "nnef_variable"]
    assert len(variables) == 2, graph.describe()
    worker = graph_format("nnef").worker()
    try:
        kind, replies = run_graph(graph, worker)
    finally:
        worker.close()
    record = graph_record(graph, 0, seed, kind, replies, "nnef")
    assert record["verdict"] == "pass", record.get("message")

    written = write_graph_files(graph, tmp_path, "nnef", seed, {"message": "two variables"})
    data = json.loads((written / "graph.json").read_text())
    for model in data["models"]:
        assert sorted(p.name for p in (written / model).glob("*.dat")) == \
            sorted(f"{node.inputs[0]}.dat" for node in variables)
    computed = _check_nnef(written, data)
    lines = _repro_lines(written)
    for node in variables:
        (name,) = node.outputs
        np.testing.assert_array_equal(computed[name], graph.inputs[node.inputs[0]], strict=True)
        shown = [k for k, line in enumerate(lines) if line.startswith(f"{name}: nnef")]
        assert len(shown) == 1 + (name in graph.leaves)
        for k in shown:   # the value, its reference, the element farthest from it
            farthest = next(line for line in lines[k:] if line.startswith("farthest at "))
            assert farthest.endswith("(0 ulp)"), farthest
    assert sum(line.startswith("farthest at ") for line in lines) == \
        len(graph.leaves) + len(_every(data))


@pytest.mark.parametrize("op, label", [("onnx_concat", "string"), ("onnx_concat", "bfloat16"),
                                       ("onnx_cast", "float8_e4m3fn->float32"),
                                       ("onnx_cast", "float32->float8_e5m2")])
def test_an_onnx_graph_of_strings_bfloat16_or_float8_is_fed_as_onnxruntime_takes_it(
        op, label, specs, tmp_path):
    """inputs.npz loads without pickles (strings as fixed-width unicode, bfloat16 and float8
    as their bytes), and repro.py feeds each input as onnxruntime takes it (strings as objects,
    bfloat16 and float8 as OrtValues, as conform's graph worker does), reading such results
    back: each value is its reference (a copy or an exact cast); a graph that failed on an
    adapter says first that the script runs on onnxruntime."""
    from conform.generators import generate_cases
    from conform.generators.graphs import one_node
    from conform.harness.assurance.graph_repro import write_graph_files
    from conform.oracles.expectations import expect

    spec = specs[op]
    case = generate_cases(spec, label, count=1, seed=0, answer=expect)[0]
    adapter = "bench.mutants:ConstantFoldedInHalf"
    written = write_graph_files(one_node(spec, case), tmp_path, "onnx", 0,
                                {"message": f"{op} {label}", "backend": adapter})
    feeds = dict(np.load(written / "inputs.npz"))   # allow_pickle=False: no object arrays
    if label == "string":
        assert {x.dtype.kind for x in feeds.values()} == {"U"}
    lines = _repro_lines(written)
    assert lines[:2] == [f"{op} {label}", f"runs on onnxruntime; the failure was on {adapter}"]
    verdicts = [line for line in lines if "elements differ" in line or "farthest at" in line]
    assert len(verdicts) == 2, lines   # out0 in either model
    for line in verdicts:
        assert line.startswith("0 of ") or line.endswith(("(0 ulp)", "(0 relative)")), line


def test_an_onnxruntime_graph_says_nothing_of_another_backend(specs, tmp_path):
    """The header naming the backend the failure was on is printed for an adapter's run only."""
    from conform.generators import generate_cases
    from conform.generators.graphs import one_node
    from conform.harness.assurance.graph_repro import write_graph_files
    from conform.oracles.expectations import expect

    case = generate_cases(specs["exp"], "float32", count=1, seed=0, answer=expect)[0]
    written = write_graph_files(one_node(specs["exp"], case), tmp_path, "onnx", 0,
                                {"message": "exp", "backend": "onnxruntime"})
    lines = _repro_lines(written)
    assert lines[:2] == ["exp", "model.onnx"]
