"""conform adapters for tract (https://github.com/sonos/tract), Sonos' inference engine, through
its Python package (``tract``, pinned in pyproject.toml).

Two backends, because conform hands a backend the case in one model format:

* ``tract`` (:class:`TractNnefBackend`, ``model_format = "nnef"``): conform's one-op NNEF
  documents (``conform.harness.backends.nnef_models.build_document``), loaded by tract's NNEF
  loader (``tract.nnef().model_for_path``) and run optimized.
* ``tract-onnx`` (:class:`TractOnnxBackend`, ``model_format = "onnx"``): conform's ONNX models,
  loaded by tract's ONNX loader (``tract.onnx().model_for_path``) with each input's shape and
  type set, and run optimized: a second ONNX runtime.

README.md says what each declaration rests on; every one was measured with tract 0.21.7.
"""
from __future__ import annotations

import os
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import tract

from conform.harness.backends import Backend, Unsupported
from conform.harness.backends.models import ModelCache
from conform.harness.backends.nnef_models import build_document

from conform_tract.values import from_numpy, to_numpy

# tract (Rust) appends a backtrace to every error, and prints one after a panic, when
# RUST_BACKTRACE is set: conform keeps 4,096 bytes of a crashed case's standard error, and the
# panic message would scroll out of them. Set in the worker only, before tract's first call.
os.environ["RUST_BACKTRACE"] = "0"

__all__ = ["TractNnefBackend", "TractOnnxBackend", "NNEF_TYPES", "ONNX_DTYPES"]

# What tract's NNEF loader makes of NNEF's three tensor types (measured: tract reads
# ``external<scalar>`` as F32, ``external<integer>`` as I64, ``external<logical>`` as Bool).
# float16: the same document, turned into an F16 model by tract's own ``f32-to-f16`` transform
# (``Model.f32_to_f16``), the way tract runs a model in half precision. tract 0.21.7 has no
# transform to float64 and its NNEF loader no other way to make ``scalar`` f64, so float64 is
# not claimed.
NNEF_TYPES = {"float16": "scalar", "float32": "scalar", "int64": "integer", "bool": "logical"}

# The dtypes tract's ONNX loader and kernels take at their own width (README.md: measured).
ONNX_DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                         "uint64", "float16", "float32", "float64"})

# How tract's fact strings spell conform's dtypes (tract's InferenceFact syntax: "2,3,f32").
_FACT_TYPES = {"bool": "bool", "float16": "f16", "float32": "f32", "float64": "f64",
               **{f"{s}{b}": f"{s[0]}{b}" for s in ("int", "uint") for b in (8, 16, 32, 64)}}

# tract's messages where it lacks what the case needs (the case is unsupported, tract's message
# kept); every other failure stays an error. Measured with tract 0.21.7:
_LACKS = re.compile(
    r'No definition for operator Identifier\("\w+"\)'   # an NNEF operation its loader lacks
    r"|Unimplemented\(\w+\)"                              # an ONNX operator its loader lacks
    r"|\b\w+ does not support [A-Z]\w*\d*\b"             # a kernel without this datum type
    r"|\b\w+ is not a number\b"                          # a kernel taking numbers only (Pad)
    r"|\b\w+ should be like \[1, 1, \.\.\. \]"          # box with stride or dilation
    # an ONNX input tract needs as a constant (an initializer), fed at run time here
    r"|\w+ (?:is|are) not const|[Ee]xpect(?:s)? constant [\w ]+|\w+ input is variable"
    r"|\w+ must be a const|Non constant \w+ is not supported")


class _TractBackend(Backend):
    """What both adapters share: a compiled-model cache, and tract's failures classified."""

    api_version = 3
    subnormals = "ieee"   # measured: 1e-20f * 1e-20f = 1e-40f and 1e-39f + 1e-39f = 2e-39f

    def __init__(self):
        self._runnables = ModelCache(limit=512)

    def version(self) -> str:
        return f"tract {tract.version()}"

    def stats(self) -> dict:
        """Counters for the benchmark: models loaded and optimized."""
        return {"compilations": self._runnables.compiled}

    def _execute(self, key, load, inputs) -> list[np.ndarray]:
        runnable = self._runnables.get(key, lambda: self._tract(
            lambda: load().into_optimized().into_runnable()))
        outputs = self._tract(lambda: runnable.run([from_numpy(x) for x in inputs]))
        return [to_numpy(value) for value in outputs]

    def _tract(self, call):
        """``call()``; a TractError made :class:`Unsupported` where tract lacks what the case
        needs (its message kept), else a RuntimeError with tract's message."""
        try:
            return call()
        except tract.TractError as exc:
            # the temporary folder's name differs in every message: the same failure, one text
            text = re.sub(r'[^"\s]*conform-tract-\w+', "<folder>", str(exc))[:3000]
            lacks = _LACKS.search(text)
            if lacks:
                invoked = re.search(r'Resolving invocation Identifier\("(\w+)"\)', text)
                within = f" (in {invoked.group(1)})" if invoked and invoked.group(1) not in \
                    lacks.group(0) else ""
                raise Unsupported(f"tract: {lacks.group(0)}{within}") from None
            raise RuntimeError(text) from None


class TractNnefBackend(_TractBackend):
    """Each case as conform's NNEF document, run by tract's NNEF loader."""

    name = "tract"
    model_format = "nnef"
    dtypes = frozenset(NNEF_TYPES)

    def run(self, *, program, inputs, model=None):
        # The document is built here, not by ``model.build()``: conform's default maps only the
        # nnef package executor's types (float32, int32, bool) onto NNEF's; tract's are others.
        document = build_document(program.spec, program.case, NNEF_TYPES)
        half = _precision(program)
        feeds = document.feeds(program.case)
        key = (document.text, document.files_key, half)   # variables' data are the model's
        outputs = self._execute(key, lambda: self._load(document, half), feeds)
        return document.results(outputs)   # tract's dtypes; an integer result in the case's

    def _load(self, document, half: bool):
        with _folder() as folder:   # tract reads the files while loading, never later
            model = tract.nnef().model_for_path(document.write(folder))
        if half:
            model.f32_to_f16()
        return model


class TractOnnxBackend(_TractBackend):
    """Each case as conform's ONNX model, run by tract's ONNX loader."""

    name = "tract-onnx"
    model_format = "onnx"
    dtypes = ONNX_DTYPES

    def run(self, *, program, inputs, model=None):
        key = (model.key, tuple((x.dtype.str, x.shape) for x in inputs))
        return self._execute(key, lambda: self._load(model, inputs), inputs)

    def _load(self, model, inputs):
        proto = model.build()   # raises Unsupported where ONNX cannot express the case
        with _folder() as folder:
            (folder / "model.onnx").write_bytes(proto.SerializeToString())
            loaded = tract.onnx().model_for_path(folder / "model.onnx")
        # tract infers every shape and type from the inputs' facts: the case's, fixed
        for i, x in enumerate(inputs):
            loaded.set_input_fact(i, ",".join([*map(str, x.shape), _FACT_TYPES[str(x.dtype)]]))
        return loaded


@contextmanager
def _folder():
    """A temporary folder for a model's files, removed when tract has read them."""
    with tempfile.TemporaryDirectory(prefix="conform-tract-") as name:
        yield Path(name)


def _precision(program) -> bool:
    """Whether the case runs in float16: tract's ``f32-to-f16`` turns every float32 of the
    model into float16, so a case mixing the two cannot be expressed."""
    floats = {d for d in (*program.input_dtypes, *program.out_dtypes) if d.startswith("float")}
    if floats == {"float16", "float32"}:
        raise Unsupported("tract runs NNEF's scalar as float32, or as float16 after its "
                          "f32-to-f16 transform, never both in one model")
    return floats == {"float16"}
