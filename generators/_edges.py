"""Dedicated cases for element-wise ops: the spec's edge-case table, a sweep over every pair of
edge values, and exhaustive 16-bit inputs."""
from __future__ import annotations

import zlib

import numpy as np

from conform.generators._case import Case
from conform.generators._values import edge_values, fill, value_range
from conform.spec import OpSpec, dtype_class
from conform.spec.dtypes import np_dtype, resolve_edge_value

EDGE_CASE_SIZE = 8  # >= 8 elements: vectorised kernels, not scalar tails


def _case(spec: OpSpec, dtype: str, suffix: str, inputs: list, plan: str, seed: int) -> Case:
    out_dtype = "bool" if spec.output_dtype == "bool" else dtype
    return Case(id=f"{spec.op}.{dtype}.{suffix}", op=spec.op, dtype=dtype,
                input_dtypes=(dtype,) * len(inputs), out_dtype=out_dtype, inputs=inputs, attrs={},
                plan=plan, seed=seed)


def _seed(spec: OpSpec, dtype: str, suffix: str, seed: int) -> int:
    return (seed ^ zlib.crc32(f"{spec.op}/{dtype}/{suffix}".encode())) & 0xFFFFFFFF


def edge_case_cases(spec: OpSpec, dtype: str, *, seed: int) -> list[Case]:
    """One case per ``edge_cases`` entry of the spec that ``dtype`` can express.

    The entry's values sit at a random position (not only the first) of an 8-element tensor
    whose other elements are ordinary values from the spec's range.
    """
    cases = []
    for k, entry in enumerate(spec.edge_cases):
        try:
            values = [resolve_edge_value(entry[name], dtype) if name in entry else None
                      for name in spec.inputs]
        except KeyError:
            continue  # e.g. int_min under a float dtype
        if not _representable(values, dtype):
            continue
        fill_seed = _seed(spec, dtype, f"edge{k}", seed)
        rng = np.random.default_rng(fill_seed)
        position = int(rng.integers(0, EDGE_CASE_SIZE))
        inputs = []
        for name, value in zip(spec.inputs, values):
            low, high = value_range(spec, name, dtype)
            array = fill(rng, shape=(EDGE_CASE_SIZE,), dtype=dtype, plan="normal", low=low,
                         high=high, edges=edge_values(spec, dtype))
            if value is not None:
                array[position] = value
            inputs.append(array)
        cases.append(_case(spec, dtype, f"edge{k}", inputs, "edge_case", fill_seed))
    return cases


def _representable(values, dtype: str) -> bool:
    if dtype_class(dtype) != "int":
        return True
    info = np.iinfo(np_dtype(dtype))
    return all(v is None or info.min <= v <= info.max for v in values)


def edge_sweep_case(spec: OpSpec, dtype: str, *, seed: int) -> Case | None:
    """Every edge value of ``dtype`` against every other (all pairs for a binary op), shuffled so
    that specials are not only in the first position. None for ops with more than two inputs."""
    edges = edge_values(spec, dtype)
    if len(spec.inputs) > 2 or not len(edges):
        return None
    grids = np.meshgrid(*([edges] * len(spec.inputs)), indexing="ij")
    fill_seed = _seed(spec, dtype, "sweep", seed)
    order = np.random.default_rng(fill_seed).permutation(grids[0].size)
    inputs = [grid.ravel()[order] for grid in grids]
    return _case(spec, dtype, "sweep", inputs, "edge_sweep", fill_seed)


EXHAUSTIVE_DTYPES = {"float16": np.uint16, "bfloat16": np.uint16}


def exhaustive_case(spec: OpSpec, dtype: str) -> Case | None:
    """All 65,536 bit patterns of a 16-bit float as one input vector (unary element-wise ops)."""
    if spec.family != "elementwise" or len(spec.inputs) != 1 or dtype not in EXHAUSTIVE_DTYPES:
        return None
    patterns = np.arange(1 << 16, dtype=np.uint32).astype(EXHAUSTIVE_DTYPES[dtype])
    return _case(spec, dtype, "exhaustive", [patterns.view(np_dtype(dtype))], "exhaustive", 0)
