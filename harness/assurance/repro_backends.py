"""The backend-specific part of a repro script: a ``backend()`` function, written out as source,
that imports the runtime and returns ``inputs -> outputs`` (a list, in the op's output order)
computed the way conform's backend does.

Each renderer takes ``(spec, case)`` and returns ``(source, requirement, formats)`` where
``formats`` names the model files the script reads (``onnx``: ``model.onnx``, ``nnef``: the
``model.nnef`` folder), written beside it. The jax computation is written literally (the op
module's own lowering, or the ``jax.lax`` call), so the script shows exactly which ``jax.lax``
functions ran with which arguments. A vendor adapter's script runs the
case through conform's registry, so it needs conform and the adapter installed.
"""
from __future__ import annotations

import functools
import inspect
import textwrap

from conform.harness.backends.jax_backend import JaxBackend, frozen, lax_calls
from conform.spec.program_nodes import node_cases, program_nodes


def lax_program(spec, case) -> str:
    """Source defining ``op(x0, x1, ...)``, the ``jax.lax`` computation conform's jax backend jits
    for ``case`` (``lax`` and ``np`` must be in scope): the op module's ``lax`` lowering itself,
    written out with the case's attributes, or the binding's ``lax.<name>`` call. For a program,
    one such function per node (``op_0``, ...) and ``op`` calling them in order and returning
    every node's output."""
    nodes, node_calls = program_nodes(spec, case), lax_calls(spec, case)
    if len(nodes) == 1:   # a one-node program is written as its op's function
        ((lax_name, attrs),) = node_calls
        return _lax_call(spec, lax_name, attrs, "op", [f"x{i}" for i in range(len(case.inputs))],
                         case.input_dtypes)
    hooks, calls, steps = {}, [], []
    for k, (node, node_at, (lax_name, attrs)) in enumerate(zip(nodes, node_cases(spec, case),
                                                               node_calls)):
        source = _lax_call(node.spec, lax_name, attrs, f"op_{k}", node.inputs,
                           node_at.input_dtypes)
        hook, _, call = source.rpartition("\n\n")   # a lowering's source is written once
        if hook:
            hooks.setdefault(hook, None)
        calls.append(call if hook else source)
        steps.append(f"    {', '.join(node.outputs)} = op_{k}({', '.join(node.inputs)})\n")
    outputs = "".join(f"{name}, " for name in spec.outputs)
    return "\n\n".join([*hooks, *calls, f"def op({', '.join(spec.input_names(case))}):\n"
                        + "".join(steps) + f"    return ({outputs.rstrip()})\n"])


def _lax_call(spec, lax_name: str, attrs: dict, name: str, arguments, dtypes=()) -> str:
    """Source defining ``name(*arguments)``: one op's lax computation (its binding ``lax_name``)
    with ``attrs`` (the binding's params included) on inputs of ``dtypes``."""
    lower = spec.definition.lax
    if lower is not None:
        bound_fn = f", bound=lax.{lax_name}" if spec.definition.lax_takes_bound else ""
        bound_fn += f", dtypes={tuple(dtypes)!r}" if spec.definition.lax_takes_dtypes else ""
        # a hook given as functools.partial(hook, keyword=function): each function written too
        fixed = dict(lower.keywords) if isinstance(lower, functools.partial) else {}
        lower = lower.func if isinstance(lower, functools.partial) else lower
        seen, written = {lower}, []
        for function in (*fixed.values(), lower):
            seen.add(function)
            written += [*_helpers(function, seen), function]
        bound_fn += "".join(f", {key}={value.__name__}" for key, value in fixed.items())
        sources = [textwrap.dedent(inspect.getsource(f)).rstrip("\n")
                   for f in dict.fromkeys(written)]
        return "\n\n\n".join(sources) + f"\n\n{name} = {lower.__name__}(lax, {attrs!r}{bound_fn})\n"
    operands = ", ".join(arguments)
    keywords = [operands] * bool(operands) + [f"{k}={frozen(v)!r}" for k, v in attrs.items()]
    return f"def {name}({operands}):\n    return lax.{lax_name}({', '.join(keywords)})\n"


def _helpers(function, seen: set) -> list:
    """The module-level functions of conform's op modules that ``function`` (or a function
    nested in it) names, those they name first, each once (``seen`` holds the ones already
    written): a lowering's source runs only beside theirs. Names are read from the code
    objects, so an attribute spelled like a helper brings it in too (a harmless definition);
    a decorated function (an oracle) is no helper: its decorator would not run there."""
    codes, names = [function.__code__], set()
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes.extend(c for c in code.co_consts if inspect.iscode(c))
    found = []
    for helper in (function.__globals__.get(n) for n in sorted(names)):
        if inspect.isfunction(helper) and helper.__module__.startswith("conform.ops") \
                and helper not in seen and inspect.getsource(helper).lstrip().startswith("def "):
            seen.add(helper)
            found += [*_helpers(helper, seen), helper]
    return found


def render_jax(spec, case) -> tuple[str, str, dict]:
    """``backend()`` for the jax backend: the lax call, jitted, x64 on the CPU."""
    program = textwrap.indent(lax_program(spec, case), " " * 4)
    functions = ", ".join(f"jax.lax.{name}" if name else "the op module's lax lowering"
                          for name, _ in lax_calls(spec, case))
    source = textwrap.dedent(f'''\
        def backend():
            """{functions} jitted on the CPU with 64-bit types enabled, as
            conform's jax backend runs it (inputs are runtime arguments, not constants;
            {JaxBackend.host_devices} host devices, one per replica of a collective)."""
            import jax

            jax.config.update("jax_enable_x64", True)
            jax.config.update("jax_platforms", "cpu")
            jax.config.update("jax_num_cpu_devices", {JaxBackend.host_devices})
            from jax import lax

        ''') + program + (
        "\n    compiled = jax.jit(op)\n\n"
        "    def run(inputs):\n"
        "        outputs = compiled(*inputs)\n"
        "        return [np.asarray(o) for o in (outputs if isinstance(outputs, (tuple, list)) else (outputs,))]\n\n"
        "    return run\n")
    return source, "jax", []


def render_onnxruntime(spec, case) -> tuple[str, str, dict]:
    """``backend()`` for onnxruntime: model.onnx (built as conform builds it) on the CPU provider,
    one thread, the graph optimisation level conform uses."""
    from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend

    level = OnnxRuntimeBackend.optimization
    source = textwrap.dedent(f'''\
        def backend():
            """model.onnx on onnxruntime's CPU provider, single-threaded, {level},
            as conform's onnxruntime backend runs it."""
            import onnxruntime as ort

            def run(inputs):
                options = ort.SessionOptions()
                options.intra_op_num_threads = 1
                options.inter_op_num_threads = 1
                options.graph_optimization_level = ort.GraphOptimizationLevel.{level}
                session = ort.InferenceSession(str(HERE / "model.onnx"), options,
                                               providers=["CPUExecutionProvider"])
                feeds = {{f"in{{i}}": np.asarray(x, order="C") for i, x in enumerate(inputs)}}
                return __RUN__

            return run
        ''')
    from conform.harness.backends import ort_values

    if getattr(spec, "sequence_outputs", ()):   # sequences come back as lists: packed
        from conform.ops import sequence_values

        helpers = inspect.getsource(sequence_values).split("from __future__ import annotations\n", 1)[1]
        run_line = f"packed_outputs(session.run(None, feeds), {list(spec.out_dtypes(case))!r})"
        return helpers + "\n\n" + source.replace("__RUN__", run_line), "onnxruntime", ["onnx"]
    if not ort_values.needs_ort_values((*case.input_dtypes, *spec.out_dtypes(case))):
        return source.replace("__RUN__", "session.run(None, feeds)"), "onnxruntime", ["onnx"]
    # bfloat16, float8 and int4 cross as OrtValues: conform's own functions for it, as they are
    helpers = inspect.getsource(ort_values).split("from __future__ import annotations\n", 1)[1]
    run_line = ("[array_of(value) for value in session.run_with_ort_values(\n"
                "                    None, {name: ort_value(ort, x) for name, x in feeds.items()})]")
    return helpers + "\n\n" + source.replace("__RUN__", run_line), "onnxruntime", ["onnx"]


def render_nnef(spec, case) -> tuple[str, str, list]:
    """``backend()`` for the nnef backend: model.nnef/graph.nnef run by the ``nnef`` package's
    executor without lowering, fed the inputs the graph declares as externals; an operation the
    executor has no kernel for is lowered to its standard fragment's body, one at a time, as
    the backend does."""
    from conform.harness.backends.nnef_models import build_document

    document = build_document(spec, case)
    # a document reading variables is loaded from its folder, where their tensor files are
    document_path = "model.nnef" if document.files else "model.nnef/graph.nnef"
    source = textwrap.dedent(f'''\
        def backend():
            """model.nnef/graph.nnef run by the nnef package's executor (lowered=[]: every operation
            is the executor's own kernel, but those it has none for: lowered to their standard
            fragments' bodies), as conform's nnef backend runs it."""
            import re

            import nnef

            def run(inputs):
                fed = [np.asarray(inputs[i], order="C") for i in {document.inputs!r}]
                fed += [np.zeros((1,), bool)] * {int(document.placeholder)}   # an unused parameter
                lowered = []
                while True:
                    session = nnef.Session(str(HERE / {document_path!r}), lowered=lowered)
                    try:
                        outputs = list(session(*fed))
                        break
                    except ValueError as exc:
                        missing = re.search(r"operation not implemented: (\\w+)", str(exc))
                        if missing is None or missing.group(1) in lowered:
                            raise
                        lowered.append(missing.group(1))
                shape = {document.output_shape!r}   # NNEF reductions keep reduced axes as 1
                return outputs if shape is None else [outputs[0].reshape(shape)]

            return run
        ''')
    return source, "nnef", ["nnef"]


def render_adapter(name: str, spec, case) -> tuple[str, str, list]:
    """``backend()`` for any other backend (a vendor adapter): the case run through conform's
    registry exactly as ``conform run`` calls it (claims checked, the model handed over)."""
    source = textwrap.dedent(f'''\
        def backend():
            """The backend case.json names, loaded through conform's registry and called as
            conform run calls it (needs conform and the adapter installed)."""
            from conform.generators import Case
            from conform.harness.backends.models import run_case
            from conform.harness.backends.registry import load_backend_class
            from conform.spec import load_specs

            adapter = load_backend_class(CASE["backend"])()
            spec = load_specs()[{spec.op!r}]

            def run(inputs):
                case = Case(id=CASE_ID, op={spec.op!r}, dtype={case.dtype!r},
                            input_dtypes=tuple(INPUT_DTYPES), out_dtype={case.out_dtype!r},
                            inputs=inputs, attrs={case.attrs!r}, plan="repro", seed=0)
                return run_case(adapter, spec, case)

            return run
        ''')
    return source, f"conform and the {name} adapter", []


RENDERERS = {"jax": render_jax, "onnxruntime": render_onnxruntime, "nnef": render_nnef}


def renderer(backend: str):
    """The renderer for ``backend``: a built-in one, else :func:`render_adapter`."""
    from functools import partial

    return RENDERERS.get(backend) or partial(render_adapter, backend)
