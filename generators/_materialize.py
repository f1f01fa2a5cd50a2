"""A drawn plan made a Case: its input arrays filled from the plan's seed."""
from __future__ import annotations

import numpy as np

from conform.dtypes import np_dtype
from conform.generators._case import Case
from conform.generators._values import edge_values, fill, value_range
from conform.spec import OpSpec, dtype_class


def materialize(spec: OpSpec, dtype: str, index: int, plan, edges: dict | None = None) -> Case:
    """Turn a drawn plan into a Case with concrete input arrays (filled by the value plan, or
    by the op's own ``fill`` hook where it has one).

    ``edges`` caches the spec's edge values per input dtype across calls.
    """
    signature, value_plan, fill_seed = plan
    rng = np.random.default_rng(fill_seed)
    if spec.definition.fill is not None:
        inputs = [np.asarray(x).astype(np_dtype(d)) for x, d in
                  zip(spec.definition.fill(rng, signature, value_plan), signature.input_dtypes)]
    else:
        inputs = _filled(spec, signature, value_plan, rng, {} if edges is None else edges)
    if spec.definition.values is not None:   # values the drawn shapes constrain (indices)
        inputs = list(spec.definition.values(rng, inputs, signature.attrs))
    return Case(id=f"{spec.op}.{dtype}.{index}", op=spec.op, dtype=dtype,
                input_dtypes=signature.input_dtypes, out_dtype=signature.out_dtype, inputs=inputs,
                attrs=signature.attrs, plan=value_plan, seed=fill_seed)


def _filled(spec: OpSpec, signature, value_plan: str, rng, edges: dict) -> list:
    """Each input of ``signature`` filled by ``value_plan`` from the spec's ranges and edges."""
    inputs = []
    names = spec.present_inputs(signature.attrs)   # absent optional inputs are not in the case
    for i, (in_dtype, shape) in enumerate(zip(signature.input_dtypes, signature.shapes)):
        name = names[min(i, len(names) - 1)]
        low, high = value_range(spec, name, in_dtype) if dtype_class(in_dtype) != "bool" else (0, 1)
        if in_dtype not in edges:
            edges[in_dtype] = edge_values(spec, in_dtype)
        inputs.append(fill(rng, shape=shape, dtype=in_dtype, plan=value_plan, low=low, high=high,
                           edges=edges[in_dtype]))
    return inputs
