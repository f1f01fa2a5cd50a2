"""Consistency cases: the same values in permuted positions, for ops with open regions.

Where a standard leaves an answer open, the judge checks that a backend gives the same answer
for the same values wherever they sit (harness/judge/consistency.py). These cases make sure the
same values do sit in several places:

* an element-wise op with implementation-defined regions: its edge sweep (every edge value
  against every other) three times over, in its own order, shuffled and reversed, so that each
  combination of special values is computed at three positions of a longer tensor (a vectorised
  body and a scalar tail among them);
* an op of one input whose region entry declares ``consistency`` and which takes an integer
  ``axis``: one slice of a drawn case, with a NaN in it, in every rotation and every rotation of
  its reverse, each a slice along ``axis`` of one tensor (the NaN at every position, once after
  and once before each other value). Two cases: the rotations that leave the NaN inside
  (``consistency``), and all of them (``consistency_leading``), so that the common position
  dependence, a loop whose first element is its initial best (a leading NaN wins, any other
  loses), does not hide another one.
"""
from __future__ import annotations

import numpy as np

from conform.generators._case import Case
from conform.generators._edges import edge_sweep_case, seed_of
from conform.op_registry import regions
from conform.spec import OpSpec

MAX_SLICE = 8   # values of the permuted slice (2 * MAX_SLICE slices of it)


def consistency_cases(spec: OpSpec, dtype: str, drawn: list[Case], *, seed: int) -> list[Case]:
    """The consistency case of ``spec`` x ``dtype`` (none where the op has no open region, or
    its layout fits none above)."""
    if not _open_in(spec, dtype):
        return []
    if spec.elementwise:
        case = _repeated_sweep(spec, dtype, seed)
        return [case] if case is not None else []
    if any("consistency" in entry for entry in spec.implementation_defined):
        return [case for leading in (False, True)
                if (case := _rotated_slices(spec, dtype, drawn, seed, leading)) is not None]
    return []


def _open_in(spec: OpSpec, dtype: str) -> bool:
    """Whether some region the spec declares can hold results of ``dtype``: any region, but one
    whose function names the only output dtypes it can hold (its ``only_dtypes``, as
    ops/narrow_floats.py's for float4 and E8M0)."""
    declared = regions()
    return any(dtype in getattr(declared.get(entry["region"]), "only_dtypes", (dtype,))
               for entry in spec.implementation_defined)


def _case(spec: OpSpec, dtype: str, like: Case, inputs: list, attrs: dict, seed: int,
          suffix: str = "consistency") -> Case:
    return Case(id=f"{spec.op}.{dtype}.{suffix}", op=spec.op, dtype=dtype,
                input_dtypes=like.input_dtypes, out_dtype=like.out_dtype, inputs=inputs,
                attrs=attrs, plan="consistency", seed=seed_of(spec, dtype, "consistency", seed))


def _repeated_sweep(spec: OpSpec, dtype: str, seed: int) -> Case | None:
    sweep = edge_sweep_case(spec, dtype, seed=seed)
    if sweep is None or sweep.inputs[0].size < 2:
        return None
    order = np.random.default_rng(seed_of(spec, dtype, "consistency", seed)) \
        .permutation(sweep.inputs[0].size)
    inputs = [np.concatenate([x, x[order], x[::-1]]) for x in sweep.inputs]
    return _case(spec, dtype, sweep, inputs, sweep.attrs, seed)


def _rotated_slices(spec: OpSpec, dtype: str, drawn: list[Case], seed: int,
                    leading: bool) -> Case | None:
    base = next((c for c in drawn if len(c.inputs) == 1 and np.asarray(c.inputs[0]).ndim >= 1
                 and isinstance(c.attrs.get("axis"), int)
                 and np.asarray(c.inputs[0]).shape[c.attrs["axis"]] >= 2
                 and np.asarray(c.inputs[0]).size > 0
                 and np.asarray(c.inputs[0]).dtype.kind == "f"), None)
    if base is None:
        return None
    x, axis = np.asarray(base.inputs[0]), base.attrs["axis"]
    values = np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])[0][:MAX_SLICE].copy()
    values[0] = np.nan
    n = values.size
    slices = np.stack([np.roll(v, r) for v in (values, values[::-1]) for r in range(n)])
    if not leading:
        slices = slices[~np.isnan(slices[:, 0])]
    attrs = dict(base.attrs)
    if x.ndim == 1:   # a second dimension holds the slices; axis keeps naming the slices' own
        data, attrs["axis"] = slices, (1 if axis >= 0 else -1)
    else:
        axis %= x.ndim
        other = 0 if axis != 0 else 1
        shape = [1] * x.ndim
        shape[axis], shape[other] = n, len(slices)
        data = np.empty(shape, x.dtype)
        np.moveaxis(data, (other, axis), (0, 1))[...] = slices.reshape(
            slices.shape + (1,) * (x.ndim - 2))
    return _case(spec, dtype, base, [np.ascontiguousarray(data, dtype=x.dtype)], attrs, seed,
                 "consistency_leading" if leading else "consistency")
