"""The backend-specific part of a repro script: a ``backend()`` function, written out as source,
that imports the runtime and returns ``inputs -> output`` computed the way conform's backend does.

Each renderer takes ``(spec, case)`` and returns ``(source, requirement, formats)`` where
``formats`` names the model files the script reads (``onnx``: ``model.onnx``, ``nnef``: the
``model.nnef`` folder), written beside it. The jax call is written literally, so the script shows
exactly which ``jax.lax`` function ran with which arguments. A vendor adapter's script runs the
case through conform's registry, so it needs conform and the adapter installed.
"""
from __future__ import annotations

import textwrap

from conform.harness.backends.base import binding
from conform.harness.backends.jax_backend import _frozen, _highest, _lowest
from conform.spec.dtypes import np_dtype


def _dot_general(case) -> str:
    lhs, rhs = (x.ndim for x in case.inputs[:2])
    numbers = (((lhs - 1,), (rhs - 2,)), (tuple(range(lhs - 2)), tuple(range(rhs - 2))))
    return f"lax.dot_general(x0, x1, {numbers!r})"


def _identity(case) -> str:
    """max's identity for the case's operand, as source: -inf, or the integer type's minimum."""
    return repr(_lowest(None, np_dtype(case.input_dtypes[0])))


def lax_call(lax_name: str, case) -> str:
    """The ``jax.lax`` expression conform's jax backend evaluates for ``case``, as source text over
    the inputs ``x0, x1, ...`` (``lax``, ``np``, ``inf`` and ``dtype`` must be in scope)."""
    a = {k: _frozen(v) for k, v in case.attrs.items()}
    names = [f"x{i}" for i in range(len(case.inputs))]
    special = {
        "reduce_sum": lambda: f"lax.reduce(x0, np.array(0, x0.dtype), lax.add, {a.get('dimensions')!r})",
        "reduce_max": lambda: (f"lax.reduce(x0, np.array({_identity(case)}, x0.dtype), lax.max, "
                               f"{a.get('dimensions')!r})"),
        "reduce_min": lambda: (f"lax.reduce(x0, np.array({_highest(np_dtype(case.input_dtypes[0]))!r}, "
                               f"x0.dtype), lax.min, {a.get('dimensions')!r})"),
        "reduce_window_max": lambda: (
            f"lax.reduce_window(x0, np.array({_identity(case)}, x0.dtype), lax.max, "
            f"{a.get('window_dimensions')!r}, {a.get('window_strides')!r}, {a.get('padding')!r})"),
        "dot_general": lambda: _dot_general(case),
        "conv_general_dilated": lambda: (
            f"lax.conv_general_dilated(x0, x1, {a.get('window_strides')!r}, {a.get('padding')!r}, "
            f"rhs_dilation={a.get('rhs_dilation')!r}, dimension_numbers=('NCHW', 'OIHW', 'NCHW'))"),
        "concatenate": lambda: f"lax.concatenate([{', '.join(names)}], {a.get('dimension')!r})",
        "convert_element_type": lambda: (f"lax.convert_element_type(x0, "
                                         f"dtype({a.get('new_dtype')!r}))"),
    }
    if lax_name in special:
        return special[lax_name]()
    arguments = names + [f"{k}={v!r}" for k, v in a.items()]
    return f"lax.{lax_name}({', '.join(arguments)})"


def render_jax(spec, case) -> tuple[str, str, dict]:
    """``backend()`` for the jax backend: the lax call, jitted, x64 on the CPU."""
    call = lax_call(binding(spec, "xla")["lax"], case)
    parameters = ", ".join(f"x{i}" for i in range(len(case.inputs)))
    source = textwrap.dedent(f'''\
        def backend():
            """jax.lax.{binding(spec, "xla")["lax"]} jitted on the CPU with 64-bit types enabled, as
            conform's jax backend runs it (inputs are runtime arguments, not constants)."""
            import jax

            jax.config.update("jax_enable_x64", True)
            jax.config.update("jax_platforms", "cpu")
            from jax import lax

            @jax.jit
            def op({parameters}):
                return {call}

            return lambda inputs: np.asarray(op(*inputs))
        ''')
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
                feeds = {{f"in{{i}}": np.ascontiguousarray(x) for i, x in enumerate(inputs)}}
                return session.run(None, feeds)[0]

            return run
        ''')
    return source, "onnxruntime", ["onnx"]


def render_nnef(spec, case) -> tuple[str, str, list]:
    """``backend()`` for the nnef backend: model.nnef/graph.nnef run by the ``nnef`` package's
    executor without lowering, fed the inputs the graph declares as externals."""
    from conform.harness.backends.nnef_models import build_document

    document = build_document(spec, case)
    source = textwrap.dedent(f'''\
        def backend():
            """model.nnef/graph.nnef run by the nnef package's executor (lowered=[]: every operation
            is the executor's own kernel), as conform's nnef backend runs it."""
            import nnef

            def run(inputs):
                fed = [np.asarray(inputs[i], order="C") for i in {document.inputs!r}]
                session = nnef.Session(str(HERE / "model.nnef" / "graph.nnef"), lowered=[])
                (output,) = session(*fed)
                shape = {document.output_shape!r}   # NNEF reductions keep reduced axes as 1
                return output if shape is None else output.reshape(shape)

            return run
        ''')
    return source, "nnef", ["nnef"]


def render_adapter(name: str, spec, case) -> tuple[str, str, list]:
    """``backend()`` for any other backend (a vendor adapter): the case run through conform's
    registry exactly as ``conform run`` calls it (claims checked, the model handed over)."""
    source = textwrap.dedent(f'''\
        def backend():
            """The {name!r} backend loaded through conform's registry and called as conform run
            calls it (needs conform and the adapter installed)."""
            from conform.generators import Case
            from conform.harness.backends.models import run_case
            from conform.harness.registry import load_backend_class
            from conform.spec import load_specs

            adapter = load_backend_class({name!r})()
            spec = load_specs()[{spec.op!r}]

            def run(inputs):
                case = Case(id=CASE_ID, op={spec.op!r}, dtype={case.dtype!r},
                            input_dtypes=tuple(INPUT_DTYPES), out_dtype=OUT_DTYPE, inputs=inputs,
                            attrs=ATTRS, plan="repro", seed=0)
                return run_case(adapter, spec, case)[0]

            return run
        ''')
    return source, f"conform and the {name} adapter", []


RENDERERS = {"jax": render_jax, "onnxruntime": render_onnxruntime, "nnef": render_nnef}


def renderer(backend: str):
    """The renderer for ``backend``: a built-in one, else :func:`render_adapter`."""
    from functools import partial

    return RENDERERS.get(backend) or partial(render_adapter, backend)
