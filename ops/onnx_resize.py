"""ONNX Resize, one op per opset family whose text differs: Resize-10 (scales only, nearest and
linear, no coordinate rule), 11 (roi, sizes, cubic, the coordinate modes with
tf_half_pixel_for_nn), 13 (roi and scales optional), 18 (axes, antialias,
keep_aspect_ratio_policy) and 19 (half_pixel_symmetric).

The oracle follows ``onnx.defs.get_schema("Resize", N).doc``: each resized axis maps
``x_resized`` to ``x_original`` by the coordinate formula; nearest picks one element by
``nearest_mode``; linear and cubic weigh 2 and 4 neighbours (Keys' kernel, IEEE Trans. ASSP 29(6)
1981, eq. 4); antialias stretches the kernel by ``max(1, 1 / scale)`` (weights normalised to 1);
exclude_outside zeroes and renormalises the weights outside the tensor; tf_crop_and_resize gives
extrapolation_value outside ``[0, length_original - 1]``. Each axis is one weight matrix applied
with ``tensordot``, or for nearest one index vector applied with ``take``. Readings (region
``reading_differs``): reading 0 takes the given scale, ``length_resized`` the fractional length
it gives, and edge values at locations outside the tensor; reading 1 ``scale = length_resized /
length_original`` with the integer length, and leaves the locations outside out.
"""
from __future__ import annotations

import functools

import numpy as np

from conform.ops._resize_draws import draw_resize
from conform.ops._resize_shapes import resize_boundaries
from conform.op_registry import op, region
from conform.ops.error_bounds import (gamma, judged_bound, parts_magnitude, reaches_max_finite,
                                      underflow_term)
from conform.dtypes import FLOAT_FORMATS, component_dtype, is_complex

#: The kernels' radii in input elements (before an antialias stretch).
RADIUS = {"linear": 1, "cubic": 2}
#: Each opset family's defaults for the attributes a case leaves out.
DEFAULTS = {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
            "nearest_mode": "round_prefer_floor", "cubic_coeff_a": -0.75, "exclude_outside": 0,
            "extrapolation_value": 0.0, "antialias": 0, "keep_aspect_ratio_policy": "stretch"}
#: The unit roundoff assumed for the coordinate and weight computations (float32: the type of
#: ``scales`` and of the attributes; see the spec's ``why``).
COORDINATE_U = 2.0 ** -24


def _attr(attrs: dict, name: str):
    value = attrs.get(name)
    return DEFAULTS[name] if value is None else value


# --- sizes and scales ---------------------------------------------------------------------------

def axis_plans(shape, attrs: dict, reading: int = 0) -> dict:
    """Per resized axis ``a``: ``(n_out, num, den, width, start, end)``, the scale being
    ``num / den`` (kept as a ratio so that formulas stay exact where the text's values are),
    ``width`` the fractional output length (``output_width``) and ``start, end`` the roi."""
    rank = len(shape)
    axes = [a % rank for a in (attrs.get("axes") or range(rank))]
    roi = attrs.get("roi") or [0.0] * len(axes) + [1.0] * len(axes)
    plans = {}
    if attrs.get("scales") is not None:
        for k, a in enumerate(axes):
            s, start, end = float(attrs["scales"][k]), float(roi[k]), float(roi[len(axes) + k])
            width = shape[a] * (end - start) * s
            plans[a] = [int(np.floor(width)), s, 1.0, width, start, end]
    else:
        sizes = [int(n) for n in attrs["sizes"]]
        policy = _attr(attrs, "keep_aspect_ratio_policy")
        ratios = [(sizes[k], shape[a]) for k, a in enumerate(axes)]
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            num, den = pick(ratios, key=lambda r: r[0] / r[1])
            ratios = [(num, den)] * len(axes)
        for k, a in enumerate(axes):
            num, den = ratios[k]
            width = sizes[k] if policy == "stretch" else num * shape[a] / den
            n_out = sizes[k] if policy == "stretch" else int(np.floor(width + 0.5))
            plans[a] = [n_out, num, den, width, float(roi[k]), float(roi[len(axes) + k])]
    for a, plan in plans.items():   # reading 1: the text's length_resized / length_original
        if reading and shape[a] and plan[0] * plan[2] != plan[1] * shape[a]:
            plan[1], plan[2] = plan[0], shape[a]
    return {a: tuple(plan) for a, plan in plans.items()}


def output_shape(shape, attrs: dict) -> tuple:
    """The output's shape: each resized axis's ``n_out``, the others kept."""
    plans = axis_plans(shape, attrs)
    return tuple(plans[a][0] if a in plans else n for a, n in enumerate(shape))


# --- coordinates --------------------------------------------------------------------------------

def coordinates(mode: str, n_in: int, plan: tuple, reading: int = 0) -> np.ndarray:
    """``x_original`` for every ``x_resized`` of one axis, by the text's formula (NaN where it
    divides by zero: align_corners onto one element). ``length_resized`` is ``width``, the
    fractional length the scale gives (reading 0: then ``scale = length_resized /
    length_original`` holds for the given scale), or the output's length (reading 1)."""
    n_out, num, den, width, start, end = plan
    length = n_out if reading else width
    i = np.arange(n_out, dtype=np.float64)
    half = (i + 0.5) * den / num - 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        if mode in ("half_pixel", "pytorch_half_pixel"):
            return half if mode == "half_pixel" or length > 1 else np.zeros(n_out)
        if mode == "half_pixel_symmetric":
            return n_in / 2 * (1 - n_out / width) + half
        if mode == "align_corners":
            return i * (n_in - 1) / (length - 1) if length != 1 else np.full(n_out, np.nan)
        if mode == "asymmetric":
            return i * den / num
        if mode == "tf_half_pixel_for_nn":
            return half + 0.5
        if mode == "tf_crop_and_resize":
            if length <= 1:
                return np.full(n_out, 0.5 * (start + end) * (n_in - 1))
            return start * (n_in - 1) + i * (end - start) * (n_in - 1) / (length - 1)
    raise ValueError(f"unknown coordinate_transformation_mode {mode!r}")


def _exact_scale(plan: tuple) -> bool:
    """Whether the axis's scale is a float32 value (given by ``scales``, or a ratio that is one):
    then the formulas evaluated in float32 land exactly on a tie the exact value is on."""
    num, den = plan[1], plan[2]
    return float(np.float32(num / den)) * den == num


def _slack(x: np.ndarray, plan: tuple, n_in: int) -> np.ndarray:
    """How far a float32 evaluation of the coordinate formula may be from ``x_original``: a
    few roundings of the magnitudes involved (see the spec's ``why``)."""
    n_out, num, den = plan[:3]
    reach = (np.arange(n_out) + 1.0) * den / num
    return 8 * COORDINATE_U * (np.abs(np.nan_to_num(x)) + reach + n_in + 1)


# --- per-axis selection and weights -------------------------------------------------------------

_ROUNDING = {"round_prefer_floor": lambda x: np.ceil(x - 0.5),
             "round_prefer_ceil": lambda x: np.floor(x + 0.5),
             "floor": np.floor, "ceil": np.ceil}


def nearest_index(x: np.ndarray, n_in: int, nearest_mode: str) -> np.ndarray:
    """The input element nearest mode picks for each ``x_original`` (clamped to the axis)."""
    return np.clip(_ROUNDING[nearest_mode](np.nan_to_num(x)), 0, n_in - 1).astype(np.int64)


def kernel(d: np.ndarray, mode: str, a: float) -> np.ndarray:
    """Linear: ``max(0, 1 - |d|)``; cubic: Keys' kernel, ``(a+2)|d|^3 - (a+3)|d|^2 + 1`` on
    ``[0, 1]``, ``a|d|^3 - 5a|d|^2 + 8a|d| - 4a`` on ``(1, 2)``, 0 beyond."""
    d = np.abs(d)
    if mode == "linear":
        return np.maximum(0.0, 1 - d)
    inner = ((a + 2) * d - (a + 3)) * d * d + 1
    outer = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, inner, np.where(d < 2, outer, 0.0))


def _stretch(attrs: dict, scale: float) -> float:
    """The antialias stretch of the kernel: ``max(1, 1 / scale)`` (1 without antialias)."""
    return 1 / scale if _attr(attrs, "antialias") and scale < 1 else 1.0


def taps_per_side(attrs: dict, scale: float) -> int:
    """How many sampling locations the (stretched) kernel reaches on each side of x_original."""
    return int(np.ceil(RADIUS[_attr(attrs, "mode")] * _stretch(attrs, scale)))


def weight_matrix(x: np.ndarray, n_in: int, scale: float, attrs: dict, reading: int = 0):
    """``(W, taps)``: ``W[j, i]`` the weight of input element ``i`` in output element ``j`` (a
    location outside the axis counted on the nearest edge element, or left out under
    ``exclude_outside`` and reading 1), ``taps`` where a location within the kernel's support
    falls (its weight possibly 0)."""
    mode = _attr(attrs, "mode")
    stretch = _stretch(attrs, scale)
    reach = taps_per_side(attrs, scale)
    x = np.nan_to_num(x)
    where = np.floor(x)[:, None] + np.arange(1 - reach, reach + 1)
    d = (x[:, None] - where) / stretch
    w = kernel(d, mode, float(_attr(attrs, "cubic_coeff_a")))
    inside = (where >= 0) & (where < n_in)
    renormalised = np.full(len(x), stretch != 1)
    if _attr(attrs, "exclude_outside") or reading:   # rows losing a weight are renormalised
        renormalised |= (~inside & (w != 0)).any(axis=1)
        w = np.where(inside, w, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(renormalised[:, None], w / w.sum(axis=1, keepdims=True), w)
    rows = np.broadcast_to(np.arange(len(x))[:, None], where.shape)
    cols = np.clip(where, 0, n_in - 1).astype(np.int64)
    matrix, taps = np.zeros((len(x), n_in)), np.zeros((len(x), n_in), bool)
    np.add.at(matrix, (rows, cols), w)
    taps[rows, cols] |= np.abs(d) < RADIUS[mode]
    return matrix, taps


def _outside(x: np.ndarray, n_in: int) -> np.ndarray:
    return (x < 0) | (x > n_in - 1)


def _family_attrs(attrs: dict, family: int, reading: int) -> dict:
    """Resize-10 has no coordinate rule: reading 0 is asymmetric with floor, reading 1
    half_pixel with round_prefer_floor."""
    if family != 10:
        return attrs
    return {**attrs, "coordinate_transformation_mode": "half_pixel" if reading else "asymmetric",
            "nearest_mode": "round_prefer_floor" if reading else "floor"}


#: Resize-10 names no coordinate rule and no rounding: the mappings and roundings read into it.
_UNNAMED = (("asymmetric", "floor"), ("asymmetric", "round_prefer_floor"),
            ("asymmetric", "round_prefer_ceil"), ("half_pixel", "round_prefer_floor"),
            ("half_pixel", "round_prefer_ceil"))


def _unnamed_rounding(n_in: int, plans, index: np.ndarray) -> np.ndarray:
    """Where the nearest picks of the readings in :data:`_UNNAMED`, under either reading of
    the scale (``plans``), differ from ``index``."""
    return np.any([nearest_index(coordinates(mapping, n_in, plan), n_in, rounding) != index
                   for mapping, rounding in _UNNAMED for plan in plans], axis=0)


def plan_axes(shape: tuple, attrs: dict, family: int, reading: int = 0) -> dict:
    """Per resized axis: ``(x, plan, open, outside)`` and either the nearest indices or the
    weight matrix and tap mask (with the matrices of ``x`` moved by the coordinate slack).
    A function of the shape and attributes alone: the oracle, its open elements and the bound
    of one case share it (the last few are kept; callers only read it)."""
    key = (tuple(shape), repr(sorted(attrs.items())), family, reading)
    if key not in _PLANNED:
        if len(_PLANNED) >= 8:
            del _PLANNED[next(iter(_PLANNED))]
        _PLANNED[key] = _plan_axes(shape, attrs, family, reading)
    return _PLANNED[key]


#: The last few :func:`plan_axes` answers, by their arguments.
_PLANNED: dict = {}


def _plan_axes(shape: tuple, attrs: dict, family: int, reading: int) -> dict:
    attrs = _family_attrs(attrs, family, reading)
    mode, ctm = _attr(attrs, "mode"), _attr(attrs, "coordinate_transformation_mode")
    result, others = {}, axis_plans(shape, attrs, 1 - reading)
    for a, plan in axis_plans(shape, attrs, reading).items():
        n_in = shape[a]
        x = coordinates(ctm, n_in, plan, reading)
        if n_in == 1:
            x = np.nan_to_num(x)
        slack = _slack(x, plan, n_in)
        crop = ctm == "tf_crop_and_resize"
        outside = _outside(x, n_in) if crop else np.zeros(len(x), bool)
        entry = {"x": x, "plan": plan, "outside": outside, "open": np.isnan(x)}
        moved = [x - slack, x + slack]
        if crop:   # extrapolation switches at the axis's ends (x = 0 from start 0 is exact)
            entry["open"] |= (_outside(moved[0], n_in) != _outside(moved[1], n_in)) \
                & ~((x == 0) & (plan[4] == 0))
        scale = plan[1] / plan[2]
        if mode == "nearest":
            nearest = _attr(attrs, "nearest_mode")
            entry["index"] = nearest_index(x, n_in, nearest)
            flips = nearest_index(moved[0], n_in, nearest) != nearest_index(moved[1], n_in, nearest)
            exact = _exact_scale(plan) & (x == np.round(x * 2) / 2)   # judged where the text decides
            entry["open"] |= flips & ~exact
            if family == 10:   # no rounding named: open where any rounding of a mapping differs
                entry["open"] |= _unnamed_rounding(n_in, (plan, others[a]), entry["index"])
        else:
            entry["weights"], entry["taps"] = weight_matrix(x, n_in, scale, attrs, reading)
            entry["moved"] = [weight_matrix(m, n_in, scale, attrs, reading)[0] for m in moved]
            entry["open"] |= np.isnan(entry["weights"]).any(axis=1)
        result[a] = entry
    return result


def _apply(x: np.ndarray, matrices: dict) -> np.ndarray:
    """``x`` with each axis ``a`` of ``matrices`` mapped by its matrix (``n_out x n_in``)."""
    for a, matrix in matrices.items():
        x = np.moveaxis(np.tensordot(matrix, x, axes=([1], [a])), 0, a)
    return x


def _broadcast_mask(shape: tuple, masks: dict) -> np.ndarray:
    """The union of per-axis masks over the output's shape."""
    out = np.zeros(shape, bool)
    for a, mask in masks.items():
        out |= mask.reshape([-1 if k == a else 1 for k in range(len(shape))])
    return out


def resize(x: np.ndarray, attrs: dict, family: int, reading: int = 0,
           open_elements: bool = False) -> np.ndarray:
    """The resized tensor (or, with ``open_elements``, the mask of the elements the text leaves
    open: a nearest pick or an extrapolation switch within the coordinate slack of its
    boundary, a coordinate the formula divides by zero for, weights that sum to zero)."""
    axes = plan_axes(x.shape, attrs, family, reading)
    shape = output_shape(x.shape, attrs)
    if open_elements:
        return _broadcast_mask(shape, {a: e["open"] for a, e in axes.items()})
    if _attr(attrs, "mode") == "nearest":
        out = x
        for a, entry in axes.items():
            out = np.take(out, entry["index"], axis=a)
    else:
        out = _apply(x, {a: np.nan_to_num(e["weights"]) for a, e in axes.items()})
    outside = _broadcast_mask(shape, {a: e["outside"] for a, e in axes.items()})
    if outside.any():
        value = _attr(attrs, "extrapolation_value")
        out = np.where(outside, np.array("", object) if x.dtype == object else value, out)
    return out


@region
def resize_text_extrapolation(ctx) -> np.ndarray:
    """Resize of string data under tf_crop_and_resize: the elements that take
    extrapolation_value, a float the text does not convert to text (the oracle's stand-in: the
    empty string)."""
    x = ctx.inputs[0]
    if x.dtype != object or _attr(ctx.attrs, "coordinate_transformation_mode") != "tf_crop_and_resize":
        return ctx.none()
    probe = ctx.oracle_with([np.zeros(x.shape)], extrapolation_value=np.nan)
    return np.isnan(probe).reshape(ctx.expected.shape)


# --- the error bound ----------------------------------------------------------------------------

def resize_bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes, family) -> tuple:
    """|err| <= gamma_k sum_t |W_t v_t| + sum_t |dW_t| |v_t| + u |y| (+ k smallest subnormals).

    ``W_t`` is the product over the resized axes of each axis's weight, ``v_t`` the sample. A
    backend evaluating the weighted sum in any order, all at once or axis by axis, rounds each
    term at most ``k = sum_a taps_a + axes + 2`` times (its weight products, its product with the
    sample, the additions; Higham 2002, Lemma 3.1 and §3.1). Its weights differ from the exact
    ones by ``dW``: per axis, the change of the weight matrix when ``x_original`` moves by the
    coordinate slack either way (a float32 evaluation of the formula), plus ``weight_ulps + K``
    float32 roundings per tap (the kernel polynomial and the normalisation over ``K`` taps),
    times the row's ``sum |w|`` (a normalising sum of mixed signs is off by ``K u sum |k|``);
    products of axes combine first order. Nearest copies: 0. NaN (region
    ``unbounded_evaluation``) where the sum of magnitudes times ``1 + gamma_k`` reaches the
    largest finite value: some orders overflow."""
    (x,), (y,) = inputs, outputs
    if _attr(attrs, "mode") == "nearest" or y.size == 0:
        return (np.zeros(y.shape),)
    axes = plan_axes(x.shape, attrs, family)
    v, y, out_dtype = parts_magnitude(x), parts_magnitude(y), component_dtype(out_dtype)
    weights = {a: np.abs(np.nan_to_num(e["weights"])) for a, e in axes.items()}
    slip = {}
    for a, e in axes.items():
        per_row = np.count_nonzero(e["taps"], axis=1).max(initial=1)
        spread = np.abs(np.nan_to_num(e["weights"])).sum(axis=1, keepdims=True)   # sum|k| / |S|
        rounding = COORDINATE_U * (constants.get("weight_ulps", 16) + per_row) * spread * e["taps"]
        slip[a] = sum(np.abs(np.nan_to_num(m) - np.nan_to_num(e["weights"])) for m in e["moved"]) \
            + rounding
    k = sum(2 * taps_per_side(attrs, e["plan"][1] / e["plan"][2]) for e in axes.values()) \
        + len(axes) + 2
    g = gamma(k, u)
    drift = sum((_apply(v, {b: slip[b] if b == a else weights[b] + slip[b] for b in axes})
                 for a in axes), np.zeros(y.shape))
    parts = 2 if is_complex(dtypes[0]) else 1
    bound = g * _apply(v, weights) + drift + u * y + parts * underflow_term(k, out_dtype, ulps=1)
    reach = _apply(v, {a: weights[a] + slip[a] for a in axes})
    outside = _broadcast_mask(y.shape, {a: e["outside"] for a, e in axes.items()})
    return (np.where(outside, 0.0, judged_bound(
        bound, unbounded=reaches_max_finite(reach, out_dtype, gamma_n=g))),)


# --- drawing (ops/_resize_draws.py) and values ------------------------------------------------

def values_resize(rng, inputs, attrs):
    """Finite samples for linear and cubic (a zero weight times an infinity or NaN is NaN in an
    IEEE evaluation and nothing where the tap is skipped: the text does not say); nearest
    copies every value, specials included."""
    (x,) = inputs
    if _attr(attrs, "mode") == "nearest" or x.dtype.kind in "iub":
        return [x]
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    fill = rng.uniform(-4, 4, x.shape) + (1j * rng.uniform(-4, 4, x.shape) if wide.dtype.kind
                                          == "c" else 0)
    return [np.where(np.isfinite(wide), wide, fill).astype(x.dtype)]


# --- lowering and feeding -----------------------------------------------------------------------

ONNX_ATTRIBUTES = ("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
                   "exclude_outside", "extrapolation_value", "antialias",
                   "keep_aspect_ratio_policy", "axes")


def onnx_resize(case, graph, *, family: int):
    """One Resize node; roi and scales as float32 and sizes as int64 initializers (Resize-10:
    X and scales; Resize-11: roi and scales always given, empty where unused; from Resize-13
    an absent one is "")."""
    from conform.ops.optional_inputs import onnx_operands

    attrs = case.attrs
    node_attrs = {k: attrs[k] for k in ONNX_ATTRIBUTES if attrs.get(k) is not None}
    floats = functools.partial(graph.const, dtype=np.float32)
    if family == 10:
        inputs = [graph.inputs[0], floats("scales", attrs["scales"])]
    else:
        required = family == 11
        roi = attrs.get("roi") or ([] if required else None)
        scales = attrs.get("scales") or ([] if required else None)
        inputs = onnx_operands([graph.inputs[0],
                                None if roi is None else floats("roi", roi),
                                None if scales is None else floats("scales", scales),
                                graph.const("sizes", attrs["sizes"]) if attrs.get("sizes") else None])
    graph.node(graph.op_type, inputs, **node_attrs)


def feed_resize(inputs, attrs, index, *, family: int):
    """The input elements whose weight in out[index] is not zero (nearest: the one copied;
    none where the element is the extrapolation value)."""
    (x,) = inputs
    axes = plan_axes(x.shape, attrs, family)
    picks = []
    for a, i in enumerate(index):
        entry = axes.get(a)
        if entry is None:
            picks.append([i])
        elif entry["outside"][i]:
            return [x.ravel()[:0]]
        elif "index" in entry:
            picks.append([entry["index"][i]])
        else:
            picks.append(np.flatnonzero(np.nan_to_num(entry["weights"][i])))
    return [x[np.ix_(*picks)].ravel()]


def _register(name: str, family: int, **hooks):
    """Declare ``name``: Resize as the opset ``family`` text defines it (with ``hooks``)."""
    def oracle(x, *, reading=0, open_elements=False, absent_inputs=(), **attrs):
        return (resize(x, attrs, family, reading, open_elements),)

    oracle.__doc__ = f"ONNX Resize-{family}: each resized axis resampled by its coordinate rule."
    oracle.__name__ = oracle.__qualname__ = f"oracle_{name}"
    return op(name, version=1, draw=_of(draw_resize, family), draw_honours=frozenset({"attrs"}),
              values=values_resize, feeding=_of(feed_resize, family),
              onnx=_of(onnx_resize, family), error_bound=_of(resize_bound, family), **hooks)(oracle)


def _of(hook, family: int):
    """``hook`` for the opset ``family`` (named and documented as ``hook``)."""
    return functools.update_wrapper(functools.partial(hook, family=family), hook)


oracle_onnx_resize_opset10 = _register("onnx_resize_opset10", 10)
oracle_onnx_resize_opset11 = _register("onnx_resize_opset11", 11)
oracle_onnx_resize_opset13 = _register("onnx_resize_opset13", 13)
oracle_onnx_resize_opset18 = _register("onnx_resize_opset18", 18)
oracle_onnx_resize = _register("onnx_resize", 19, boundaries=resize_boundaries)
