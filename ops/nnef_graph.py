"""NNEF's tensor-introducing and variable-updating fragments: external, variable and update
(NNEF 1.0 §4.1-4.2; declared in the ``nnef`` package's standard library, stdlib_source.h:
``external<? = scalar>(shape: integer[])``, ``variable<? = scalar>(shape: integer[], label:
string)``, ``update<?>(variable: tensor<?>, value: tensor<?>) -> (result: tensor<?>)``).

* ``external``: a graph's input, of the given shape, whose data the consumer is fed at run time
  (NNEF 1.0 ch. 3, the seeds' §3.3.4: inputs provide shapes explicitly).
* ``variable``: a tensor of the given shape whose data is read from the tensor file its label
  names (the seeds' §3.3.5: "this label is used to attach tensor data to the serialized
  variable"; the file: NNEF ch. 5, ``conform.harness.backends.nnef_tensors``).
* ``update``: a variable's new value: "variable tensors can be updated in each step and keep
  their values between consecutive steps" and "the value of a tensor can be updated by a
  specified operation; all other tensors are conceptually immutable" (the seeds' ch. 2); its
  result is the value the variable takes, ``value``.

Every output is a copy of an input: judged bit for bit.
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op


def nnef_external(case, call):
    """``in0 = external<type>(shape)`` is the line every document declares its inputs with; a
    graph's parameter cannot also be its result (the nnef parser: "defined both as parameter
    and as result"), so ``out0 = reshape(in0, shape)``, to its own shape, reads it out (copy
    would too, but tract 0.21.7 has no copy)."""
    return call(["in0"], {"shape": list(np.shape(case.inputs[0]))}, name="reshape")


def nnef_variable(case, call):
    """``out0 = variable<type>(shape, label = 'var0')``, the data in ``var0.dat``. A graph
    declares one parameter at least (NNEF 1.0 ch. 3 grammar, <identifier-list>): the same
    input is also an external the graph does not use."""
    shape = list(np.shape(case.inputs[0]))
    return call([], {"shape": shape, "label": "var0"}, inputs=[0], generic=case.input_dtypes[0],
                files={"var0": 0})


def nnef_update(case, call):
    """``in0 = variable<type>(shape, label = 'var0')`` (the data in ``var0.dat``), ``in1`` an
    external, ``out0 = update(in0, in1)``."""
    return call(["in0", "in1"], files={"var0": 0})


@op("nnef_external", version=1, feeding="aligned", nnef=nnef_external)
def oracle_nnef_external(x):
    """output = the data the graph is fed."""
    return (x,)


@op("nnef_variable", version=1, feeding="aligned", nnef=nnef_variable)
def oracle_nnef_variable(x):
    """output = the data in the variable's tensor file."""
    return (x,)


def numpy_update(variable, value):
    """The numpy backend: the new value, copied."""
    return np.copy(value)


@op("nnef_update", version=1, feeding="aligned", nnef=nnef_update, numpy=numpy_update)
def oracle_nnef_update(variable, value):
    """result = value, the variable's new value."""
    return (value,)
