"""The backend-specific part of a repro script: a ``backend()`` function, written out as source,
that imports the runtime and returns ``inputs -> output`` computed the way conform's backend does.

Each renderer takes ``(spec, case)`` and returns ``(source, requirement, files)`` where ``files``
maps extra file names to bytes (the ONNX model). The jax call is written literally, so the script
shows exactly which ``jax.lax`` function ran with which arguments.
"""
from __future__ import annotations

import textwrap

from conform.harness.backends.base import binding
from conform.harness.backends.jax_backend import _frozen, _lowest
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
    return source, "jax", {}


def render_onnxruntime(spec, case) -> tuple[str, str, dict]:
    """``backend()`` for onnxruntime: model.onnx (built as conform builds it) on the CPU provider,
    one thread, the graph optimisation level conform uses."""
    from conform.harness.backends.onnx_models import build_model
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
    return source, "onnxruntime", {"model.onnx": build_model(spec, case).SerializeToString()}


RENDERERS = {"jax": render_jax, "onnxruntime": render_onnxruntime}
