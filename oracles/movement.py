"""Data-movement oracles (XLA Transpose, Reshape, BroadcastInDim, Slice, Pad, Concatenate): exact."""
from __future__ import annotations

import numpy as np


def oracle_transpose(operand, *, permutation):
    """out.shape[i] = operand.shape[permutation[i]]."""
    return (np.transpose(operand, permutation),)


def oracle_reshape(operand, *, new_sizes):
    """Row-major (last dimension fastest) reshape to ``new_sizes``."""
    return (np.reshape(operand, new_sizes),)


def oracle_broadcast_in_dim(operand, *, shape, broadcast_dimensions):
    """Operand dimension i maps to output dimension broadcast_dimensions[i]; size-1 dims broadcast."""
    expanded = [1] * len(shape)
    for operand_dim, out_dim in enumerate(broadcast_dimensions):
        expanded[out_dim] = operand.shape[operand_dim]
    return (np.broadcast_to(operand.reshape(expanded), shape).copy(),)


def oracle_slice(operand, *, start_indices, limit_indices, strides):
    """operand[start:limit:stride] in every dimension."""
    index = tuple(slice(s, e, k) for s, e, k in zip(start_indices, limit_indices, strides))
    return (operand[index],)


def oracle_pad(operand, padding_value, *, padding_config):
    """XLA Pad: interior padding first, then edge padding (negative edges remove elements)."""
    out = operand
    for axis, (low, high, interior) in enumerate(padding_config):
        size = out.shape[axis]
        grown = list(out.shape)
        grown[axis] = size + max(size - 1, 0) * interior
        spread = np.full(grown, padding_value, dtype=out.dtype)
        spread[(slice(None),) * axis + (slice(None, None, interior + 1),)] = out
        widths = [(0, 0)] * out.ndim
        widths[axis] = (max(low, 0), max(high, 0))
        spread = np.pad(spread, widths, constant_values=padding_value)
        stop = spread.shape[axis] - max(-high, 0)
        out = spread[(slice(None),) * axis + (slice(max(-low, 0), stop),)]
    return (out,)


def oracle_concatenate(*operands, dimension):
    """Operands joined along ``dimension`` in order."""
    return (np.concatenate(operands, axis=dimension),)


def oracle_tile(operand, *, repeats):
    """The operand repeated ``repeats[i]`` times along dimension i (NNEF tile, ONNX Tile):
    out[j...] = operand[j_0 mod s_0, j_1 mod s_1, ...]."""
    return (np.tile(operand, repeats),)


def oracle_squeeze(operand, *, axes):
    """The operand without its size-1 dimensions ``axes`` (NNEF squeeze, ONNX Squeeze)."""
    return (np.squeeze(operand, axis=tuple(axes)),)


def oracle_unsqueeze(operand, *, axes):
    """The operand with size-1 dimensions inserted so that they sit at ``axes`` of the result
    (NNEF unsqueeze, ONNX Unsqueeze: the axes index the output)."""
    return (np.expand_dims(operand, tuple(axes)),)
