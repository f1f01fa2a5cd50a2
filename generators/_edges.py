"""Dedicated cases for element-wise ops: the spec's edge-case table, a sweep over every pair of
edge values, and exhaustive 16-bit inputs."""
from __future__ import annotations

import zlib

import numpy as np

from conform.generators._case import Case
from conform.generators._signature import fixed_attrs
from conform.generators._values import edge_values, fill, value_range
from conform.spec import OpSpec, dtype_class
from conform.dtypes import (FLOAT_FORMATS, int_info, is_integer, np_dtype, resolve_edge_value,
                            result_dtype)

EDGE_CASE_SIZE = 8  # >= 8 elements: vectorised kernels, not scalar tails


def _case(spec: OpSpec, dtype: str, suffix: str, inputs: list, plan: str, seed: int) -> Case:
    out_dtype = result_dtype(spec.output_dtype, dtype)
    return Case(id=f"{spec.op}.{dtype}.{suffix}", op=spec.op, dtype=dtype,
                input_dtypes=(dtype,) * len(inputs), out_dtype=out_dtype, inputs=inputs,
                attrs=fixed_attrs(spec),
                plan=plan, seed=seed)


def seed_of(spec: OpSpec, dtype: str, suffix: str, seed: int) -> int:
    """The fill seed of a dedicated case (its id's ``suffix``) of ``spec`` under ``dtype``."""
    return (seed ^ zlib.crc32(f"{spec.op}/{dtype}/{suffix}".encode())) & 0xFFFFFFFF


def edge_case_cases(spec: OpSpec, dtype: str, *, seed: int) -> list[Case]:
    """One case per ``edge_cases`` entry of the spec that ``dtype`` can express.

    The entry's values sit at a random position (not only the first) of an 8-element tensor
    whose other elements are ordinary values from the spec's range, none of them a value that
    an entry names for its input (:func:`_apart`): each named combination is alone in its
    tensor, so that a backend refusing one (a zero divisor) is still judged on the others
    (INT_MIN / -1).
    """
    resolved = [_resolved(spec, entry, dtype) for entry in spec.edge_cases]
    cases = []
    for k, values in enumerate(resolved):
        if values is None or not _representable(values, dtype):
            continue   # e.g. int_min under a float dtype
        fill_seed = seed_of(spec, dtype, f"edge{k}", seed)
        rng = np.random.default_rng(fill_seed)
        position = int(rng.integers(0, EDGE_CASE_SIZE))
        inputs = []
        for i, (name, value) in enumerate(zip(spec.inputs, values)):
            low, high = value_range(spec, name, dtype)
            array = fill(rng, shape=(EDGE_CASE_SIZE,), dtype=dtype, plan="normal", low=low,
                         high=high, edges=edge_values(spec, dtype))
            array = _apart(array, [v[i] for v in resolved if v is not None], rng)
            if value is not None:
                array[position] = value
            inputs.append(array)
        cases.append(_case(spec, dtype, f"edge{k}", inputs, "edge_case", fill_seed))
    return cases


def _resolved(spec: OpSpec, entry: dict, dtype: str) -> list | None:
    """An ``edge_cases`` entry's value per input (None where it names none) in ``dtype``, or
    None where ``dtype`` has no such value."""
    try:
        return [resolve_edge_value(entry[name], dtype) if name in entry else None
                for name in spec.inputs]
    except KeyError:
        return None


def _apart(array: np.ndarray, named: list, rng) -> np.ndarray:
    """``array`` with each element equal to one of the ``named`` values (None: none named;
    NaN matching NaN, zeros of either sign alike) replaced by one of its other elements, or,
    where every element is named (a 2- or 4-bit integer type), by another value of the type."""
    named = [v for v in named if v is not None]
    if not named or array.dtype.kind not in "iufV":   # ml_dtypes' types are of kind "V"
        return array
    values = np.asarray(named, np.float64)
    wide = array.astype(np.float64)
    hit = np.isin(wide, values[~np.isnan(values)]) | (np.isnan(wide) & np.isnan(values).any())
    others = array[~hit]
    if hit.all() and is_integer(array.dtype.name):   # a 2- or 4-bit type: few values to draw
        info = int_info(array.dtype.name)
        others = np.asarray([v for v in range(info.min, min(info.max, info.min + 64) + 1)
                             if v not in values], array.dtype)
    if hit.any() and others.size:
        array = array.copy()
        array[hit] = rng.choice(others, int(hit.sum()))
    return array


def _representable(values, dtype: str) -> bool:
    if dtype_class(dtype) == "bool":   # an integer op's entries (-1, int_min) are no truth value
        return all(v is None or v in (0, 1) for v in values)
    if dtype_class(dtype) != "int":
        return True
    info = int_info(dtype)
    return all(v is None or info.min <= v <= info.max for v in values)


def edge_sweep_case(spec: OpSpec, dtype: str, *, seed: int) -> Case | None:
    """Every edge value of ``dtype`` against every other (all pairs for a binary op), shuffled so
    that specials are not only in the first position. None for ops with more than two inputs."""
    edges = edge_values(spec, dtype)
    if len(spec.inputs) > 2 or not len(edges):
        return None
    grids = np.meshgrid(*([edges] * len(spec.inputs)), indexing="ij")
    fill_seed = seed_of(spec, dtype, "sweep", seed)
    order = np.random.default_rng(fill_seed).permutation(grids[0].size)
    inputs = [grid.ravel()[order] for grid in grids]
    return _case(spec, dtype, "sweep", inputs, "edge_sweep", fill_seed)


#: The broadcast case's full shape: each input has size 1 in one of its dimensions.
BROADCAST_SHAPE = (4, 3)


def broadcast_case(spec: OpSpec, dtype: str, *, seed: int) -> Case | None:
    """A case whose inputs broadcast against each other with equal ranks (input k has size 1
    in dimension k mod 2 of :data:`BROADCAST_SHAPE`: (1, 3) against (4, 1) for two inputs), for
    an element-wise op whose shapes broadcast the ONNX or the NNEF way; None for the others.
    A drawn signature gives a size-1 dimension only now and then: this one always does."""
    if spec.signature.get("shapes") not in ("onnx_broadcast", "nnef_broadcast") \
            or len(spec.inputs) < 2 or spec.optional_inputs:
        return None
    shapes = []
    for k in range(len(spec.inputs)):
        shape = list(BROADCAST_SHAPE)
        shape[k % len(shape)] = 1
        shapes.append(tuple(shape))
    return _case(spec, dtype, "broadcast", broadcast_inputs(spec, dtype, shapes, seed=seed),
                 "broadcast", seed_of(spec, dtype, "broadcast", seed))


def broadcast_inputs(spec: OpSpec, dtype: str, shapes: list, *, seed: int) -> list:
    """The broadcast case's inputs at ``shapes`` (one per input), filled from its own seed."""
    rng = np.random.default_rng(seed_of(spec, dtype, "broadcast", seed))
    inputs = []
    for name, shape in zip(spec.inputs, shapes):
        low, high = value_range(spec, name, dtype)
        inputs.append(fill(rng, shape=tuple(shape), dtype=dtype, plan="normal", low=low,
                           high=high, edges=edge_values(spec, dtype)))
    return inputs


def midpoint_case(spec: OpSpec, dtype: str, *, seed: int) -> Case | None:
    """The op's ``midpoints`` hook's case for ``dtype`` (inputs whose exact results are rounding
    midpoints of the output type, and results beside them), where the output is judged by the
    ``correctly_rounded`` model; None where the op has no such hook or the model is another."""
    hook = spec.definition.midpoints
    if hook is None:
        return None
    fill_seed = seed_of(spec, dtype, "midpoint", seed)
    made = hook(np.random.default_rng(fill_seed), spec, dtype)
    if made is None:
        return None
    inputs, attrs, out_dtype = made
    if not spec.model_for(out_dtype).get("correctly_rounded"):
        return None
    return Case(id=f"{spec.op}.{dtype}.midpoint", op=spec.op, dtype=dtype,
                input_dtypes=tuple(str(x.dtype) for x in inputs), out_dtype=out_dtype,
                inputs=list(inputs), attrs={**fixed_attrs(spec), **attrs}, plan="midpoint",
                seed=fill_seed)


def every_value_case(spec: OpSpec, dtype: str) -> Case | None:
    """The whole suite of a unary element-wise op under a float type of at most 8 bits (float8,
    float4): one case holding every bit pattern of the type (256, or 16 for float4), NaN and
    infinities included; None for any other op or type.

    Such a type has so few values that one case judges each of them, and so every edge,
    critical and midpoint value the other plans would draw: one shape, one kernel per cell.

    >>> every_value_case(spec, "float8_e4m3fn").inputs[0].size   # doctest: +SKIP
    256
    """
    fmt = FLOAT_FORMATS.get(dtype)
    if not spec.elementwise or len(spec.inputs) != 1 or fmt is None or not 0 < fmt.bits <= 8:
        return None
    patterns = np.arange(1 << fmt.bits, dtype=np.uint8)
    return _case(spec, dtype, "every_value", [patterns.view(np_dtype(dtype))], "every_value", 0)


EXHAUSTIVE_BITS = {"float16": 16, "bfloat16": 16, "float32": 32}
CHUNK_BITS = 22  # float32 sweeps stream in chunks of 2**22 inputs: bounded memory per worker


def exhaustive_cases(spec: OpSpec, dtype: str) -> list | None:
    """Every bit pattern of ``dtype`` as input to a unary element-wise op, or None.

    16-bit types give one case of 65,536 elements; float32 gives 1,024 chunks of 2**22 bit
    patterns each, yielded lazily (call ``len`` on the result for the count).
    """
    if not spec.elementwise or len(spec.inputs) != 1 or dtype not in EXHAUSTIVE_BITS:
        return None
    bits = EXHAUSTIVE_BITS[dtype]
    if bits == 16:
        patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
        return [_case(spec, dtype, "exhaustive", [patterns.view(np_dtype(dtype))], "exhaustive", 0)]
    return _Chunks(spec, dtype, 1 << (bits - CHUNK_BITS))


class _Chunks:
    """A lazy sequence of the float32 sweep's chunk cases."""

    def __init__(self, spec: OpSpec, dtype: str, count: int):
        self.spec, self.dtype, self.count = spec, dtype, count

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        for chunk in range(self.count):
            yield self[chunk]

    def __getitem__(self, chunk: int) -> Case:
        """Chunk ``chunk``: the float32 bit patterns ``chunk * 2**22`` up to the next chunk's."""
        if not 0 <= chunk < self.count:
            raise IndexError(f"a float32 sweep has chunks 0 to {self.count - 1}, not {chunk}")
        size = 1 << CHUNK_BITS
        return bit_range_case(self.spec, self.dtype, chunk * size, (chunk + 1) * size,
                              suffix=f"exhaustive{chunk:04d}", seed=chunk)


def bit_range_case(spec: OpSpec, dtype: str, first: int, stop: int, *, suffix: str | None = None,
                   seed: int = 0) -> Case:
    """The case of a unary element-wise op whose input is every bit pattern of ``dtype`` from
    ``first`` up to (not including) ``stop``, in order (plan ``exhaustive``); ``suffix`` ends
    its id (default ``bits<first>-<stop>``, in hex).

    >>> bit_range_case(spec, "float32", 0x3f800000, 0x3f800004).inputs[0].tolist()  # doctest: +SKIP
    [1.0, 1.0000001192092896, 1.0000002384185791, 1.0000003576278687]
    """
    bits = EXHAUSTIVE_BITS[dtype]
    if not 0 <= first <= stop <= 1 << bits:
        raise ValueError(f"bit range {first:#x}:{stop:#x} is outside {dtype}'s 0:{1 << bits:#x}")
    suffix = suffix or f"bits{first:0{bits // 4}x}-{stop:0{bits // 4}x}"
    return _case(spec, dtype, suffix, bit_range_inputs(dtype, first, stop), "exhaustive", seed)


def bit_range_inputs(dtype: str, first: int, stop: int) -> list:
    """:func:`bit_range_case`'s inputs: the ``dtype`` values of the bit patterns ``first`` to
    ``stop`` (one past the last), in order."""
    patterns = np.arange(first, stop, dtype=np.uint32 if EXHAUSTIVE_BITS[dtype] == 32 else np.uint16)
    return [patterns.view(np_dtype(dtype))]


def exhaustive_case(spec: OpSpec, dtype: str, chunk: int | None = None) -> Case | None:
    """The single exhaustive case of a 16-bit float type, or chunk ``chunk`` of a float32 sweep
    (see :func:`exhaustive_cases`); None where there is no such case.

    >>> exhaustive_case(spec, "float32", 3).id   # doctest: +SKIP
    'tanh.float32.exhaustive0003'
    """
    cases = exhaustive_cases(spec, dtype)
    chunked = isinstance(cases, _Chunks)
    if not cases or chunked != (chunk is not None):   # a chunk index for float32 only, and needed
        return None
    try:
        return cases[0 if chunk is None else chunk]
    except IndexError:
        return None
