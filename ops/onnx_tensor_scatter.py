"""ONNX TensorScatter (opset 24), written from the operator's text
(``onnx.defs.get_schema("TensorScatter", 24).doc``, whose pseudocode defines it): a copy of
``past_cache`` with ``update`` written along ``axis`` (not 0, default -2) starting at
``write_indices[b]`` for batch row ``b`` (0 where absent), the position taken modulo
``max_sequence_length`` in ``circular`` mode. Every output element is a copy: judged exactly.
"""
from __future__ import annotations

import numpy as np

from conform.op_registry import op
from conform.ops.indexing import traced_feeding
from conform.ops.optional_inputs import ABSENT, by_name, onnx_operands

NAMES = ("past_cache", "update", "write_indices")


def _targets(given: dict, attrs: dict) -> tuple[np.ndarray, int]:
    """Per element of ``update``, the position along the axis it is written to, and the axis."""
    update = given["update"]
    axis = attrs.get("axis", -2) % update.ndim
    length, steps = given["past_cache"].shape[axis], update.shape[axis]
    start = given.get("write_indices", np.zeros(update.shape[0], np.int64)).astype(np.int64)
    at = start[:, None] + np.arange(steps)[None, :]            # (batch, sequence_length)
    if attrs.get("mode", "linear") == "circular":
        at = at % length
    shape = [update.shape[0]] + [1] * (update.ndim - 1)
    shape[axis] = steps
    return np.broadcast_to(at.reshape(shape), update.shape), axis


def tensor_scatter(given: dict, attrs: dict) -> np.ndarray:
    """The text's pseudocode, vectorised: present[..., write + s, ...] = update[..., s, ...]."""
    present = given["past_cache"].copy()
    at, axis = _targets(given, attrs)
    np.put_along_axis(present, at, given["update"], axis)
    return present


def draw_tensor_scatter(draw, kit, spec, dtype):
    """Rank 2-4 (sides up to 4), the axis any but 0 (absent: -2, where rank >= 3; negative
    now and then), max_sequence_length 1-6 and sequence_length up to it, mode absent, linear
    or circular, write_indices present or absent (values from :func:`values_tensor_scatter`)."""
    st = kit.st
    rank = draw(st.integers(2, 4))
    shape = [draw(st.integers(1, 4)) for _ in range(rank)]
    attrs = {}
    if rank >= 3 and draw(st.booleans()):
        axis = rank - 2
    else:
        axis = draw(st.integers(1, rank - 1))
        attrs["axis"] = axis - rank if draw(st.booleans()) else axis
    shape[axis] = draw(st.integers(1, 6))
    update = list(shape)
    update[axis] = draw(st.integers(1, shape[axis]))
    mode = draw(st.sampled_from([None, "linear", "circular"]))
    if mode:
        attrs["mode"] = mode
    dtypes, shapes = [dtype, dtype], [tuple(shape), tuple(update)]
    absent = [] if draw(st.booleans()) else ["write_indices"]
    if not absent:
        dtypes.append("int64")
        shapes.append((shape[0],))
    return kit.Signature(tuple(dtypes), tuple(shapes), kit.with_absent(attrs, absent), dtype)


def values_tensor_scatter(rng, inputs, attrs):
    """write_indices in [0, max_sequence_length - sequence_length] (linear: 'requires
    write_indices + sequence_length <= max_sequence_length'), in circular mode up to twice
    max_sequence_length (wrapping)."""
    given = by_name(NAMES, inputs, attrs.get(ABSENT, ()))
    if "write_indices" in given:
        axis = attrs.get("axis", -2) % given["update"].ndim
        length, steps = given["past_cache"].shape[axis], given["update"].shape[axis]
        top = 2 * length if attrs.get("mode") == "circular" else length - steps
        given["write_indices"] = rng.integers(0, top + 1, given["write_indices"].shape,
                                              dtype=np.int64)
    return [given[name] for name in NAMES if name in given]


def onnx_tensor_scatter(case, graph):
    """One TensorScatter node with the case's mode and axis."""
    slots = list(graph.inputs) + [None] * (3 - len(graph.inputs))
    graph.node(graph.op_type, onnx_operands(slots),
               **{k: v for k, v in case.attrs.items() if k != ABSENT})


def numpy_tensor_scatter(*inputs, absent_inputs=(), **attrs):
    """The numpy backend: ``np.put_along_axis`` of the update into a copy of the cache, at
    positions ``write + arange(sequence_length)`` (modulo the cache length in circular mode)."""
    given = by_name(NAMES, inputs, absent_inputs)
    at, axis = _targets(given, attrs)
    present = np.array(given["past_cache"], copy=True)
    np.put_along_axis(present, at, given["update"], axis)
    return (present,)


@op("onnx_tensor_scatter", version=1, draw=draw_tensor_scatter,
    draw_honours=frozenset({"optional"}), values=values_tensor_scatter,
    onnx=onnx_tensor_scatter, numpy=numpy_tensor_scatter,
    feeding=traced_feeding("onnx_tensor_scatter", (0, 1)))
def oracle_tensor_scatter(*inputs, absent_inputs=(), **attrs):
    """TensorScatter-24's pseudocode (see :func:`tensor_scatter`)."""
    return (tensor_scatter(by_name(NAMES, inputs, absent_inputs), attrs),)
