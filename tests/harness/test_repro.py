"""conform repro: regenerate a recorded case and write a script that reproduces it without conform."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import venv

import numpy as np
import pytest

from conform.generators import dtype_labels, generate_cases
from conform.harness.backends.base import Unsupported
from conform.harness.judge.judging import case_record
from conform.harness.assurance.repro import ReproError, write_repro
from conform.harness.assurance.repro_backends import lax_program

ORT_PIN = "onnxruntime==1.32.0"


def _failure(run_dir) -> dict:
    """The first case whose backend verdict was ``fail`` (waived or not)."""
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("raw_verdict", record["verdict"]) == "fail":
            return record
    raise AssertionError(f"no failure in {run_dir}")


def _run_script(python, repro_dir):
    return subprocess.run([str(python), str(repro_dir / "repro.py")], capture_output=True,
                          text=True, timeout=300, cwd=repro_dir.parent)


def _labels(spec):
    labels = dtype_labels(spec)
    floats = [d for d in labels if d.startswith("float")]
    ints = [d for d in labels if d.startswith("int")]
    return floats[:1] + ints[:1]


def test_the_written_lax_program_computes_what_the_jax_backend_computes(specs):
    from jax import lax

    from conform.harness.backends.jax_backend import JaxBackend
    from conform.harness.backends.models import run_case
    backend, checked = JaxBackend(), 0
    for spec in specs.values():
        if "xla" not in spec.bindings:
            continue
        for label in _labels(spec):
            case = generate_cases(spec, label, count=2, seed=3)[0]
            try:
                expected = run_case(backend, spec, case)
            except Unsupported:
                continue
            scope = {"lax": lax, "np": np}
            source = lax_program(spec, case)
            exec(source, scope)  # noqa: S102 (our own rendered source)
            outputs = scope["op"](*case.inputs)
            outputs = outputs if isinstance(outputs, tuple | list) else (outputs,)
            assert len(outputs) == len(expected) == len(spec.outputs), source
            for actual, wanted in zip(map(np.asarray, outputs), expected):
                assert actual.dtype == wanted.dtype and actual.shape == wanted.shape, source
                if spec.definition.distribution is None:   # (a random op's draws differ)
                    assert actual.tobytes() == wanted.tobytes(), (case.id, source)
            checked += 1
    assert checked >= 40


def _fake_run(tmp_path, spec, backend="jax", seed=0, max_examples=3):
    """A run directory holding one passing record of ``spec``'s first float case."""
    case = generate_cases(spec, "float32", count=max_examples, seed=seed)[1]
    record = json.loads(json.dumps({**case_record(case), "verdict": "pass"}))
    summary = {"backend": backend, "backend_version": "test", "seed": seed,
               "max_examples": max_examples, "conform_version": "0.1.0"}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "results.jsonl").write_text(json.dumps(record) + "\n")
    return record


def test_a_case_is_regenerated_and_checked_against_the_record(tmp_path, specs):
    record = _fake_run(tmp_path, specs["add"])
    out = write_repro(tmp_path, record["id"], specs)
    assert out == tmp_path / "repro" / record["id"]
    with np.load(out / "inputs.npz") as data:
        assert [list(data[f"in{i}"].shape) for i in range(2)] == record["shapes"]
        np.testing.assert_array_equal(data["expected"], data["in0"].astype(np.float64) + data["in1"])
    script = (out / "repro.py").read_text()
    # add's lax hook (XLA's binary ops, broadcast_dimensions) is written out with its binding
    assert "def lax_xla_binary(lax, attrs, bound)" in script and "bound=lax.add)" in script
    assert "import conform" not in script
    record["shapes"] = [[99], [99]]
    (tmp_path / "results.jsonl").write_text(json.dumps(record) + "\n")
    with pytest.raises(ReproError, match=r"regenerates with shapes=.*recorded shapes=\[\[99\], \[99\]\]"):
        write_repro(tmp_path, record["id"], specs)


def test_a_float32_sweep_chunk_is_regenerated(tmp_path, specs):
    from conform.generators import exhaustive_case

    case = exhaustive_case(specs["tanh"], "float32", 517)
    record = json.loads(json.dumps({**case_record(case), "verdict": "pass"}))
    summary = {"backend": "numpy", "backend_version": "test", "seed": 0, "max_examples": 20,
               "exhaustive": True, "conform_version": "0.1.0"}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "results.jsonl").write_text(json.dumps(record) + "\n")
    out = write_repro(tmp_path, "tanh.float32.exhaustive0517", specs)
    with np.load(out / "inputs.npz") as data:
        bits = data["in0"].view(np.uint32)
    assert bits.size == 1 << 22 and bits[0] == 517 << 22 and bits[-1] == (518 << 22) - 1
    record["id"] = "tanh.float32.exhaustive1024"   # past the last chunk
    (tmp_path / "results.jsonl").write_text(json.dumps(record) + "\n")
    with pytest.raises(ReproError, match="case tanh.float32.exhaustive1024 is not generated"):
        write_repro(tmp_path, record["id"], specs)


def test_models_in_every_format_are_written_on_request(tmp_path, specs):
    record = _fake_run(tmp_path, specs["exp"])
    out = write_repro(tmp_path, record["id"], specs, formats=["onnx", "stablehlo", "nnef"])
    assert "stablehlo.exponential" in (out / "model.mlir").read_text()
    assert "exp(in0)" in (out / "model.nnef" / "graph.nnef").read_text()
    assert (out / "model.nnef" / "in0.dat").stat().st_size > 0
    import onnx

    assert [n.op_type for n in onnx.load(out / "model.onnx").graph.node] == ["Exp"]
    with pytest.raises(ReproError, match="unknown model format tflite; known: onnx, stablehlo, nnef"):
        write_repro(tmp_path, record["id"], specs, formats=["tflite"])


def test_an_adapter_script_runs_the_case_through_conforms_registry(tmp_path, specs):
    record = _fake_run(tmp_path, specs["add"], backend="numpy")
    out = write_repro(tmp_path, record["id"], specs)
    assert 'load_backend_class(CASE["backend"])' in (out / "repro.py").read_text()
    assert json.loads((out / "case.json").read_text())["backend"] == "numpy"
    proc = _run_script(sys.executable, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 of" in proc.stdout and "nothing to reproduce: the recorded verdict is pass" in proc.stdout


def test_an_nnef_script_reproduces_a_real_failure(tmp_path, specs, conform_cli):
    run_dir = tmp_path / "run"
    conform_cli("run", "--backend", "nnef", "--ops", "softplus", "--dtypes", "float32",
                "--max-examples", 4, "--out", run_dir, "--quiet", check_status=None)
    record = _failure(run_dir)   # the executor's softplus loses precision
    out = write_repro(run_dir, record["id"], specs, tmp_path / "repro")
    assert (out / "model.nnef" / "graph.nnef").exists()
    proc = _run_script(sys.executable, out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"REPRODUCED: the recorded fail of {record['id']}" in proc.stdout


def test_unreproducible_requests_are_errors(tmp_path, specs):
    _fake_run(tmp_path, specs["add"])
    with pytest.raises(ReproError, match="no case 'add.float32.77'"):
        write_repro(tmp_path, "add.float32.77", specs)
    record = _fake_run(tmp_path, specs["atan2"], backend="onnxruntime")  # no ONNX binding
    with pytest.raises(ReproError, match="onnxruntime cannot express case atan2.float32.1"):
        write_repro(tmp_path, record["id"], specs)


def test_a_jax_script_reproduces_a_real_failure(tmp_path, specs, conform_cli):
    run_dir = tmp_path / "run"
    conform_cli("run", "--backend", "jax", "--ops", "multiply", "--dtypes", "float32", "--max-examples", 12,
            "--subnormals", "ieee", "--out", run_dir, "--quiet", check_status=0)
    record = _failure(run_dir)
    out = write_repro(run_dir, record["id"], specs, tmp_path / "repro")
    proc = _run_script(sys.executable, out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"REPRODUCED: the recorded fail of {record['id']}" in proc.stdout
    assert f"actual recorded by conform   = {float(record['worst']['actual'])!r}" in proc.stdout
    # the script says which differences the run's subnormal policy allows (here none: ieee)
    assert "subnormal policy ieee: subnormals are judged as IEEE 754 values" in proc.stdout


@pytest.fixture(scope="module")
def clean_venv(tmp_path_factory):
    """A venv with only numpy and onnxruntime (not --system-site-packages: conform is absent)."""
    directory = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=True).create(directory)
    python = directory / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                              "numpy", ORT_PIN], capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stderr
    return python


@pytest.mark.slow
def test_an_onnxruntime_script_reproduces_a_real_failure_in_a_clean_venv(tmp_path, clean_venv,
                                                                         conform_cli):
    assert subprocess.run([str(clean_venv), "-c", "import conform"], capture_output=True,
                          cwd=tmp_path).returncode != 0   # not from the checkout's folder either
    run_dir = tmp_path / "run"
    conform_cli("run", "--backend", "onnxruntime", "--ops", "onnx_where", "--dtypes", "float32",
            "--out", run_dir, "--quiet", check_status=0)
    record = _failure(run_dir)  # Where on -0.0: waived by the built-in manifest, failed as run
    proc = conform_cli("repro", record["id"], "--from", run_dir, "--out", tmp_path / "repro", check_status=0)
    assert "inputs.npz, model.onnx, repro.py" in proc.stdout
    result = _run_script(clean_venv, tmp_path / "repro")
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"REPRODUCED: the recorded fail of {record['id']}" in result.stdout
    assert "actual now                   = 0.0" in result.stdout
    assert "expected (the reference)     = -0.0" in result.stdout


def test_an_onnxruntime_script_reproduces_a_float8_failure(tmp_path, specs, conform_cli):
    """float8 inputs and outputs cross as OrtValues in the script as in the backend (the
    script carries conform's own functions for it, and needs ml_dtypes)."""
    run_dir = tmp_path / "run"
    conform_cli("run", "--backend", "onnxruntime", "--ops", "onnx_cast", "--dtypes",
                "float16->float8_e5m2fnuz", "--max-examples", 8, "--out", run_dir, "--quiet",
                check_status=0)
    record = _failure(run_dir)   # an infinity saturates to 57344, where the Cast table wants NaN
    out = write_repro(run_dir, record["id"], specs, tmp_path / "repro")
    script = (out / "repro.py").read_text()
    assert json.loads((out / "case.json").read_text())["needs"] == "numpy onnxruntime ml_dtypes"
    assert "def ort_value(" in script
    proc = _run_script(sys.executable, out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"REPRODUCED: the recorded fail of {record['id']}" in proc.stdout
    assert "57344.0" in proc.stdout.split("actual now")[1].splitlines()[0]


def test_an_onnxruntime_script_feeds_a_0d_input_as_0d(tmp_path, specs):
    """A 0-d input (ScatterND's updates for a full index tuple) reaches the model as 0-d
    (np.ascontiguousarray would make it 1-d, which onnxruntime refuses there)."""
    spec = specs["onnx_scatter_nd"]
    case = next(c for c in generate_cases(spec, "float32", count=64, seed=0)
                if np.ndim(c.inputs[2]) == 0)
    record = json.loads(json.dumps({**case_record(case), "verdict": "pass"}))
    summary = {"backend": "onnxruntime", "backend_version": "test", "seed": 0,
               "max_examples": 64, "conform_version": "0.1.0"}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "results.jsonl").write_text(json.dumps(record) + "\n")
    out = write_repro(tmp_path, record["id"], specs, tmp_path / "repro")
    proc = _run_script(sys.executable, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "nothing to reproduce: the recorded verdict is pass" in proc.stdout


INJECTED = '"""\nimport pathlib; pathlib.Path("PWNED").touch()\n"""'   # a docstring closed, then code


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_text_from_the_run_folder_is_data_in_the_script_never_code(tmp_path, specs, backend):
    """A summary.json whose backend_version, and a record whose verdict and message, close a
    docstring and hold code: the script carries them as data (case.json) and runs none of it."""
    record = _fake_run(tmp_path, specs["add"], backend=backend)
    summary = json.loads((tmp_path / "summary.json").read_text())
    summary["backend_version"] = INJECTED
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    record.update(verdict="fail" + INJECTED, message=INJECTED + "'''\nimport os\n")
    (tmp_path / "results.jsonl").write_text(json.dumps(record) + "\n")
    out = write_repro(tmp_path, record["id"], specs)
    assert "PWNED" not in (out / "repro.py").read_text()
    data = json.loads((out / "case.json").read_text())
    assert data["backend_version"] == INJECTED and data["recorded"]["verdict"] == "fail" + INJECTED
    if backend == "numpy":   # (jax's script needs jax: it is enough that the text is not there)
        proc = _run_script(sys.executable, out)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "nothing to reproduce" in proc.stdout
    assert not list(tmp_path.rglob("PWNED"))


@pytest.mark.parametrize("case_id", ["../../x", "/tmp/conform-repro-absolute", "add..x"])
def test_a_case_id_that_leaves_the_repro_folder_is_refused(tmp_path, specs, case_id):
    run = tmp_path / "run"
    run.mkdir()
    record = {"id": case_id, "op": "add", "dtype": "float32", "plan": "hunt", "verdict": "fail",
              "input_dtypes": ["float32", "float32"], "out_dtype": "float32", "attrs": {},
              "seed": 0, "shapes": [[1], [1]]}
    (run / "summary.json").write_text(json.dumps({"backend": "numpy", "backend_version": "x",
                                                  "seed": 0, "max_examples": 1}))
    (run / "results.jsonl").write_text(json.dumps(record) + "\n")
    np.savez(run / "hunt-cases.npz", **{f"{case_id}/0": np.ones(1, "f4"), f"{case_id}/1": np.ones(1, "f4")})
    before = set(tmp_path.rglob("*"))
    with pytest.raises(ReproError, match="is not a case id"):
        write_repro(run, case_id, specs)
    assert set(tmp_path.rglob("*")) == before


def test_a_lowering_is_written_with_the_module_helpers_it_calls(specs):
    """reduce_max's lowering calls ops/reduction.py's ``extreme``: the program defines it once
    beside the lowering, and runs alone (an empty slice of float8_e4m3fn, which has no
    infinity, gives the type's least value)."""
    from jax import lax

    spec = specs["reduce_max"]
    case = generate_cases(spec, "float8_e4m3fn", count=1, seed=3)[0]
    source = lax_program(spec, dataclasses.replace(case, attrs={"dimensions": [1]}))
    assert source.count("def extreme(") == 1 and source.index("def extreme(") < \
        source.index("def lax_reduce_max(")
    scope = {"lax": lax, "np": np}
    exec(source, scope)  # noqa: S102 (our own rendered source)
    out = scope["op"](np.zeros((2, 0), case.inputs[0].dtype))
    assert np.asarray(out).astype(np.float64).tolist() == [-448.0, -448.0]
