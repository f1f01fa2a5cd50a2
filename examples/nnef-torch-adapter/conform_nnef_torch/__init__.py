"""A conform adapter for the PyTorch interpreter of Khronos' nnef-tools (PyPI ``nnef_tools``,
pinned in pyproject.toml, on ``torch``, pinned too).

The backend ``nnef-torch`` (:class:`NnefTorchBackend`, ``model_format = "nnef"``) runs conform's
one-op NNEF documents (``conform.harness.backends.nnef_models.build_document``) as nnef-tools
runs a model: the folder read into a ``torch.nn.Module`` (``NNEFModule``, what nnef-tools'
``Interpreter`` wraps), each NNEF operation one of its torch functions, evaluated without
gradients on the CPU. The precision of NNEF's ``scalar`` is the module's: float32 as read, or
float16 or float64 after ``Module.to(dtype)``, torch's own way to run a module at another width,
with the inputs fed at that width.

README.md says what each declaration rests on; every one was measured with nnef_tools 1.0.11 and
torch 2.13.0 (CPU build).
"""
from __future__ import annotations

import re
import tempfile
from importlib.metadata import version as package_version

import numpy as np
import torch
from nnef_tools.interpreter.pytorch.nnef_module import NNEFModule

from conform.harness.backends import Backend, Unsupported
from conform.harness.backends.base import RuntimeClock, refuse_artefact
from conform.harness.backends.models import ModelCache
from conform.harness.backends.nnef_models import build_document

__all__ = ["NnefTorchBackend", "NNEF_TYPES"]

# What the interpreter makes of NNEF's three tensor types. It reads ``scalar`` as float32,
# ``integer`` as int64 and ``logical`` as bool (its reader's dtypes; variables and literals are
# converted to those), and its torch functions compute at the width of the tensors they are
# handed: a module moved to float16 or float64 (``Module.to``), fed inputs of that width,
# computes at that width (measured: float64 1 + 2**-40 is kept; float16 results are float16).
NNEF_TYPES = {"float16": "scalar", "float32": "scalar", "float64": "scalar",
              "int64": "integer", "bool": "logical"}

_FLOATS = {"float16": torch.float16, "float32": torch.float32, "float64": torch.float64}

# The interpreter's messages where it lacks what the case needs (the case is unsupported, its
# message kept); every other failure stays an error. Measured with nnef_tools 1.0.11:
_LACKS = re.compile(
    r"Unsupported operation: \w+"                               # no torch function for the op
    # its operators' stated limits (ranks, borders, dilations, axes they do not handle)
    r"|nnef\.\w+\b[^\n]*?(?:is only implemented|is not implemented|border unsupported)[^\n]*"
    r"|Sliding window operations are not supported[^\n]*|Negative padding is not supported"
    r"|\w+ is only implemented for consecutive axes"
    r"|\"\w+\" not implemented for '\w+'")                       # a torch kernel without the dtype

# NNEF's type system refusing the document (the nnef package's parser, which the interpreter
# reads it with): the standard rules the case out, as for the nnef backend
_TYPE_ERROR = re.compile(r"argument of type [^\n]* cannot be cast to type [^\n]*")

# A generic invocation typed ``<scalar>`` (``cast<scalar>``, ``constant<scalar>``,
# ``variable<scalar>``), besides the ``external`` the module is fed through: the interpreter's
# reader takes that ``scalar`` as float32, whatever width the module runs at
_TYPED_SCALAR = re.compile(r"=\s*(?!external<)\w+<scalar>\(")

# A scalar literal of the document (conform's literals always hold a point or an exponent)
_SCALAR_LITERAL = re.compile(r"(?<![\w.])-?(?:\d+\.\d*(?:e[-+]?\d+)?|\d+e[-+]?\d+)")


class NnefTorchBackend(Backend):
    """Each case as conform's NNEF document, run by nnef-tools' PyTorch interpreter."""

    api_version = 3
    name = "nnef-torch"
    model_format = "nnef"
    dtypes = frozenset(NNEF_TYPES)
    subnormals = "ieee"   # measured: 1e-20f * 1e-20f = 1e-40f; float16 6e-8 + 6e-8 = 1.2e-7

    def __init__(self):
        # conform runs one case per worker at a time, its workers side by side: torch's own
        # thread pool would only compete with them
        torch.set_num_threads(1)
        self._modules = ModelCache(limit=512)
        self.clock = RuntimeClock()

    def version(self) -> str:
        return f"nnef_tools {package_version('nnef_tools')}, torch {torch.__version__}"

    def stats(self) -> dict:
        """Counters for the benchmark: modules built (documents read), and the runtime's time."""
        return {"compilations": self._modules.compiled, **self.clock.as_stats()}

    def run(self, *, program, inputs, model=None):
        # an input NNEF's lowering of the op cannot express (as for the nnef backend)
        refuse_artefact(program, inputs, "nnef")
        # The document is built here, not by ``model.build()``: conform's default maps only the
        # nnef package executor's types (float32, int32, bool) onto NNEF's.
        with self.clock.timing("model_build"):
            document = build_document(program.spec, program.case, NNEF_TYPES)
        precision = _precision(program)
        if precision != torch.float32 and _TYPED_SCALAR.search(document.text):
            raise Unsupported("nnef-tools reads the type argument <scalar> of a generic "
                              "operation as float32 (its reader's dtype for scalar): it cannot "
                              f"be {_name(precision)} in a {_name(precision)} module")
        if precision == torch.float64:
            _check_literals(document.text)
        key = (document.text, document.files_key, precision)   # variables' data are the module's
        module = self._modules.get(key, lambda: self._load(document, precision))
        feeds = [torch.from_numpy(np.array(x)) for x in document.feeds(program.case)]
        with self.clock.timing("execute"):
            outputs = _interpreted(lambda: _forward(module, feeds))
        return document.results([output.detach().numpy() for output in outputs])

    def _load(self, document, precision):
        with self.clock.timing("compile"), tempfile.TemporaryDirectory(
                prefix="conform-nnef-torch-") as folder:   # read while the module is built
            module = _interpreted(lambda: NNEFModule(model=str(document.write(folder))))
        return module.to(precision).eval()


def _forward(module, feeds):
    with torch.no_grad():   # as the interpreter runs it: no autograd graph
        return module(*feeds)


def _interpreted(call):
    """``call()``; a failure made :class:`Unsupported` where the interpreter lacks what the case
    needs (its message kept), else a RuntimeError with its type and message."""
    try:
        return call()
    except Exception as exc:   # noqa: BLE001 - the interpreter's asserts and torch's errors
        # the temporary folder's name differs in every message: the same failure, one text
        text = re.sub(r"[^'\"\s]*conform-nnef-torch-\w+", "<folder>", str(exc))[:3000]
        lacks = _LACKS.search(text)
        if lacks:
            raise Unsupported(f"nnef-tools: {lacks.group(0)}") from None
        refused = _TYPE_ERROR.search(text)
        if refused:
            raise Unsupported(f"NNEF type system: {refused.group(0)}") from None
        raise RuntimeError(text if type(exc) is RuntimeError else f"{type(exc).__name__}: {text}") \
            from None


def _check_literals(text: str) -> None:
    """Raise :class:`Unsupported` for a scalar literal that float32 cannot hold: the interpreter
    reads the document with the nnef package's parser, which stores every scalar literal (an
    attribute such as epsilon, an operand such as 1.0) as float32, so a float64 module cannot
    be handed one exactly (measured: epsilon = 0.001 arrives as 0.0010000000474974513)."""
    for literal in _SCALAR_LITERAL.findall(text):
        if float(np.float32(literal)) != float(literal):
            raise Unsupported(f"nnef-tools reads documents with the nnef package's parser, "
                              f"which holds the scalar literal {literal} as float32 "
                              f"({float(np.float32(literal))!r}): a float64 module cannot be "
                              "handed it")


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _precision(program) -> torch.dtype:
    """The width of NNEF's ``scalar`` for the case: a module computes at one, so a case mixing
    two (a conversion between them) cannot be one module."""
    floats = {d for d in (*program.input_dtypes, *program.out_dtypes) if d in _FLOATS}
    if len(floats) > 1:
        raise Unsupported("nnef-tools runs a module's NNEF scalar at one width "
                          f"(float16, float32 or float64), never {' and '.join(sorted(floats))} "
                          "in one module")
    return _FLOATS[floats.pop()] if floats else torch.float32
