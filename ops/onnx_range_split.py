"""ONNX Range (opset 11) and Split (opset 18): a sequence built from three scalars, and a tensor
cut into several outputs along an axis. Both are judged exactly.

Range is judged against the operator text's own formulas, evaluated in the input type T:
``number_of_elements = max(ceil((limit - start) / delta), 0)`` and ``output[i] = start + (i *
delta)`` (each operation rounded to T for float types). Its inputs set the output's length, so
the op fills them itself (``fill``): a bounded count, integer extremes, steps that do not divide
the span, exact boundaries, and spans on the wrong side of start (an empty output)."""
from __future__ import annotations

import numpy as np

from conform.op_registry import op
from conform.dtypes import np_dtype

MAX_RANGE = 256   # the longest sequence a case asks for (CONFORM_MAX_ARRAY_SIZE's default)


def stash(dtype: np.dtype) -> np.dtype:
    """The type Range evaluates its formulas in: T itself, but float32 for float16 and
    bfloat16 (Range-27: 'Setting stash_type to 1 (float) causes start, limit, and delta to be
    cast to 32-bit float before the loop, with the output cast back', the default)."""
    return np.dtype(np.float32) if dtype.itemsize == 2 and dtype.kind not in "iu" else dtype


# --- Range ---------------------------------------------------------------------------------------

def range_count(start, limit, delta, dtype: np.dtype) -> int:
    """``max(ceil((limit - start) / delta), 0)``: exact for integers, each operation rounded to
    ``dtype`` for floats (the text names no other precision); -1 where it is not a finite
    number (a zero or non-finite step)."""
    if dtype.kind in "iu":
        span, step = int(limit) - int(start), int(delta)
        return -1 if step == 0 else max(-(-span // step), 0)
    kind = dtype.type
    with np.errstate(all="ignore"):
        quotient = np.ceil((kind(limit) - kind(start)) / kind(delta))
    return int(max(quotient, 0)) if np.isfinite(quotient) else -1


def range_values(start, delta, count: int, dtype: np.dtype) -> np.ndarray:
    """``start + (i * delta)`` for i < count, in ``dtype`` (exact for integers)."""
    if dtype.kind in "iu":
        return int(start) + np.arange(count, dtype=np.int64) * int(delta)
    kind = dtype.type
    with np.errstate(all="ignore"):
        return kind(start) + np.arange(count).astype(dtype) * kind(delta)


def _signed(rng, magnitude):
    return magnitude if rng.integers(0, 2) else -magnitude


def _integer_triple(rng, dtype, plan):
    info = np.iinfo(dtype)
    delta = int(_signed(rng, rng.integers(1, 7)))
    if plan == "wide":   # at the type's ends, stepping inwards or up to the end
        start = int(info.max - rng.integers(0, 200)) if delta > 0 or rng.integers(0, 2) \
            else int(info.min + rng.integers(0, 200))
        start = min(start, int(info.max)) if delta < 0 else start
        end = info.max if delta > 0 else info.min
        limit = int(np.clip(start + int(rng.integers(-3, 41)) * delta, info.min, info.max))
        return start, (end if rng.integers(0, 4) == 0 else limit), delta
    start = int(rng.integers(-50, 51))
    if plan in ("edge", "special"):   # empty, a single element, an exact end, a long step
        choice = int(rng.integers(0, 4))
        limit = [start, start - delta, start + 40 * delta, start + delta * 100][choice]
        return start, limit, (delta * 1000 if choice == 3 else delta)
    offset = int(rng.integers(0, abs(delta))) * (1 if delta > 0 else -1)
    return start, start + int(rng.integers(-3, 41)) * delta + offset, delta


def _float_triple(rng, dtype, plan):
    kind = dtype.type
    delta = _signed(rng, rng.uniform(0.05, 5))
    steps = rng.integers(-3, 41) + rng.uniform(0, 1)
    if plan == "wide":   # large starts, steps of a few ULPs of start: start + i * delta rounds
        start = kind(_signed(rng, 10.0 ** rng.uniform(3, {2: 4.5, 4: 9}.get(dtype.itemsize, 17))))
        delta = _signed(rng, float(np.spacing(abs(start))) * 10.0 ** rng.uniform(-0.5, 2))
    elif plan in ("edge", "special"):   # exact boundaries, decimal steps, -0
        start = [0.0, -0.0, 0.5, 1.0, -3.25][rng.integers(0, 5)]
        delta = _signed(rng, [0.25, 0.1, 0.3, 1.0, 1 / 3][rng.integers(0, 5)])
        steps = int(rng.integers(-2, 41))
    else:
        start = rng.uniform(-20, 20)
    start, delta = kind(start), kind(delta)
    with np.errstate(all="ignore"):
        limit = kind(float(start) + float(steps) * float(delta))
    return start, limit, delta


def fill_range(rng, signature, plan):
    """start, limit and delta as 0-d arrays of T: a non-zero step and a count of at most
    MAX_RANGE elements by the text's formula (a draw giving more is drawn again)."""
    dtype = np_dtype(signature.input_dtypes[0])
    triple = _integer_triple if dtype.kind in "iu" else _float_triple
    for _ in range(50):
        start, limit, delta = triple(rng, dtype, plan)
        if 0 <= range_count(start, limit, delta, stash(dtype)) <= MAX_RANGE:
            return [np.asarray(v, dtype) for v in (start, limit, delta)]
    return [np.asarray(v, dtype) for v in (0, 3, 1)]


def draw_range(draw, kit, spec, dtype):
    """Three 0-d inputs of T (their values come from ``fill_range``)."""
    return kit.Signature((dtype,) * 3, ((),) * 3, {}, dtype)


def feed_range(inputs, attrs, index):
    """output[i] is start + i * delta (limit sets only the length)."""
    start, limit, delta = inputs
    return [np.ravel(start), None, np.ravel(delta)]


def numpy_range(start, limit, delta):
    """The numpy backend: ``np.arange(start, limit, delta)`` in the inputs' type (float16 and
    bfloat16: in float32, the stash type, then cast back)."""
    working = stash(start.dtype)
    return np.arange(*(working.type(v[()]) for v in (start, limit, delta)),
                     dtype=working).astype(start.dtype)


@op("onnx_range", numpy=numpy_range, version=1, draw=draw_range, fill=fill_range, feeding=feed_range,
    value_dependent_shape=True)
def oracle_onnx_range(start, limit, delta, *, dtypes=()):
    """ONNX Range: max(ceil((limit - start) / delta), 0) elements, output[i] = start + i * delta,
    evaluated in the input type (float16 and bfloat16: in float32, each element then rounded
    to T: Range-27's default stash_type)."""
    dtype = np.dtype(np_dtype(dtypes[0])) if dtypes else start.dtype
    working, dtype = stash(dtype), dtype
    count = range_count(start[()], limit[()], delta[()], working)
    if count < 0:
        raise ValueError(f"Range of start={start}, limit={limit}, delta={delta} has no finite length")
    values = range_values(start[()], delta[()], count, working)
    return (values.astype(dtype).astype(np.int64 if dtype.kind in "iu" else np.float64),)


# --- Split (opset 18) -------------------------------------------------------------------------------

SPLIT_OUTPUTS = 3   # the spec's outputs: the format fixes an op's output count per spec


def chunk_sizes(size: int, attrs) -> list[int]:
    """The sizes along the axis of the outputs: the ``split`` input's, or with ``num_outputs``
    n equal chunks of ceil(size / n), 'the last chunk ... smaller' (size less the others)."""
    if attrs["split"] is not None:
        return list(attrs["split"])
    count = attrs["num_outputs"]
    chunk = -(-size // count)
    return [chunk] * (count - 1) + [size - chunk * (count - 1)]


def draw_split(draw, kit, spec, dtype):
    """A shape and an axis, then either the split sizes (non-negative, summing to the axis'
    size; zeros included) or num_outputs, on an axis whose size the text's rule splits (the
    last chunk not negative: a size of 1 in 3 parts is not drawn, as the text's rule gives it
    no meaning)."""
    st = kit.st
    min_side = draw(st.sampled_from([1, 1, 1, 0]))
    low, high = kit.ranks(spec, default_min=1)
    shape = list(draw(kit.shape(min_rank=max(low, 1), max_rank=high, min_side=min_side,
                                max_side=9)))
    attrs = kit.attributes(draw, spec, {spec.inputs[0]: len(shape)})
    axis = attrs["axis"]
    if draw(st.booleans()):
        cuts = sorted(draw(st.lists(st.integers(0, shape[axis]), min_size=SPLIT_OUTPUTS - 1,
                                    max_size=SPLIT_OUTPUTS - 1)))
        edges = [0, *cuts, shape[axis]]
        attrs.update(split=[b - a for a, b in zip(edges, edges[1:])], num_outputs=None)
    else:
        attrs.update(split=None, num_outputs=SPLIT_OUTPUTS)
        if chunk_sizes(shape[axis], attrs)[-1] < 0:
            shape[axis] = SPLIT_OUTPUTS * draw(st.integers(0, 2)) + draw(st.sampled_from([0, 2]))
    return kit.Signature((dtype,), (tuple(shape),), attrs, dtype)


def draw_split_opset13(draw, kit, spec, dtype):
    """:func:`draw_split` for Split-13, which has no num_outputs: without the split input the
    tensor 'is split to equal sized parts' (as many as the node's outputs), so the axis' size
    is drawn a multiple of them (an uneven split is Split-18's rule, not Split-13's)."""
    drawn = draw_split(draw, kit, spec, dtype)
    if drawn.attrs["split"] is not None:
        return drawn
    shape, axis = list(drawn.shapes[0]), drawn.attrs["axis"]
    shape[axis] -= shape[axis] % SPLIT_OUTPUTS
    return drawn._replace(shapes=(tuple(shape),))


def onnx_split(case, graph):
    """One Split node: the split input where the case has sizes, else num_outputs (Split-18)
    or, for Split-13, neither (equal parts, one per output)."""
    attrs = case.attrs
    if attrs["split"] is not None:
        graph.node(graph.op_type, [graph.inputs[0], graph.const("split", attrs["split"])],
                   axis=attrs["axis"])
    elif case.op == "onnx_split_opset13":
        graph.node(graph.op_type, [graph.inputs[0]], axis=attrs["axis"])
    else:
        graph.node(graph.op_type, [graph.inputs[0]], axis=attrs["axis"],
                   num_outputs=attrs["num_outputs"])


def from_onnx_split(inputs, attrs, opset, *, outputs=SPLIT_OUTPUTS):
    """A Split node of ``outputs`` outputs as a case: its split sizes (the input, or before
    opset 13 the attribute), else num_outputs' chunks (Split-18) or, before 18, ``outputs``
    'equal sized parts'. A node of fewer than three outputs is the case whose further parts
    have size 0 ("Values should be >= 0"), unrequested: the text gives its first parts the
    same values. A node of more outputs than three raises."""
    if outputs > SPLIT_OUTPUTS:
        raise ValueError(f"the node splits into {outputs} parts; the spec into three")
    given = inputs[1] if len(inputs) > 1 and inputs[1] is not None else attrs.get("split")
    split = None if given is None else [int(v) for v in np.asarray(given).ravel()]
    if split is not None and len(split) != outputs:
        raise ValueError(f"the node has {outputs} outputs and {len(split)} split sizes")
    count = None if split is not None else attrs.get("num_outputs") or outputs
    if split is None and count != SPLIT_OUTPUTS:   # num_outputs' chunks, or equal parts
        size = np.shape(inputs[0])[attrs["axis"]]
        if opset < 18 and size % count:
            raise ValueError(f"Split-{opset} splits {size} into {count} 'equal sized parts'")
        split = chunk_sizes(size, {"split": None, "num_outputs": count})
    if split is not None:
        split = split + [0] * (SPLIT_OUTPUTS - len(split))
        count = None
    return inputs[:1], {"axis": attrs["axis"], "split": split, "num_outputs": count}


def numpy_split(input, *, axis, split, num_outputs):  # noqa: A002 - ONNX's name
    """The numpy backend: ``np.split`` at the part boundaries the text's sizes give."""
    axis %= input.ndim
    sizes = chunk_sizes(input.shape[axis], {"split": split, "num_outputs": num_outputs})
    return tuple(np.split(input, np.cumsum(sizes)[:-1], axis=axis))


_SPLIT = dict(numpy=numpy_split, version=1, draw_honours=frozenset({"attrs", "min_rank", "max_rank"}),
              feeding="moved", onnx=onnx_split, from_onnx=from_onnx_split)


@op("onnx_split", draw=draw_split, **_SPLIT)
def oracle_onnx_split(input, *, axis, split, num_outputs):  # noqa: A002 - ONNX's name
    """ONNX Split: consecutive parts of ``input`` along ``axis``, of the sizes ``chunk_sizes``
    gives."""
    axis %= input.ndim
    sizes = chunk_sizes(input.shape[axis], {"split": split, "num_outputs": num_outputs})
    return tuple(np.split(input, np.cumsum(sizes)[:-1], axis=axis))


@op("onnx_split_opset13", draw=draw_split_opset13, **_SPLIT)
def oracle_onnx_split_opset13(input, *, axis, split, num_outputs):  # noqa: A002
    """ONNX Split-13: the split input's sizes, or equal parts (one per output)."""
    return oracle_onnx_split(input, axis=axis, split=split, num_outputs=num_outputs)
