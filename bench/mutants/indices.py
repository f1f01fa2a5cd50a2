"""Mutants of ties and indices: top-k, arg-max and gather orders, one-hot and cumulative sums,
transpose and broadcast operands."""
from __future__ import annotations

import numpy as np

from bench.mutants.base import OrtMutant, _named, _search, ORT, TVM


# ---- ties and indices --------------------------------------------------------------------------

class TopKTiesByDescendingIndex(OrtMutant):
    """TopK ordering equal values by descending index (an unstable sort) instead of ascending."""

    targets = ("onnx_top_k",)
    bug = "wrong tie-break order in TopK"
    resembles = _search(ORT, "TopK tie order index")

    def mutate(self, program, inputs, outputs):
        values, indices = outputs
        axis = program.attrs.get("axis", -1)
        v, i = np.moveaxis(values, axis, -1).copy(), np.moveaxis(indices, axis, -1).copy()
        vf, iflat = v.reshape(-1, v.shape[-1] if v.ndim else 1), i.reshape(-1, i.shape[-1] if i.ndim else 1)
        for row in range(vf.shape[0]):
            start = 0
            n = vf.shape[1]
            while start < n:
                end = start + 1
                while end < n and vf[row, end] == vf[row, start]:
                    end += 1
                iflat[row, start:end] = iflat[row, start:end][::-1]
                start = end
        return [values, np.moveaxis(iflat.reshape(i.shape), -1, axis)]


class ArgMaxLastOnTies(OrtMutant):
    """ArgMax returning the last of equal maxima when select_last_index = 0 asks for the first."""

    targets = ("onnx_arg_max",)
    bug = "wrong tie-break in ArgMax"
    resembles = _search(ORT, "ArgMax select_last_index ties")

    def mutate(self, program, inputs, outputs):
        if program.attrs.get("select_last_index", 0):
            return outputs
        data = inputs[0]
        axis = program.attrs.get("axis", 0)
        flipped = np.flip(data, axis=axis)
        idx = data.shape[axis] - 1 - np.argmax(flipped, axis=axis)
        if program.attrs.get("keepdims", 1):
            idx = np.expand_dims(idx, axis)
        return [idx.astype(np.int64)]


class ArgMaxNaNByPosition(OrtMutant):
    """ArgMax whose answer for a slice holding a NaN depends on where the NaN sits: the NaN's index
    where it is at an odd position, the largest number's elsewhere (a kernel that takes pairs of
    elements and compares them with a NaN-blind max). Either answer alone is the text's open
    region; one or the other by position is not."""

    targets = ("onnx_arg_max",)
    affects = ("float32",)
    bug = "ArgMax NaN answer depending on position"
    resembles = _search(ORT, "ArgMax NaN")

    def mutate(self, program, inputs, outputs):
        data, out = inputs[0].astype(np.float64), outputs[0]
        if data.ndim == 0 or data.size == 0:
            return outputs
        axis = program.attrs.get("axis", 0) % data.ndim
        moved = np.moveaxis(data, axis, -1)
        nan = np.isnan(moved)
        odd = nan & (np.arange(moved.shape[-1]) % 2 == 1)
        numbers = np.where(nan, -np.inf, moved)
        last = program.attrs.get("select_last_index", 0)
        best = moved.shape[-1] - 1 - np.argmax(numbers[..., ::-1], -1) if last else np.argmax(numbers, -1)
        first_odd = np.argmax(odd, -1)
        idx = np.where(odd.any(-1), first_odd, np.where(nan.all(-1), 0, best))
        idx = np.where(nan.any(-1), idx, np.moveaxis(np.asarray(out), axis, -1)[..., 0]
                       if program.attrs.get("keepdims", 1) else out)
        if program.attrs.get("keepdims", 1):
            idx = np.expand_dims(idx, axis)
        return [idx.astype(out.dtype).reshape(out.shape)]


class GatherNegativeIndexOffByOne(OrtMutant):
    """Gather normalising a negative index i as i + s - 1 instead of i + s."""

    targets = ("onnx_gather",)
    bug = "off-by-one in negative index normalisation"
    resembles = _search(ORT, "Gather negative indices wrong")

    def forward(self, program, inputs):
        data, indices = inputs
        if data.ndim == 0:
            return inputs
        s = data.shape[program.attrs.get("axis", 0)]
        return [data, np.where(indices < 0, indices + s - 1, indices).astype(indices.dtype)]


class OneHotIgnoresNegativeIndices(OrtMutant):
    """OneHot treating a negative index as out of range (a row of off values) instead of
    counting from the end."""

    targets = ("onnx_one_hot",)
    bug = "negative indices unsupported"
    resembles = _search(ORT, "OneHot negative indices")

    def forward(self, program, inputs):
        named = _named(program, inputs)
        indices = named["indices"]
        depth = np.asarray(named["depth"]).reshape(-1)[0]
        named["indices"] = np.where(indices < 0, np.asarray(depth).astype(indices.dtype) * 4 + 7,
                                    indices).astype(indices.dtype)
        return [named[n] for n in program.input_names]


class CumSumIgnoresExclusive(OrtMutant):
    """CumSum ignoring exclusive = 1 (returning the inclusive sums)."""

    targets = ("onnx_cum_sum",)
    bug = "attribute ignored (exclusive scan computed inclusive)"
    resembles = _search(ORT, "CumSum exclusive reverse wrong")

    def mutate(self, program, inputs, outputs):
        if not program.attrs.get("exclusive", 0):
            return outputs
        out = outputs[0]
        with np.errstate(all="ignore"):
            return [(out + inputs[0]).astype(out.dtype)]


class TransposeInversePermutation(OrtMutant):
    """Transpose applying the inverse of perm (axes mixed up for non-involutive perms)."""

    targets = ("onnx_transpose",)
    bug = "wrong axis mapping"
    resembles = _search(TVM, "transpose perm wrong")

    def mutate(self, program, inputs, outputs):
        x = inputs[0]
        perm = program.attrs.get("perm")
        perm = list(range(x.ndim))[::-1] if perm is None else list(perm)
        return [np.ascontiguousarray(np.transpose(x, np.argsort(perm)))]


class AddBroadcastsWrongOperand(OrtMutant):
    """float32 Add broadcasting a size-1 dim of one operand by reading the *other* operand's first
    slice too (a zero stride put on the wrong input)."""

    targets, affects = ("onnx_add",), ("float32",)
    bug = "wrong broadcasting of a size-1 dim"
    resembles = _search(ORT, "broadcast wrong result size 1 dimension")

    def mutate(self, program, inputs, outputs):
        a, b = inputs
        if a.ndim != b.ndim or a.ndim == 0:
            return outputs
        sl = tuple(slice(0, 1) if (db == 1 and da > 1) else slice(None)
                   for da, db in zip(a.shape, b.shape))
        bad = (a[sl] + b).astype(np.float32)
        return [np.ascontiguousarray(np.broadcast_to(bad, outputs[0].shape))]
