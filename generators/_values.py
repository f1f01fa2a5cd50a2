"""Fill input arrays from a value plan with NumPy (fast, seeded): Hypothesis only picks the plan.

Plans: ``normal`` (the spec's value range, within the dtype's), ``wide`` (log-uniform over the
whole dtype, subnormals included; for 8- and 4-bit floats, uniform over all their encodings, so
every value is reachable), ``edge`` (normal values with edge values at random positions),
``special`` (edge values only), and for a spec whose ``conditioning`` names it, ``offset`` (a
large common offset with a small spread, :func:`offset_values`) or ``cancel`` (pairs of
near-negatives, :func:`cancelling_values`).

A complex dtype's real and imaginary parts are each drawn by the plan as its component float
type is (:func:`fill`), independently; its edge values are every pair of the component's.

A string array's elements are each 0 to 7 characters of :data:`conform.dtypes.STRING_ALPHABET`
(ASCII, whitespace, case pairs, combining marks, CJK, a non-BMP character); its ``edge`` plan
mixes in :data:`conform.dtypes.STRING_EDGES` (the empty string among them).

Edge values a dtype does not have (``inf`` in float8_e4m3fn, ``-zero`` in a fnuz format, zero
and every negative value in float8_e8m0fnu) are left out of its draws.
"""
from __future__ import annotations

import numpy as np

from conform.spec import dtype_class, dtype_range
from conform.dtypes import (FLOAT_FORMATS, STRING_ALPHABET, STRING_EDGES, AbsentValue,
                            complex_array, component_dtype, int_info, is_complex, is_string,
                            np_dtype, resolve_edge_value)

PLANS = {"float": ("normal", "wide", "edge", "special"), "int": ("normal", "wide", "edge"),
         "bool": ("normal",)}
PLANS["complex"] = PLANS["float"]
PLANS["string"] = ("normal", "edge")
def plan_kind(input_dtypes) -> str:
    """The key of :data:`PLANS` for a case of ``input_dtypes``: float where any input is float
    or complex, else int where any is an integer, else bool.

    >>> plan_kind(("int32", "float32"))
    'float'
    """
    classes = {dtype_class(d) for d in input_dtypes}
    return "float" if classes & {"float", "complex"} else "int" if "int" in classes \
        else "string" if "string" in classes else "bool"


DEFAULT_RANGES = {"float": (-10.0, 10.0), "int": (-100, 100), "bool": (0, 1)}
DEFAULT_EDGES = {
    "float": [0.0, "-zero", "inf", "-inf", "nan", "min_subnormal", "-max_subnormal", "min_normal",
              "max_finite", "-below_max_finite", "one", "-one"],
    "int": [0, 1, -1, "int_min", "int_max"],
    "bool": [False, True],   # both truth values: the edge sweep of a logical op is its truth table
}


def value_range(spec, input_name: str, dtype: str) -> tuple[float, float]:
    """The ``normal`` plan's range of input ``input_name`` in ``dtype`` (a complex dtype: of
    each component, the spec's ``float`` range): the first of the input's range for the dtype,
    for its class, the spec's for the dtype, for its class, and the default."""
    dtype = component_dtype(dtype)
    cls = dtype_class(dtype)
    if cls == "string":   # text has no value range
        return 0, 0
    own = spec.input_values.get(input_name, {})
    low, high = next(r for r in (own.get(dtype), own.get(cls), spec.values.get(dtype),
                                 spec.values.get(cls), DEFAULT_RANGES[cls]) if r)
    return dtype_range(low, high, dtype) if cls != "bool" else (low, high)


def edge_values(spec, dtype: str) -> np.ndarray:
    """The spec's edge values for ``dtype`` (defaults where the spec gives none), in that dtype;
    for a complex dtype every pair (real, imaginary) of its component's edge values."""
    if is_complex(dtype):
        parts = edge_values(spec, component_dtype(dtype))
        real, imag = (grid.ravel() for grid in np.meshgrid(parts, parts, indexing="ij"))
        return complex_array(real, imag, dtype)
    if is_string(dtype):
        return np.array(STRING_EDGES, object)
    cls = dtype_class(dtype)
    names = spec.edge_values.get(cls, DEFAULT_EDGES.get(cls, []))
    values = []
    for name in names:
        try:
            value = resolve_edge_value(name, dtype)
        except AbsentValue:
            continue
        if cls == "int":
            info = int_info(dtype)
            if not info.min <= value <= info.max:
                continue
        values.append(value)
    if cls == "int":   # directly in the dtype: uint64's maximum does not fit an int64
        return np.array(values, dtype=np_dtype(dtype))
    with np.errstate(over="ignore"):
        return np.array(values, dtype=np.float64).astype(np_dtype(dtype))


def _normal(rng, shape, dtype, low, high):
    cls = dtype_class(dtype)
    if cls == "bool":
        return rng.random(shape) < 0.5
    if cls == "int":
        return rng.integers(low, high, size=shape, endpoint=True, dtype=np.int64)
    return rng.uniform(low, high, size=shape)


def _wide(rng, shape, dtype):
    cls = dtype_class(dtype)
    if cls == "int":
        info = int_info(dtype)
        kind = np.uint64 if info.max > np.iinfo(np.int64).max else np.int64   # uint64
        raw = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=kind)
        return raw >> rng.integers(0, info.bits, size=shape).astype(kind)  # log-uniform magnitudes
    fmt = FLOAT_FORMATS[dtype]
    if fmt.bits <= 8:   # every encoding, NaNs and zeros too, decoded exactly
        patterns = rng.integers(0, 1 << fmt.bits, size=shape, dtype=np.uint16).astype(np.uint8)
        return patterns.view(np_dtype(dtype)).astype(np.float64)
    exponent = rng.uniform(fmt.emin - fmt.precision + 1, fmt.emax + 1, size=shape)
    return np.exp2(exponent) * rng.choice([-1.0, 1.0], size=shape)


#: The offset plan's |offset| / spread, as a power of two: at least 2**12, at most 2**(p - 4)
#: for a dtype of p significand bits, so that the spread keeps 4 bits beside the offset.
OFFSET_RATIO = 12


def offset_values(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    """The ``offset`` plan (ill-conditioned but legal values): one large common offset ``c``
    with a small spread, ``c + u`` for u uniform in [-1, 1] and ``|c| = 2**k``, k from
    OFFSET_RATIO to 3 more (capped for narrow types: see OFFSET_RATIO), either sign: where a
    one-pass variance (mean of squares minus square of the mean) cancels, and a softmax
    without its maximum subtracted overflows."""
    precision = FLOAT_FORMATS[dtype].precision
    low = min(OFFSET_RATIO, precision - 4)
    k = int(rng.integers(low, low + 4)) if precision > 16 else low
    offset = float(rng.choice([-1.0, 1.0])) * 2.0 ** k
    return offset + rng.uniform(-1.0, 1.0, size=shape)


def cancelling_values(rng: np.random.Generator, shape, dtype: str, low, high) -> np.ndarray:
    """The ``cancel`` plan (near-cancellation): values of the ``normal`` range, half of them
    paired each with the negative of another, off by a few units in its last place, so that
    sums (and the sums of a reduction's slices holding both) nearly cancel: a sum whose
    condition number ``sum |x| / |sum x|`` is large, where only the bound's condition term
    keeps a correct evaluation within it."""
    values = rng.uniform(low, high, size=shape)
    flat = values.reshape(-1)
    half = flat.size // 2
    order = rng.permutation(flat.size)
    near = 2.0 ** (2 - FLOAT_FORMATS[dtype].precision) * rng.uniform(-1.0, 1.0, half)
    flat[order[half:2 * half]] = -flat[order[:half]] * (1 + near)
    return values


def fill(rng: np.random.Generator, *, shape, dtype: str, plan: str, low, high, edges) -> np.ndarray:
    """One input array in ``dtype`` for the value plan ``plan``.

    >>> fill(np.random.default_rng(0), shape=(2,), dtype="int32", plan="normal", low=0, high=3,
    ...      edges=np.array([], np.int32)).dtype
    dtype('int32')
    """
    if dtype_class(dtype) == "bool":
        return rng.random(shape) < 0.5
    if is_string(dtype):
        return _strings(rng, shape, plan, edges)
    if is_complex(dtype):   # each part drawn as the component type, its edges pairs' parts
        part = component_dtype(dtype)
        real, imag = (fill(rng, shape=shape, dtype=part, plan=plan, low=low, high=high,
                           edges=getattr(edges, attr).astype(np_dtype(part)))
                      for attr in ("real", "imag"))
        return complex_array(real, imag, dtype)
    if plan == "wide":
        values = _wide(rng, shape, dtype)
    elif plan == "offset" and dtype_class(dtype) == "float":
        values = offset_values(rng, shape, dtype)
    elif plan == "cancel" and dtype_class(dtype) == "float":
        values = cancelling_values(rng, shape, dtype, low, high)
    else:
        values = _normal(rng, shape, dtype, low, high)
    values = np.asarray(values)
    if plan in ("edge", "special") and len(edges) and values.size:
        share = 1.0 if plan == "special" else rng.uniform(0.1, 0.5)
        where = rng.random(values.shape) < share
        picks = edges[rng.integers(0, len(edges), size=values.shape)]
        values = np.where(where, picks.astype(values.dtype), values)
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(np_dtype(dtype))



def strings(rng: np.random.Generator, shape, alphabet: str = STRING_ALPHABET,
            max_length: int = 7) -> np.ndarray:
    """A string array of ``shape`` (an object array of ``str``), each element 0 to
    ``max_length`` characters of ``alphabet``, drawn from ``rng``."""
    size = int(np.prod(shape, dtype=np.int64))
    lengths = rng.integers(0, max_length, size=size, endpoint=True)
    picks = rng.integers(0, len(alphabet), size=int(lengths.sum())).tolist()
    ends = np.cumsum(lengths).tolist()
    drawn = "".join(map(alphabet.__getitem__, picks))   # every string's characters, then cut
    out = np.empty(size, object)
    out[:] = [drawn[a:b] for a, b in zip([0] + ends, ends)]
    return out.reshape(shape)


def _strings(rng, shape, plan: str, edges) -> np.ndarray:
    values = strings(rng, shape)
    if plan in ("edge", "special") and len(edges) and values.size:
        where = rng.random(values.shape) < rng.uniform(0.1, 0.5)
        values[where] = edges[rng.integers(0, len(edges), size=int(where.sum()))]
    return values
