"""ONNX MelWeightMatrix (ai.onnx, opset 17), written from the operator text
(``onnx.defs.get_schema("MelWeightMatrix", 17)``), with what it leaves open marked open.

The text fixes: the output's shape ``[floor(dft_length / 2) + 1][num_mel_bins]``; the mel scale
``mel(f) = 2595 * log10(1 + f / 700)``; num_mel_bins triangular bands 'based on the
[lower_edge_hertz, upper_edge_hertz] range on the mel scale', lower_edge_hertz 'the lower edge
of the lowest triangular band' and upper_edge_hertz 'the desired top edge of the highest
frequency band'; sample_rate 'used to figure out the frequencies corresponding to each
spectrogram bin' (bin k of a dft_length-point DFT is at k * sample_rate / dft_length); and 'In
the returned matrix, all the triangles (filterbanks) have a peak value of 1.0', so each band's
edges fall on bins and its peak bin holds 1.0.

The reference reading: the num_mel_bins + 2 band edges equally spaced in mel from the lower to
the upper edge, each at bin ``floor(dft_length * f / sample_rate)``; band i rises linearly from
0 at its edge bin l to 1 at its centre bin c and falls to 0 at its upper edge bin h. The text
does not say how a frequency becomes a bin, nor in which precision the edges are computed: an
element is open (:func:`open_mask`) where another reading gives another value: the onnx
package's node test (edges spaced by 1/(num_mel_bins + 2) of the mel range, so that the top
edge falls short of upper_edge_hertz, and bins ``floor((dft_length + 1) * f / sample_rate)``),
rounding to the nearest bin, and each edge frequency perturbed by 2**-10 relative.
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import is_integer, np_dtype
from conform.op_registry import op
from conform.ops._lowering import from_onnx_element_types

NAMES = ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")
#: (divisor offset, dft_length offset, rounding) of the reference reading and the others
READINGS = ((1, 0, np.floor), (2, 1, np.floor), (1, 0, np.rint))
PERTURBATION = 2.0 ** -10   # the edges computed in float16 (the text names no precision)


def mel(f):
    """The text's mel scale: 2595 log10(1 + f / 700)."""
    return 2595 * np.log10(1 + f / 700)


def edge_bins(bands, length, rate, low, high, reading=READINGS[0], scale=1.0) -> np.ndarray:
    """The bands + 2 edge bins: mel points from mel(low) in steps of (mel(high) - mel(low)) /
    (bands + divisor offset), back to hertz (low, and high where it is an edge, exactly), times
    ``scale``, mapped to bins."""
    extra, more, rounding = reading
    points = mel(low) + np.arange(bands + 2) * (mel(high) - mel(low)) / (bands + extra)
    hertz = 700 * (10 ** (points / 2595) - 1)
    hertz[0] = low   # the mel round trip exactly at the ends the text names
    if extra == 1:
        hertz[-1] = high
    hertz = hertz * scale
    return rounding((length + more) * hertz / rate).astype(np.int64)


def triangles(bins: np.ndarray, rows: int) -> np.ndarray:
    """[rows][bands]: band i rises from 0 at bins[i] to 1 at bins[i + 1], falls to 0 at
    bins[i + 2] (a band whose edges meet is 1 at its centre bin alone)."""
    k = np.arange(rows)[:, None]
    low, centre, high = bins[None, :-2], bins[None, 1:-1], bins[None, 2:]
    rising = np.where((low <= k) & (k < centre), (k - low) / np.maximum(centre - low, 1), 0.0)
    falling = np.where((centre < k) & (k < high), (high - k) / np.maximum(high - centre, 1), 0.0)
    return np.where(k == centre, 1.0, rising + falling)


def _parameters(inputs):
    bands, length, rate = (int(x) for x in inputs[:3])
    return bands, length, rate, float(inputs[3]), float(inputs[4])


def open_mask(inputs, output_datatype: str) -> np.ndarray:
    """Elements another reading gives another value (and, for an integer output, fractions:
    Cast names no rounding from float to fixed point)."""
    bands, length, rate, low, high = _parameters(inputs)
    rows = length // 2 + 1
    reference = triangles(edge_bins(bands, length, rate, low, high), rows)
    opened = np.zeros(reference.shape, bool)
    for reading in READINGS:
        for scale in (1 - PERTURBATION, 1.0, 1 + PERTURBATION):
            other = edge_bins(bands, length, rate, low, high, reading, scale)
            opened |= triangles(other, rows) != reference
    if is_integer(output_datatype):
        opened |= (reference != 0) & (reference != 1)
    return opened


def draw_mel(draw, kit, spec, dtype):
    """T1 (int32 or int64) for the three counts, T2 (a float type) for the two edges, the
    output type as output_datatype (left out for float half the time)."""
    st = kit.st
    index = draw(st.sampled_from(("int32", "int64")))
    edge = draw(st.sampled_from(("float16", "bfloat16", "float32", "float64")))
    attrs = {} if dtype == "float32" and draw(st.booleans()) else {"output_datatype": dtype}
    return kit.Signature((index,) * 3 + (edge,) * 2, ((),) * 5, attrs, dtype)


def fill_mel(rng, signature, plan):
    """1 to 10 bands, dft_length 2 to 64, sample_rate 1000 to 48000, 0 <= lower < upper <=
    0.45 sample_rate (below Nyquist, whatever the reading), the edges in their own type."""
    index, edge = (np_dtype(t) for t in signature.input_dtypes[2:4])
    rate = int(rng.integers(1000, 48001))
    low = np.asarray(rng.uniform(0, rate / 4), edge)
    high = np.asarray(rng.uniform(float(low) + rate / 20, 0.45 * rate), edge)
    if float(high) > 0.45 * rate:   # rounded up past the bound in a narrow type
        high = np.asarray(np.nextafter(np.float32(0.45 * rate), 0), edge)
    return [np.asarray(int(rng.integers(1, 11)), index), np.asarray(int(rng.integers(2, 65)), index),
            np.asarray(rate, index), low, high]


def onnx_mel(case, graph):
    """One node; output_datatype as the TensorProto enum where the case gives it."""
    attrs = {}
    if "output_datatype" in case.attrs:
        attrs["output_datatype"] = graph.onnx_type(case.attrs["output_datatype"])
    graph.node(graph.op_type, list(graph.inputs), **attrs)


@op("onnx_mel_weight_matrix", version=1, draw=draw_mel, fill=fill_mel,
    draw_honours=frozenset({"scalar"}), value_dependent_shape=True,
    feeding=lambda inputs, attrs, index: [None] * len(inputs), onnx=onnx_mel,
    from_onnx=from_onnx_element_types("output_datatype"))
def oracle_mel_weight_matrix(*inputs, output_datatype="float32", open_elements=False):
    """The reference reading's matrix (see the module docstring); with ``open_elements`` the
    mask of the elements the text leaves open."""
    if open_elements:
        return (open_mask(inputs, output_datatype),)
    bands, length, rate, low, high = _parameters(inputs)
    return (triangles(edge_bins(bands, length, rate, low, high), length // 2 + 1),)

