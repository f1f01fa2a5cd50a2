"""The ``critical`` value plan: cases drawn inside and at both edges of an op's critical regions
(its spec's ``critical_regions``, resolved per dtype by :mod:`conform.spec.critical`), and the
edge values of conversions (the target type's overflow and underflow thresholds, met from the
source type).

Every run holds them: one case per element-wise op x float dtype that declares regions, one per
conversion label ``SRC->DST`` whose target can overflow or underflow from the source.
"""
from __future__ import annotations

import numpy as np

from conform.generators._case import Case
from conform.generators._edges import EDGE_CASE_SIZE, seed_of
from conform.generators._signature import fixed_attrs
from conform.generators._values import value_range
from conform.spec import OpSpec, dtype_class
from conform.spec.critical import evaluate, to_dtype, ulp
from conform.dtypes import FLOAT_FORMATS, int_info, is_integer, np_dtype, result_dtype

#: Values drawn per region (and per sign of a mirrored one): both edges, the centre, its two
#: neighbours, and random values inside. Enough that a vectorised path's worst error in the
#: region shows (issue 35: at least 256 per region per op x dtype cell); every region block of
#: one case, so no case (and no compiled kernel) is added for it.
PER_REGION = 256


def region_offsets(rng: np.random.Generator, region: dict) -> np.ndarray:
    """Where the values of one region block sit, in units of the region's half-width ``ulps``
    (integers) or as relative factors ``1 + f`` (``rel``): both edges, the centre and its
    neighbours first, then random points inside."""
    if "ulps" in region:
        width = int(region["ulps"])
        fixed = np.array([-width, width, 0, -1, 1], np.float64)
        return np.concatenate([fixed, rng.integers(-width, width, PER_REGION - 5, endpoint=True)])
    rel = float(region["rel"])
    fixed = np.array([-rel, rel, 0.0], np.float64)
    return np.concatenate([fixed, rng.uniform(-rel, rel, PER_REGION - 3)])


def region_values(region: dict, dtype: str, offsets: np.ndarray, others: dict,
                  sign: float = 1.0) -> np.ndarray:
    """The float64 values (representable in ``dtype``) of one region block: its centre
    (resolved under ``dtype`` with the other inputs' ``others``), times ``sign``, moved by
    ``offsets``. Elements whose centre is not finite come out NaN (the caller keeps its own)."""
    fmt = FLOAT_FORMATS[dtype]
    centre = sign * to_dtype(evaluate(region["at"], dtype, others), dtype)
    with np.errstate(all="ignore"):
        moved = centre + offsets * ulp(centre, dtype) if "ulps" in region else centre * (1 + offsets)
        if not fmt.signed and "ulps" in region:   # see _binade_steps
            moved = np.where(moved < fmt.min_subnormal, _binade_steps(centre, offsets, fmt), moved)
        values = np.clip(to_dtype(moved, dtype), -fmt.max_finite, fmt.max_finite)
    return np.where(np.isfinite(centre), values, np.nan)


def _binade_steps(centre: np.ndarray, offsets: np.ndarray, fmt) -> np.ndarray:
    """An unsigned format (E8M0: powers of two, nothing at or below 0) has ``ulp(c) = c``, so
    a step of ``offsets`` ULPs below the centre leaves the format, though the region holds every
    value ``c 2**-k`` down to the smallest (each within one ULP of ``c``): there the value steps
    ``|offset|`` binades down instead, at least the smallest value (repeated where the region's
    values run out)."""
    return np.maximum(centre * np.exp2(np.minimum(offsets, 0)), fmt.min_subnormal)


def _region_block(spec: OpSpec, dtype: str, region: dict, sign: float, rng) -> list[np.ndarray]:
    """One block of PER_REGION elements per input: the region's input drawn in it, the others
    at their ``with`` expressions (moved as the region is) or ordinary values. Where a centre
    that names the other inputs is not finite for their values (``lhs / min_normal`` for a
    large ``lhs``), those elements' free inputs are drawn again, log-uniformly in magnitude."""
    drawn = region.get("input", spec.inputs[0])
    arrays, free = {}, []
    for name in spec.inputs:
        if name == drawn:
            continue
        if name in region.get("with", {}):
            at = {**region, "at": region["with"][name]}
            arrays[name] = region_values(at, dtype, region_offsets(rng, region), {})
        else:
            low, high = value_range(spec, name, dtype)
            arrays[name], free = rng.uniform(low, high, PER_REGION), free + [name]
        arrays[name] = to_dtype(arrays[name], dtype)
    offsets = region_offsets(rng, region)
    values = region_values(region, dtype, offsets, arrays, sign)
    for _ in range(REDRAWS if free else 0):
        missing = np.isnan(values)
        if not missing.any():
            break
        for name in free:
            again = to_dtype(_log_uniform(rng, *value_range(spec, name, dtype), dtype), dtype)
            arrays[name] = np.where(missing, again, arrays[name])
        values = region_values(region, dtype, offsets, arrays, sign)
    missing = np.isnan(values)
    if free and missing.any() and not missing.all():
        # the redraws did not find them all (a narrow type whose centre is finite for few of the
        # free inputs' values): those elements take the free inputs of found ones in turn
        # (repeats; no draw, so the blocks after this one keep their values)
        found = np.resize(np.flatnonzero(~missing), int(missing.sum()))
        for name in free:
            arrays[name][missing] = arrays[name][found]
        values = region_values(region, dtype, offsets, arrays, sign)
    low, high = value_range(spec, drawn, dtype)
    arrays[drawn] = np.where(np.isnan(values), to_dtype(rng.uniform(low, high, PER_REGION), dtype),
                             values)
    return [arrays[name] for name in spec.inputs]


#: Times the free inputs of a block are drawn again where its centre is not finite.
REDRAWS = 8


def _log_uniform(rng, low: float, high: float, dtype: str) -> np.ndarray:
    """PER_REGION values in ``[low, high]`` whose magnitudes are log-uniform between the
    dtype's smallest normal and the range's largest magnitude (either sign the range holds)."""
    top = max(abs(low), abs(high), FLOAT_FORMATS[dtype].min_normal)
    exponents = rng.uniform(np.log2(FLOAT_FORMATS[dtype].min_normal), np.log2(top), PER_REGION)
    signs = rng.choice([-1.0, 1.0], PER_REGION) if low < 0 < high else np.sign(high or low or 1)
    return np.clip(signs * np.exp2(exponents), low, high)


#: The critical case ends with its first TWINS elements again, reversed: the same values at the
#: head (a vectorised body's first lanes) and at the tail (a scalar remainder, lanes 8 and up),
#: so that the judge's position independence of element-wise results has pairs to compare.
TWINS = 2 * EDGE_CASE_SIZE


def _with_twins(values: np.ndarray) -> np.ndarray:
    return np.concatenate([values, values[:TWINS][::-1]])


def critical_case(spec: OpSpec, dtype: str, *, seed: int) -> Case | None:
    """The ``critical`` case of an element-wise op under float ``dtype``: a block of
    PER_REGION values per declared region (and per sign of a mirrored one), then TWINS of them
    again; None where it declares none."""
    if not spec.critical_regions or not spec.elementwise or dtype not in FLOAT_FORMATS \
            or spec.optional_inputs:
        return None
    fill_seed = seed_of(spec, dtype, "critical", seed)
    rng = np.random.default_rng(fill_seed)
    blocks = [_region_block(spec, dtype, region, sign, rng) for region in spec.critical_regions
              for sign in ((1.0, -1.0) if region.get("mirror") else (1.0,))]
    inputs = [_with_twins(np.concatenate(column).astype(np_dtype(dtype)))
              for column in zip(*blocks)]
    out_dtype = result_dtype(spec.output_dtype, dtype)
    return Case(id=f"{spec.op}.{dtype}.critical", op=spec.op, dtype=dtype,
                input_dtypes=(dtype,) * len(inputs), out_dtype=out_dtype, inputs=inputs,
                attrs=fixed_attrs(spec), plan="critical", seed=fill_seed)


def _conversion_thresholds(target: str) -> list[float]:
    """The target type's thresholds a conversion meets: its overflow (largest finite value and
    the next power of two), its smallest normal, largest and smallest subnormals; for an
    integer target its limits and the values just past them."""
    if is_integer(target):
        info = int_info(target)
        return [float(info.max), float(info.max) + 1, float(info.min), float(info.min) - 1]
    fmt = FLOAT_FORMATS[target]
    return [fmt.max_finite, fmt.beyond_max, fmt.min_normal, fmt.min_normal - fmt.min_subnormal,
            fmt.min_subnormal, 2.0 ** fmt.precision + 1]


def _meets_thresholds(source: str, target: str) -> bool:
    """Whether a ``source`` value can overflow, underflow or be rounded in ``target`` (a
    widening conversion, int8 to float16 say, meets no threshold of its target)."""
    if source in FLOAT_FORMATS and target in FLOAT_FORMATS:
        src, dst = FLOAT_FORMATS[source], FLOAT_FORMATS[target]
        return not (dst.emax >= src.emax and dst.emin <= src.emin and dst.precision >= src.precision)
    if target in FLOAT_FORMATS:   # from an integer: rounded past 2**precision, or overflowing
        info = int_info(source)
        return max(abs(int(info.min)), int(info.max)) > 2 ** FLOAT_FORMATS[target].precision
    return True   # to an integer: its limits (from a float, or from a wider integer)


def conversion_values(source: str, target: str) -> np.ndarray | None:
    """The conversion edge values for ``source -> target`` in ``source``: each threshold of the
    target (:func:`_conversion_thresholds`) the source can hold, with its neighbours in the
    source type, both signs; None where the conversion meets no threshold."""
    if dtype_class(source) not in ("float", "int") or dtype_class(target) not in ("float", "int") \
            or not _meets_thresholds(source, target):
        return None
    points = np.array([t for t in _conversion_thresholds(target) for t in (t, -t)], np.float64)
    if source in FLOAT_FORMATS:
        fmt = FLOAT_FORMATS[source]
        points = points[(np.abs(points) >= fmt.min_subnormal) & (np.abs(points) <= fmt.max_finite)
                        & ((points > 0) | fmt.signed)]   # E8M0: positive values only
        near = to_dtype(points, source)
        values = np.concatenate([near, near - ulp(near, source), near + ulp(near, source)])
        kept = (np.abs(values) <= fmt.max_finite) & ((values > 0) | fmt.has_zero)
        values = np.unique(values[kept])
        return values.astype(np_dtype(source)) if len(values) else None
    info = int_info(source)
    whole = {int(p) + d for p in points if 1 <= abs(p) < np.inf for d in (-1, 0, 1)}
    values = sorted(v for v in whole if int(info.min) <= v <= int(info.max))
    return np.array(values, dtype=np_dtype(source)) if values else None


def conversion_case(spec: OpSpec, label: str, *, seed: int) -> Case | None:
    """The ``critical`` case of a one-input, element-aligned conversion op (output type given by
    the attribute ``new_dtype``, dtype label ``SRC->DST``): :func:`conversion_values`, shuffled; None for a
    conversion to the same type or where there are no such values."""
    if spec.output_dtype != "attr:new_dtype" or len(spec.inputs) != 1 or "->" not in label \
            or spec.definition.feeding != "aligned":   # a bitcast reshapes: not a value conversion
        return None
    source, target = label.split("->")
    if source == target:
        return None
    values = conversion_values(source, target)
    if values is None:
        return None
    fill_seed = seed_of(spec, label, "critical", seed)
    values = values[np.random.default_rng(fill_seed).permutation(len(values))]
    return Case(id=f"{spec.op}.{label}.critical", op=spec.op, dtype=label, input_dtypes=(source,),
                out_dtype=target, inputs=[values], attrs={**fixed_attrs(spec), "new_dtype": target},
                plan="critical", seed=fill_seed)


def critical_cases(spec: OpSpec, label: str, *, seed: int) -> list[Case]:
    """The run's ``critical`` cases of ``spec`` under dtype label ``label`` (none, or one)."""
    found = critical_case(spec, label, seed=seed) if "->" not in label else \
        conversion_case(spec, label, seed=seed)
    return [found] if found is not None else []


__all__ = ["conversion_case", "conversion_values", "critical_case", "critical_cases",
           "region_offsets", "region_values"]
