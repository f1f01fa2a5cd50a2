"""ONNX's random operators, judged statistically (the ``statistical`` error model,
:mod:`conform.ops.distributions`), written from the operator texts
(``onnx.defs.get_schema(name).doc`` at opset 22, the same text since RandomUniform-1,
Bernoulli-15, Multinomial-7, Dropout-12 for what is judged here):

* RandomUniform(Like): 'random values drawn from a uniform distribution ... the range by
  `low` and `high`' (defaults 0 and 1); the shape from ``shape`` (or the input's), the type from
  ``dtype`` (default float; Like: the input's type).
* RandomNormal(Like): 'drawn from a normal distribution ... specified by `mean` and `scale`'
  ('The standard deviation'; defaults 0 and 1).
* Bernoulli: 'an output of 1 is produced with probability p and an output of 0 is produced
  with probability (1-p)', p the input element; the type from ``dtype``, else the input's.
* Multinomial: input '[batch_size, class_size] ... the unnormalized log-probability of each
  corresponding outcome': each of the ``sample_size`` outputs of a row is a class index drawn
  with probability softmax(row); ``dtype`` int32 (default) or int64.
* Dropout with training_mode true: 'output = scale * data * mask, where scale = 1. / (1. -
  ratio)', ratio 'The ratio of random dropout' (default 0.5; 'If set to 0, the output would be
  a simple copy of the input'): each mask element false (dropped) with probability ratio, and
  the output given the mask determined.

None of these texts promises the same values for the same ``seed`` (Bernoulli: 'may not
produce the same values in different implementations (even if a seed is specified)'; the
others: 'Seed to the random generator, if not specified we will auto generate one'), so no
determinism is judged; a seed is drawn in some cases and must not change the law.
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import np_dtype
from conform.op_registry import op
from conform.ops.distributions import Continuous, stats
from conform.ops.onnx_shape import no_input_feeds, require_schema_type

FLOATS = ("float16", "bfloat16", "float32", "float64")
#: Output shapes of the continuous laws: at least 16384 elements (a Kolmogorov-Smirnov test
#: at 1e-9 then detects a distance of ~0.026 between the sample's and the law's distributions).
CONTINUOUS_SHAPES = ((16384,), (128, 128), (4, 64, 64), (3, 5462), (2, 2, 4099))
#: Shapes of Bernoulli's and Dropout's element-wise draws: 65536 elements (a probability off by
#: 0.02 from 1/2 is then 10 standard deviations away).
BINARY_SHAPES = ((65536,), (256, 256), (4, 128, 128), (3, 21846))
#: Values of low, high, mean and scale: exact in every float type (bfloat16 included).
LOWS = (-4.0, -1.0, 0.0, 0.5, 2.25, 100.0)
WIDTHS = (0.5, 1.0, 3.0, 10.0)
MEANS = (-3.0, 0.0, 0.5, 10.0)
SCALES = (0.25, 1.0, 2.0)
#: Probabilities (dyadic: exact in every float type), 0 and 1 included.
PROBABILITIES = (0.0, 0.0625, 0.25, 0.5, 0.75, 0.9375, 1.0)
SEEDS = (0.0, 1.0, 7.5, 12345.0)


def _law_attrs(draw, kit, normal: bool) -> dict:
    """low and high (or mean and scale), each absent (the text's default) at times, and a seed."""
    st = kit.st
    if normal:
        attrs = {"mean": draw(st.sampled_from(MEANS)), "scale": draw(st.sampled_from(SCALES))}
    else:
        low = draw(st.sampled_from(LOWS))
        attrs = {"low": low, "high": low + draw(st.sampled_from(WIDTHS))}
    # each left out at times (the text's default), where the range stays non-empty
    # (low < high: the text states no law otherwise)
    keep = {k: draw(st.integers(0, 3)) > 0 for k in attrs}
    if not normal and (not keep["low"] and attrs["high"] <= 0.0 or
                       not keep["high"] and attrs["low"] >= 1.0):
        keep = dict.fromkeys(attrs, True)
    attrs = {k: v for k, v in attrs.items() if keep[k]}
    if draw(st.booleans()):
        attrs["seed"] = draw(st.sampled_from(SEEDS))
    return attrs


def draw_random(draw, kit, spec, dtype):
    """RandomUniform / RandomNormal: a shape of at least 16384 elements, the law's attributes
    and ``dtype`` (absent at times for float32, the text's default)."""
    attrs = {"shape": list(draw(kit.st.sampled_from(CONTINUOUS_SHAPES))),
             **_law_attrs(draw, kit, spec.op.endswith("normal")), "dtype": dtype}
    if dtype == "float32" and draw(kit.st.booleans()):
        del attrs["dtype"]
    return kit.Signature((), (), attrs, dtype)


def draw_random_like(draw, kit, spec, dtype):
    """RandomUniformLike / RandomNormalLike: an input of ``dtype`` (T1) of at least 16384
    elements, the law's attributes and the output type: ``dtype`` drawn, or the input's where
    that is a float type (T2 holds float types only)."""
    attrs = _law_attrs(draw, kit, spec.op.endswith("normal_like"))
    out = dtype
    if dtype not in FLOATS or draw(kit.st.booleans()):
        out = attrs["dtype"] = draw(kit.st.sampled_from(FLOATS))
    shape = draw(kit.st.sampled_from(CONTINUOUS_SHAPES))
    return kit.Signature((dtype,), (shape,), attrs, out)


def _onnx_law(case, graph):
    """One node of the binding's op_type: its attributes the case's (``dtype`` as an ONNX type)."""
    attrs = {k: v for k, v in case.attrs.items() if k in ("shape", "low", "high", "mean", "scale",
                                                        "seed", "sample_size")}
    if "dtype" in case.attrs:
        require_schema_type(graph.op_type, "T2" if case.inputs else "T", case.attrs["dtype"])
        attrs["dtype"] = graph.onnx_type(case.attrs["dtype"])
    graph.node(graph.op_type, graph.inputs, **attrs)


def _uniform(attrs):
    low, high = attrs.get("low", 0.0), attrs.get("high", 1.0)
    return low, high


def _normal(attrs):
    return attrs.get("mean", 0.0), attrs.get("scale", 1.0)


def _shape(inputs, attrs):
    return tuple(inputs[0].shape) if inputs else tuple(attrs["shape"])


def uniform_law(inputs, attrs, outputs, *, out_dtypes, dtypes):
    """The uniform law on [low, high) (the text: 'the range by `low` and `high`')."""
    low, high = _uniform(attrs)
    return (Continuous(stats.uniform(low, high - low), low, high,
                       f"uniform on [{low:g}, {high:g})"),)


def normal_law(inputs, attrs, outputs, *, out_dtypes, dtypes):
    """The normal law N(mean, scale**2) ('scale: The standard deviation')."""
    mean, scale = _normal(attrs)
    return (Continuous(stats.norm(mean, scale), -np.inf, np.inf,
                       f"normal(mean={mean:g}, scale={scale:g})"),)


def _generator(seed):
    return np.random.default_rng(None if seed is None else int(seed))


def numpy_uniform(*inputs, low=0.0, high=1.0, seed=None, dtype=None, shape=None):
    """The numpy backend: ``Generator.uniform`` in float64, rounded to the output type."""
    out = _shape(inputs, {"shape": shape})
    kind = dtype or (str(inputs[0].dtype) if inputs else "float32")
    return _generator(seed).uniform(low, high, out).astype(np_dtype(kind))


def numpy_normal(*inputs, mean=0.0, scale=1.0, seed=None, dtype=None, shape=None):
    """The numpy backend: ``Generator.normal`` in float64, rounded to the output type."""
    out = _shape(inputs, {"shape": shape})
    kind = dtype or (str(inputs[0].dtype) if inputs else "float32")
    return _generator(seed).normal(mean, scale, out).astype(np_dtype(kind))


_UNIFORM = dict(onnx=_onnx_law, distribution=uniform_law, numpy=numpy_uniform,
                feeding=no_input_feeds)
_NORMAL = dict(onnx=_onnx_law, distribution=normal_law, numpy=numpy_normal,
               feeding=no_input_feeds)


@op("onnx_random_uniform", version=1, draw=draw_random, **_UNIFORM)
def oracle_random_uniform(*, shape, low=0.0, high=1.0, seed=None, dtype="float32"):
    """The output's shape; its values are the law's (:func:`uniform_law`): the mean shown."""
    return (np.full(tuple(shape), (low + high) / 2),)


@op("onnx_random_uniform_like", version=1, draw=draw_random_like, **_UNIFORM)
def oracle_random_uniform_like(data, *, low=0.0, high=1.0, seed=None, dtype=None):
    """The input's shape; its values are the law's (:func:`uniform_law`): the mean shown."""
    return (np.full(data.shape, (low + high) / 2),)


@op("onnx_random_normal", version=1, draw=draw_random, **_NORMAL)
def oracle_random_normal(*, shape, mean=0.0, scale=1.0, seed=None, dtype="float32"):
    """The output's shape; its values are the law's (:func:`normal_law`): the mean shown."""
    return (np.full(tuple(shape), float(mean)),)


@op("onnx_random_normal_like", version=1, draw=draw_random_like, **_NORMAL)
def oracle_random_normal_like(data, *, mean=0.0, scale=1.0, seed=None, dtype=None):
    """The input's shape; its values are the law's (:func:`normal_law`): the mean shown."""
    return (np.full(data.shape, float(mean)),)
