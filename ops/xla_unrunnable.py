"""XLA ops that jax cannot express on CPU (or whose result carries nothing to judge): Infeed,
Outfeed, Send, Recv, CustomCall, AfterAll and SetDimensionSize (operation semantics,
seeds/004_c11ff90b720ca9d5.txt, each op's own section; Outfeed is not in that text).

Each has a spec whose XLA binding is ``{unsupported: REASON}``: every case is reported
``unsupported`` with the reason on jax (``conform list --backend jax`` says so), and a backend
that lowers XLA another way can run the cases, which the oracles below answer from the text:

* Infeed and Recv return the data the host enqueued (the matching Send sent): the case's input;
* Outfeed and Send hand their operand to the host (the matching Recv): the case's output is it;
* CustomCall calls the user's function: here the target ``conform.copy``, which copies its
  operand (the text: "the user-provided function must not have side effects and its execution
  must be idempotent");
* AfterAll joins tokens: a token carries no value, so its case has no input and an empty
  output;
* SetDimensionSize(operand, size, dimension) leaves the operand's values and static bound and
  sets the dimension's dynamic size: the case's output is the operand's first ``size`` entries
  along ``dimension`` (what the later ops read; the text's reduce_sum example ignores the rest).
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op


def _shape(draw, kit):
    return tuple(draw(kit.shape(min_rank=0, max_rank=3, min_side=0, max_side=5)))


def draw_one_array(draw, kit, spec, dtype):
    """One array of any shape (rank 0 to 3, empty ones included), no attribute."""
    return kit.Signature((dtype,), (_shape(draw, kit),), {}, dtype)


#: The ops whose result is their one input moved unchanged, with the text's reading of each.
MOVED = {
    "infeed": "Infeed(shape): the data item the host put in the device's infeed queue.",
    "outfeed": "Outfeed(operand): what the host reads from the outfeed queue, the operand.",
    "send": "Send(operand, channel_handle): what the Recv of the same channel returns, the operand.",
    "recv": "Recv(shape, channel_handle): the data the Send of the same channel sent.",
    "custom_call": "CustomCall(\"conform.copy\", {operand}, shape): the target's result, a copy.",
}


def _moved(name: str, doc: str):
    def oracle(data):
        return (np.array(data, copy=True),)
    oracle.__name__, oracle.__doc__ = f"oracle_{name}", doc
    return op(name, version=1, draw=draw_one_array, feeding="moved")(oracle)


for _name, _doc in MOVED.items():
    globals()[f"oracle_{_name}"] = _moved(_name, _doc)


def draw_after_all(draw, kit, spec, dtype):
    """No array input: the number of tokens joined (1 to 4) is an attribute."""
    return kit.Signature((), (), {"tokens": draw(kit.st.integers(1, 4))}, dtype)


@op("after_all", version=1, draw=draw_after_all, feeding=lambda inputs, attrs, index: [])
def oracle_after_all(*, tokens):
    """AfterAll(tokens...): a token, which carries no value (an empty array stands for it)."""
    return (np.zeros((0,), bool),)


def draw_set_dimension_size(draw, kit, spec, dtype):
    """An array of rank 1 to 3, a dimension of it and a size in [0, its static size]."""
    shape = tuple(draw(kit.shape(min_rank=1, max_rank=3, min_side=0, max_side=6)))
    dimension = draw(kit.st.integers(0, len(shape) - 1))
    size = draw(kit.st.integers(0, shape[dimension]))
    return kit.Signature((dtype,), (shape,), {"size": size, "dimension": dimension}, dtype)


@op("set_dimension_size", version=1, draw=draw_set_dimension_size, feeding="moved")
def oracle_set_dimension_size(operand, *, size, dimension):
    """SetDimensionSize(operand, size, dimension): the operand with the dimension's dynamic size
    ``size``: its first ``size`` entries along ``dimension``."""
    return (np.take(operand, np.arange(size), axis=dimension),)
