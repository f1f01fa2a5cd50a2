"""How ``conform repro`` writes a reduced generated graph in its format: the model twice (the
leaves as outputs, as a user runs it, and instrumented, every value an output), each built by
the builder the graph worker's models come from, and the text of ``repro.py``, which runs both
as the run's backend does and prints each value beside its float64 reference.

* ONNX (onnxruntime and ONNX adapters): ``model.onnx`` and ``model-instrumented.onnx``, run on
  onnxruntime (ORT_ENABLE_ALL, one thread) as conform's graph worker runs them: bfloat16, float8,
  float4, int4 and int2 values crossing as OrtValues (conform's own functions for it, their
  source included: :mod:`~conform.harness.backends.ort_values`), strings as object arrays. An
  adapter's run too: the script needs no conform, and says first that it runs on onnxruntime
  while the failure was on the adapter;
* StableHLO (jax): ``model.mlir`` and ``model-instrumented.mlir``, the module text of the graph's
  ``jax.export`` (:func:`~conform.harness.backends.stablehlo_graphs.module_text`), compiled by
  XLA's default pipeline on jax's CPU client with 64-bit types on;
* NNEF (nnef): the folders ``model.nnef/`` and ``model-instrumented.nnef/``, each holding the
  flat document ``graph.nnef`` (every graph input an ``external``, but a ``variable``'s data: its
  tensor file ``<label>.dat`` beside it, written as a one-op document's is), run by the
  ``nnef`` package's executor, the compound operations it has no kernel for lowered to their
  standard fragments' bodies as conform's nnef backend lowers them.

A writer returns, per model file, what a script needs beside the file: the graph inputs the
model takes in order with their dtypes, its outputs' names, and for NNEF the operations
lowered; :func:`~conform.harness.assurance.graph_repro.write_graph_files` puts it in
graph.json's ``models``.
"""
from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Callable

from conform.harness.backends import ort_values
from conform.reports import atomic_path, write_atomically

#: What every format's repro.py does after its imports: read the files, say what failed, and
#: define ``show``, which prints a value beside its reference (its first elements, and the
#: element farthest from it, in units in the last place of the value's type (float16/32/64) or
#: else relatively: a failure's worst element need not be among the first)
_COMMON = '''
here = pathlib.Path(__file__).parent
graph = json.loads((here / "graph.json").read_text())
feeds = dict(np.load(here / "inputs.npz"))   # strings as fixed-width unicode, ml_dtypes' as bytes
expected = dict(np.load(here / "reference.npz"))


def show(name, value, runtime):
    value, wanted = np.asarray(value), np.asarray(expected[name])
    width = max(len(runtime), len("float64"))
    print(f"  {name}: {runtime:<{width}} {np.ravel(value)[:8]}")
    print(f"  {'':<{len(name)}}  {'float64':<{width}} {np.ravel(wanted)[:8]}")
    if not value.size or value.shape != wanted.shape:
        return
    if wanted.dtype.kind == "V":   # an int4 or int2 value, its bytes in reference.npz
        wanted = wanted.view(value.dtype)
    if value.dtype.kind in "OU" or wanted.dtype.kind in "OU":   # strings: equal or not
        differ = np.flatnonzero(value.astype(str) != wanted.astype(str))
        print(f"  {'':<{len(name)}}  {differ.size} of {value.size} elements differ"
              + (f", the first at {[int(k) for k in np.unravel_index(differ[0], value.shape)]}"
                 if differ.size else ""))
        return
    wide = complex if np.iscomplexobj(value) or np.iscomplexobj(wanted) else float
    got, want = value.astype(wide), wanted.astype(wide)
    in_ulp = value.dtype.kind == "f"   # else relative
    with np.errstate(all="ignore"):
        scale = np.abs(want)
        if in_ulp:
            scale = np.spacing(scale.astype(value.dtype)).astype(float)
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        gap = np.nan_to_num(np.where(same, 0, np.abs(got - want) / scale), nan=np.inf)
    at = np.unravel_index(np.argmax(gap), value.shape)
    print(f"  {'':<{len(name)}}  farthest at {[int(k) for k in at]}: {value[at]!r} for "
          f"{wanted[at]!r} ({gap[at]:.4g} {'ulp' if in_ulp else 'relative'})")


print(graph["message"])
'''

#: conform's functions crossing ml_dtypes' types into and out of onnxruntime, as they stand
_ORT_VALUES = inspect.getsource(ort_values).split("from __future__ import annotations\n", 1)[1]

ONNX_SCRIPT = '''#!/usr/bin/env python3
\"\"\"A reduced generated graph written by conform repro: runs model.onnx (as a user runs it)
and model-instrumented.onnx (every value an output) on onnxruntime (ORT_ENABLE_ALL, one
thread), as conform's graph worker runs them on onnxruntime, and prints each value beside its
float64 reference. bfloat16, float8, float4, int4 and int2 values cross as OrtValues (inputs.npz
holds their bytes), strings as object arrays (inputs.npz holds them as fixed-width unicode).
A graph that failed on another backend (an adapter) still runs on onnxruntime here.\"\"\"
import json, pathlib
import numpy as np, onnxruntime as ort
''' + _ORT_VALUES + _COMMON + '''if graph.get("backend", "onnxruntime") != "onnxruntime":
    print(f"runs on onnxruntime; the failure was on {graph['backend']}"
          + (f" ({graph['backend_version']})" if graph.get("backend_version") else ""))
options = ort.SessionOptions()
options.intra_op_num_threads = options.inter_op_num_threads = 1
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL


def fed(name, dtype):
    \"\"\"An input as conform holds it: an ml_dtypes type's (its bytes in inputs.npz) in that
    type, a string (fixed-width unicode in inputs.npz) as an object array.\"\"\"
    value = feeds[name]
    if value.dtype.kind == "V":
        return value.view(getattr(ml_dtypes, dtype))
    return value.astype(object) if value.dtype.kind == "U" else value


for model, model_io in graph["models"].items():
    print(model)
    session = ort.InferenceSession(str(here / model), options, providers=["CPUExecutionProvider"])
    given = {name: fed(name, dtype) for name, dtype in model_io["inputs"].items()}
    outputs = run_session(ort, session, given)   # as conform's graph worker runs it
    for out, value in zip(session.get_outputs(), outputs):
        show(out.name, value, "onnxruntime")
'''

STABLEHLO_SCRIPT = '''#!/usr/bin/env python3
\"\"\"A reduced generated graph written by conform repro: compiles model.mlir (as a user runs it)
and model-instrumented.mlir (every value an output), StableHLO modules, with XLA's default
pipeline on jax's CPU client (64-bit types on, as conform's jax backend runs them) and prints
each value beside its float64 reference.\"\"\"
import json, pathlib
import jax, ml_dtypes, numpy as np

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")
from jax.extend import backend
''' + _COMMON + '''# a module's LAPACK custom calls (cholesky, triangular_solve) crash unless jax has loaded its
# LAPACK kernels, which it does when it lowers one (as jax.export's call does): a 1x1 Cholesky
jax.jit(jax.numpy.linalg.cholesky).lower(np.ones((1, 1), np.float32))
client = backend.get_backend("cpu")
options = backend.get_compile_options(num_replicas=1, num_partitions=1)


def fed(name, dtype):
    \"\"\"An input as @main takes it (inputs.npz holds bfloat16, float8, int4 as bytes).\"\"\"
    value = feeds[name]
    if value.dtype.kind == "V":
        value = value.view(getattr(ml_dtypes, dtype))
    return jax.device_put(value)


for model, model_io in graph["models"].items():
    print(model)
    executable = client.compile_and_load((here / model).read_text(), client.devices()[:1], options)
    outputs = executable.execute([fed(name, dtype) for name, dtype in model_io["inputs"].items()])
    for name, value in zip(model_io["outputs"], outputs):
        show(name, value, "jax")
'''

NNEF_SCRIPT = '''#!/usr/bin/env python3
\"\"\"A reduced generated graph written by conform repro: runs model.nnef (as a user runs it) and
model-instrumented.nnef (every value an output) on the nnef package's executor (each
operation its own kernel; those it has none for lowered to their standard fragments' bodies,
as conform's nnef backend runs them) and prints each value beside its float64 reference.\"\"\"
import json, pathlib, re
import nnef, numpy as np
''' + _COMMON + '''for model, model_io in graph["models"].items():
    print(model)
    inputs = [np.asarray(feeds[name], order="C") for name in model_io["inputs"]]
    lowered = list(model_io["lowered"])
    while True:
        try:
            with nnef.Session(str(here / model), lowered=lowered) as session:
                outputs = session(*inputs)
            break
        except ValueError as exc:   # no kernel: run the operation's standard fragment's body
            missing = re.search(r"operation not implemented: (\\w+)", str(exc))
            if missing is None or missing.group(1) in lowered:
                raise
            lowered.append(missing.group(1))
    for name, value in zip(model_io["outputs"], outputs):
        show(name, value, "nnef")
'''


@dataclasses.dataclass(frozen=True)
class GraphWriter:
    """One format's model files and the repro.py that runs them."""

    write: Callable   # (graph, out folder) -> {model file: what the script needs to run it}
    script: str       # repro.py's text


def _models(graph) -> tuple:
    """``(file stem suffix, outputs)`` of the two models: the leaves, then every value."""
    return (("", list(graph.leaves)),
            ("-instrumented", [name for node in graph.nodes for name in node.outputs]))


def _model_io(graph, inputs, outputs, **more) -> dict:
    return {"inputs": {name: graph.dtypes[name] for name in inputs}, "outputs": list(outputs),
            **more}


def _write_onnx(graph, out: Path) -> dict:
    from conform.harness.backends.onnx_graphs import build_graph_model

    models = {}
    fed = [name for name in graph.inputs if name not in graph.constants]
    for suffix, outputs in _models(graph):
        with atomic_path(out / f"model{suffix}.onnx") as temporary:
            Path(temporary).write_bytes(build_graph_model(graph, outputs).SerializeToString())
        models[f"model{suffix}.onnx"] = _model_io(graph, fed, outputs)
    return models


def _write_stablehlo(graph, out: Path) -> dict:
    from conform.harness.backends.stablehlo_graphs import module_text

    models = {}
    for suffix, outputs in _models(graph):
        text, fed = module_text(graph, outputs)
        write_atomically(out / f"model{suffix}.mlir", text)
        models[f"model{suffix}.mlir"] = _model_io(graph, fed, outputs)
    return models


def _write_nnef(graph, out: Path) -> dict:
    from conform.harness.backends.nnef_graphs import build_graph_document, lowered_by_executor

    models = {}
    for suffix, outputs in _models(graph):
        built = build_graph_document(graph, outputs)
        folder = built.document().write(out / f"model{suffix}.nnef")
        models[folder.name] = _model_io(graph, built.fed, outputs,
                                        lowered=lowered_by_executor(built.operations))
    return models


#: How a reduced graph is written, by its run's model format (``GraphFormat.model_format``)
GRAPH_WRITERS = {"onnx": GraphWriter(_write_onnx, ONNX_SCRIPT),
                 "stablehlo": GraphWriter(_write_stablehlo, STABLEHLO_SCRIPT),
                 "nnef": GraphWriter(_write_nnef, NNEF_SCRIPT)}
