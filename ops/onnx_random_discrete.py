"""ONNX Bernoulli, Multinomial and Dropout in training mode: random outputs of finite laws,
judged statistically (see :mod:`conform.ops.onnx_random` for the texts read and why no seed
determinism is judged).

* Bernoulli (opset 15+): 'an output of 1 is produced with probability p and an output of 0 is
  produced with probability (1-p)'; input values 'have to be in the range:[0, 1]'; the output
  type is ``dtype``, else the input's.
* Multinomial (opset 7+): input '[batch_size, class_size] ... the unnormalized log-probability
  of each corresponding outcome', output '[batch_size, sample_size] ... the outcome of the
  corresponding sample': a class index drawn with probability softmax(row) (exp of a
  log-probability, normalised), independently per sample.
* Dropout (opset 12+) with training_mode true: 'output = scale * data * mask, where scale =
  1. / (1. - ratio)'; ratio 'The ratio of random dropout, with value in [0, 1). If set to 0,
  the output would be a simple copy of the input ... if not specified it will default to
  0.5'. Read: each mask element is false (dropped) with probability ratio, independently; the
  output, given the mask, is determined.
"""
from __future__ import annotations

import math

import numpy as np

from conform.dtypes import FLOAT_FORMATS, np_dtype
from conform.model_formats import onnx_opset
from conform.op_registry import op
from conform.ops.distributions import Categorical, Given, Readings, groups_of_equal
from conform.ops.onnx_random import BINARY_SHAPES, PROBABILITIES, SEEDS
from conform.ops.onnx_shape import require_schema_type
from conform.ops.optional_inputs import by_name

#: Bernoulli's output types (T2) drawn through ``dtype``.
BERNOULLI_OUT = ("bool", "uint8", "int32", "int64", "float16", "float32", "float64")


# -- Bernoulli ------------------------------------------------------------------------------

#: Bernoulli's output types (T2) each with a label of its own, 'float32->T2' (its ``dtype``
#: attribute always T2): every integer type, bool and bfloat16 (T2 at Bernoulli-15, where T1
#: is no bfloat16), so that each is drawn and reported.
BERNOULLI_LABELS = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                    "uint64", "bfloat16")


def bernoulli_labels(spec) -> list[str]:
    """The spec's dtypes (T1; the output the input's type or one of :data:`BERNOULLI_OUT`)
    and 'float32->T2' for each of :data:`BERNOULLI_LABELS`."""
    return [*spec.dtypes, *(f"float32->{out}" for out in BERNOULLI_LABELS)]


def draw_bernoulli(draw, kit, spec, dtype):
    """Probabilities of ``dtype`` (T1), 65536 of them, the output type ``dtype`` attribute
    (absent at times: the input's; a label 'T1->T2': always T2) and a seed at times."""
    st = kit.st
    attrs = {}
    dtype, out = dtype.split("->")[0], dtype.split("->")[-1]
    if out != dtype:
        attrs["dtype"] = out
    elif draw(st.booleans()):
        out = attrs["dtype"] = draw(st.sampled_from(BERNOULLI_OUT))
    if draw(st.booleans()):
        attrs["seed"] = draw(st.sampled_from(SEEDS))
    attrs["levels"] = draw(st.lists(st.sampled_from(PROBABILITIES), min_size=1, max_size=3,
                                    unique=True))
    return kit.Signature((dtype,), (draw(st.sampled_from(BINARY_SHAPES)),), attrs, out)


def values_bernoulli(rng, inputs, attrs):
    """Each element one of the case's probability ``levels`` (at random)."""
    levels = np.array(attrs["levels"])
    p = levels[rng.integers(0, len(levels), inputs[0].shape)]
    return [p.astype(inputs[0].dtype)]


def onnx_bernoulli(case, graph):
    """One Bernoulli node (``dtype`` as its ONNX type; ``levels`` only drew the values)."""
    attrs = {k: v for k, v in case.attrs.items() if k == "seed"}
    if "dtype" in case.attrs:
        require_schema_type("Bernoulli", "T2", case.attrs["dtype"])
        attrs["dtype"] = graph.onnx_type(case.attrs["dtype"])
    graph.node("Bernoulli", graph.inputs, **attrs)


def bernoulli_law(inputs, attrs, outputs, *, out_dtypes, dtypes):
    """Per element 1 with probability p (its input element), else 0: the doc's reading. The
    schema's function body, ``Cast(Greater(RandomUniformLike(input), input))``, gives 1 where
    a uniform draw on [0, 1) exceeds p: with probability 1 - p (the second reading)."""
    p = inputs[0]
    return (Readings(((Categorical(groups_of_equal(p), "Bernoulli(p) per element (p the input)"),
                       "the doc's reading (1 with probability p)"),
                      (Categorical(groups_of_equal(1 - p), "Bernoulli(1 - p) per element"),
                       "the function body's reading (Greater(uniform, p): 1 with probability "
                       "1 - p)"))),)


def numpy_bernoulli(p, *, levels=(), seed=None, dtype=None):
    """The numpy backend: ``Generator.random() < p`` in the output type."""
    draws = np.random.default_rng(None if seed is None else int(seed)).random(p.shape)
    return (draws < p.astype(np.float64)).astype(np_dtype(dtype or str(p.dtype)))


@op("onnx_bernoulli", version=1, draw=draw_bernoulli, values=values_bernoulli,
    dtype_labels=bernoulli_labels,
    onnx=onnx_bernoulli, distribution=bernoulli_law, numpy=numpy_bernoulli)
def oracle_bernoulli(p, *, levels=(), seed=None, dtype=None, reading=0):
    """The input's shape; its values are the law's (:func:`bernoulli_law`): the mean shown, p
    (``reading`` 1, the function body's: 1 - p)."""
    return ((1.0 - p if reading else p).astype(np.float64),)


# -- Multinomial ----------------------------------------------------------------------------

#: Offsets added to every logit of a row: softmax is unchanged, an exp of the raw logits in the
#: input type overflows (float16 past 11.09, float32 past 88.7).
OFFSETS = (0.0, 0.0, 12.0, 100.0)


def multinomial_labels(spec) -> list[str]:
    """The spec's dtypes (the output int32 or int64, drawn) and 'float32->int32' and
    'float32->int64' (that output type), so that each output type is drawn and reported."""
    return [*spec.dtypes, "float32->int32", "float32->int64"]


def draw_multinomial(draw, kit, spec, dtype):
    """A [batch, classes] input of ``dtype``, 16384 samples per row over the batch, the output
    type int32 (absent at times: the default) or int64 (a label 'T1->T2': T2), a seed at
    times."""
    st = kit.st
    dtype, given = dtype.split("->")[0], dtype.split("->")[1:]
    batch = draw(st.sampled_from((1, 2, 3)))
    attrs = {"sample_size": 16384 // batch + draw(st.integers(0, 3)),
             "offset": draw(st.sampled_from(OFFSETS)), "impossible": draw(st.booleans())}
    out = given[0] if given else draw(st.sampled_from(("int32", "int64")))
    if out == "int64" or draw(st.booleans()):
        attrs["dtype"] = out
    if draw(st.booleans()):
        attrs["seed"] = draw(st.sampled_from(SEEDS))
    shape = (batch, draw(st.sampled_from((2, 3, 5, 8))))
    return kit.Signature((dtype,), (shape,), attrs, out)


def values_multinomial(rng, inputs, attrs):
    """Logits in [-2, 2] plus the case's ``offset``; with ``impossible``, one class of each
    row at -inf (log of probability 0: never drawn)."""
    x = inputs[0]
    logits = rng.uniform(-2, 2, x.shape) + attrs["offset"]
    if attrs["impossible"]:
        logits[np.arange(x.shape[0]), rng.integers(0, x.shape[1], x.shape[0])] = -np.inf
    return [logits.astype(x.dtype)]


def onnx_multinomial(case, graph):
    """One Multinomial node (``sample_size``, ``seed``, ``dtype`` as its ONNX type)."""
    attrs = {k: case.attrs[k] for k in ("sample_size", "seed") if k in case.attrs}
    if "dtype" in case.attrs:
        attrs["dtype"] = graph.onnx_type(case.attrs["dtype"])
    graph.node("Multinomial", graph.inputs, **attrs)


def softmax_rows(logits: np.ndarray) -> np.ndarray:
    """softmax over the last axis in float64 (the largest logit subtracted first: exact math,
    no overflow); -inf logits give probability 0."""
    shifted = logits - np.max(logits, axis=-1, keepdims=True)
    weights = np.exp(shifted)
    return weights / np.sum(weights, axis=-1, keepdims=True)


def multinomial_law(inputs, attrs, outputs, *, out_dtypes, dtypes):
    """Row r's samples: class c with probability softmax(logits[r])[c]."""
    probabilities = softmax_rows(inputs[0])
    size = attrs["sample_size"]
    classes = np.arange(probabilities.shape[1])
    groups = tuple((np.arange(r * size, (r + 1) * size), classes, row)
                   for r, row in enumerate(probabilities))
    return (Categorical(groups, "categorical(softmax(row)) per row"),)


def numpy_multinomial(logits, *, sample_size, offset=0.0, impossible=False, seed=None,
                      dtype="int32"):
    """The numpy backend: ``Generator.choice`` per row with softmax probabilities (in float64)."""
    rng = np.random.default_rng(None if seed is None else int(seed))
    chances = softmax_rows(logits.astype(np.float64))
    rows = [rng.choice(len(p), sample_size, p=p) for p in chances]
    return np.array(rows, np_dtype(dtype)).reshape(len(chances), sample_size)


@op("onnx_multinomial", version=1, draw=draw_multinomial, values=values_multinomial,
    dtype_labels=multinomial_labels,
    onnx=onnx_multinomial, distribution=multinomial_law, numpy=numpy_multinomial,
    feeding=lambda inputs, attrs, index: [inputs[0][index[0]].tolist()])
def oracle_multinomial(logits, *, sample_size, offset=0.0, impossible=False, seed=None,
                       dtype="int32"):
    """[batch, sample_size] class indices; the values are the law's (:func:`multinomial_law`):
    the mean class index shown."""
    mean = softmax_rows(logits) @ np.arange(logits.shape[1])
    return (np.repeat(mean[:, None], sample_size, axis=1),)


# -- Dropout, training mode -----------------------------------------------------------------

INPUTS = ("data", "ratio", "training_mode")
#: Ratios in [0, 1): 0 (a copy), those whose scale 1 / (1 - ratio) is exact (1/2, 3/4, 7/8) and
#: two whose scale is rounded (1/4: 4/3, 1/8: 8/7).
RATIOS = (0.0, 0.5, 0.75, 0.875, 0.25, 0.125)
#: The ratio's type T1: float16, float and double (Dropout-12 and 13); Dropout-22's T1 adds
#: bfloat16 and the four float 8 types (each ratio of :data:`RATIOS` is exact in all of them)
RATIO_TYPES = ("float16", "float32", "float64")
RATIO_TYPES_SINCE_22 = RATIO_TYPES + ("bfloat16", "float8_e4m3fn", "float8_e4m3fnuz",
                                      "float8_e5m2", "float8_e5m2fnuz")


def draw_dropout_training(draw, kit, spec, dtype):
    """data of ``dtype`` (65536 elements), ratio (absent at times: 0.5) of a type of T1 at the
    run's opset (:data:`RATIO_TYPES`), a training_mode of true, a seed at times."""
    st = kit.st
    attrs = {"ratio_value": draw(st.sampled_from(RATIOS))}
    if draw(st.booleans()):
        attrs["seed"] = draw(st.integers(0, 2**31 - 1))
    dtypes, shapes = [dtype], [draw(st.sampled_from(BINARY_SHAPES))]
    if draw(st.integers(0, 3)):
        dtypes.append(draw(st.sampled_from(
            RATIO_TYPES_SINCE_22 if onnx_opset() >= 22 else RATIO_TYPES)))
        shapes.append(())
    else:
        attrs = kit.with_absent(attrs, ["ratio"])
        attrs["ratio_value"] = 0.5
    return kit.Signature((*dtypes, "bool"), (*shapes, ()), attrs, dtype)


def values_dropout_training(rng, inputs, attrs):
    """data in [-10, 10], ratio the case's, training_mode true."""
    given = by_name(INPUTS, inputs, attrs.get("absent_inputs", ()))
    given["data"] = rng.uniform(-10, 10, given["data"].shape).astype(given["data"].dtype)
    if "ratio" in given:
        given["ratio"] = np.asarray(attrs["ratio_value"], given["ratio"].dtype)
    given["training_mode"] = np.asarray(True)
    return [given[name] for name in INPUTS if name in given]


def onnx_dropout_training(case, graph):
    """One Dropout node, ratio "" where absent; both outputs requested."""
    operands = list(graph.inputs)
    if "ratio" in case.attrs.get("absent_inputs", ()):
        operands.insert(1, "")
    attrs = {"seed": case.attrs["seed"]} if "seed" in case.attrs else {}
    graph.node("Dropout", operands, **attrs)


def _scale_bound(out_dtype: str, ratio_dtype: str | None, ratio: float) -> float:
    """ULPs of T by which ``scale * data`` may miss the exact ``data / (1 - ratio)``: 1/2 where
    the scale is exact; else the scale's roundings (1 - ratio and the division in the ratio's
    type T1, or finer; its conversion to T) and the product's in T:
    ``((1 + u1)**2 (1 + u)**2 - 1) / u`` ULPs (a relative error r is below r / u ULPs of T)."""
    if ratio in (0.0, 0.5, 0.75, 0.875):
        return 0.5
    u = FLOAT_FORMATS[out_dtype].unit_roundoff
    u1 = FLOAT_FORMATS[ratio_dtype or "float32"].unit_roundoff
    return math.expm1(2 * math.log1p(u1) + 2 * math.log1p(u)) / u   # (no cancellation)


def dropout_law(inputs, attrs, outputs, *, out_dtypes, dtypes):
    """mask: false with probability ratio per element; output: data * mask / (1 - ratio)
    given the backend's mask."""
    given = by_name(INPUTS, inputs, attrs.get("absent_inputs", ()))
    ratio = float(given["ratio"]) if "ratio" in given else 0.5
    mask = np.asarray(outputs[1]).astype(bool) if len(outputs) > 1 else None
    ratio_dtype = dtypes[1] if "ratio" in given else None
    bound = _scale_bound(out_dtypes[0], ratio_dtype, ratio)
    model = {"ulp": bound, "signed_zero": "any",
             "why": "the text's scale * data * mask given the mask: the scale's and the "
                    "product's roundings; a dropped element is 0 (of either sign)"}
    expected = np.where(mask, given["data"] / (1.0 - ratio), 0.0) if mask is not None \
        and mask.shape == given["data"].shape else np.zeros(given["data"].shape)
    groups = ((np.arange(given["data"].size), np.array([False, True]),
               np.array([ratio, 1.0 - ratio])),)
    return (Given(expected, model, "scale * data * mask"),
            Categorical(groups, f"mask element false with probability ratio={ratio:g}"))


def numpy_dropout_training(data, *rest, ratio_value=0.5, seed=None, absent_inputs=()):
    """The numpy backend: a mask of ``Generator.random() >= ratio``, the output
    ``data * mask * (1 / (1 - ratio))`` in the data's type."""
    ratio = float(rest[0]) if "ratio" not in absent_inputs else 0.5
    mask = np.random.default_rng(seed).random(data.shape) >= ratio
    scale = np.asarray(1.0 / (1.0 - ratio), data.dtype)
    return (data * scale * mask.astype(data.dtype)).astype(data.dtype), mask


@op("onnx_dropout_training", version=1, draw=draw_dropout_training,
    draw_honours=frozenset({"optional", "scalar"}), values=values_dropout_training,
    onnx=onnx_dropout_training, distribution=dropout_law, numpy=numpy_dropout_training)
def oracle_dropout_training(data, *rest, ratio_value=0.5, seed=None, absent_inputs=()):
    """The outputs' shapes; their values are the law's (:func:`dropout_law`): data and the
    keep probability shown."""
    keep = 1.0 - ratio_value
    return data.copy(), np.full(data.shape, keep >= 0.5)
