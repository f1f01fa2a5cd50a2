"""Sequence-typed values (ONNX ``seq(tensor(T))``) as conform's tensors.

conform's cases and answers are tensors, so a sequence crosses as tensors:

* a sequence *input* is the case's trailing inputs, one tensor per element (a variadic input,
  the last of the spec's signature); the op's ONNX lowering builds the sequence from them
  inside the graph with SequenceConstruct (:func:`onnx_sequence`);
* a sequence *output* is two outputs of the spec, the first declared ``sequence: true``: the
  elements raveled (C order) and concatenated in sequence order, and their shapes, an int64
  array ``[length, rank]`` (:func:`pack`). The ONNX model has one graph output of sequence type
  for the pair; a backend that gets the sequence back as a list of arrays (onnxruntime's
  ``session.run`` does) packs it with :func:`pack` into the two. A wrong element count, a wrong
  element shape and a wrong value are each visible: in the shapes, or in the values.

Self-contained (NumPy only): repro scripts for onnxruntime include :func:`pack`'s source.
"""
from __future__ import annotations

import numpy as np


def pack(elements, dtype=None) -> tuple[np.ndarray, np.ndarray]:
    """``(values, shapes)`` of a sequence of arrays: the raveled elements concatenated, and the
    int64 ``[length, rank]`` array of their shapes (an empty sequence: ``[0, 0]``).

    >>> values, shapes = pack([np.zeros((2, 1)), np.ones((3, 1))])
    >>> values.tolist(), shapes.tolist()
    ([0.0, 0.0, 1.0, 1.0, 1.0], [[2, 1], [3, 1]])
    """
    elements = [np.asarray(e) for e in elements]
    if dtype is None:
        dtype = elements[0].dtype if elements else np.float64
    values = np.concatenate([e.ravel() for e in elements]).astype(dtype, copy=False) \
        if elements else np.zeros(0, dtype)
    rank = elements[0].ndim if elements else 0
    shapes = np.array([e.shape for e in elements], np.int64).reshape(len(elements), rank)
    return values, shapes


def unpack(values, shapes) -> list[np.ndarray]:
    """The sequence's elements from :func:`pack`'s pair (its inverse)."""
    sizes = [int(np.prod(shape, dtype=np.int64)) for shape in shapes]
    ends = np.cumsum([0] + sizes)
    return [np.asarray(values[a:b]).reshape(tuple(shape))
            for a, b, shape in zip(ends, ends[1:], shapes)]


def packed_outputs(outputs, dtypes=None) -> list:
    """A backend's outputs with every sequence (a list or tuple of arrays) replaced by its
    :func:`pack` pair: the outputs in the order the spec declares them. ``dtypes`` (the spec's
    output dtype names, in that order) gives the element type of an empty sequence, which
    comes back as an empty list that carries none (``string``: NumPy's object type)."""
    flat = []
    for output in outputs:
        if isinstance(output, (list, tuple)):
            name = dtypes[len(flat)] if dtypes and not output else None
            empty_type = None if name is None else np.dtype(object if name == "string" else name)
            flat.extend(pack(output, empty_type))
        else:
            flat.append(output)
    return flat


def onnx_sequence(graph, elements: list, name: str = "sequence") -> str:
    """Add a SequenceConstruct of the graph values ``elements`` to ``graph`` (an op lowering's
    :class:`~conform.harness.backends.onnx_models.OnnxGraph`); returns the sequence's name."""
    return graph.node("SequenceConstruct", list(elements), name)
