"""NNEF box and avg_pool (NNEF 1.0, sliding-window operations; their declarations are the
``nnef`` package's standard fragments, where ``avg_pool`` is ``box`` with ``normalize = true``).

A window of ``size`` taps per dimension (every dimension, batch and channels included), spaced
``dilation`` apart, starts every ``stride`` elements of the input extended by ``padding`` (low,
high) per dimension; the output size is ``floor((size + low + high - dilated window) / stride)
+ 1``. The extension is the ``border``: 'constant' (zeros), 'replicate' (the edge element
repeated), 'reflect' (mirrored about the edge element, which is not repeated), 'reflect-even'
(mirrored with the edge element repeated), or 'ignore' (the padding takes no part). ``box``
sums each window; with ``normalize`` it divides by the window's size, which under 'ignore' is
the number of input elements the window covers.
"""
from __future__ import annotations

import math

import numpy as np

from conform.op_registry import op
from conform.ops._double_double import accurate_sum
from conform.ops.reduction import dilated_taps, reduce_windows

#: NNEF border modes as numpy.pad modes ('ignore' pads with zeros and counts the input only).
PAD_MODES = {"constant": "constant", "ignore": "constant", "replicate": "edge",
             "reflect": "reflect", "reflect-even": "symmetric"}


def box(x, size, border, padding, stride, dilation, normalize):
    """The sum (or, with ``normalize``, the average) of every window of ``x`` (float64, summed
    in double-double)."""
    rank = x.ndim
    stride, dilation = stride or [1] * rank, dilation or [1] * rank
    pads = [tuple(p) for p in padding]
    extended = np.pad(x, pads, mode=PAD_MODES[border])
    windows = reduce_windows(extended, 0, size, stride, [[0, 0]] * rank, None, dilation)
    axes = tuple(range(rank, 2 * rank))
    if not normalize:
        return accurate_sum(windows, axis=axes)
    if border == "ignore":
        inside = np.pad(np.ones(x.shape), pads, mode="constant")
        count = np.sum(reduce_windows(inside, 0, size, stride, [[0, 0]] * rank, None, dilation),
                       axis=axes)
    else:
        count = math.prod(size)
    return accurate_sum(windows, axis=axes, divisor=count)


def draw_box(draw, kit, spec, dtype):
    """A shape of rank 1 to 4, a border from the spec's choices, and per dimension a window
    size of 1 to 3, a stride and a dilation of 1 or 2, explicit padding of 0 to the dilated
    window - 1 per side (within the size - 1 that 'reflect' can mirror, or the size that
    'reflect-even' can), and ``normalize`` where the spec declares it. Padding ``[]`` (NNEF's
    automatic padding) is not drawn."""
    st, domains = kit.st, spec.signature.get("attrs", {})
    shape = draw(kit.shape(min_rank=1, max_rank=4, max_side=6))
    border = draw(st.sampled_from(domains["border"]["choice"]))
    sizes, strides, dilations, padding = [], [], [], []
    for n in shape:
        d = draw(st.integers(1, 2))
        limit = {"reflect": n - 1, "reflect-even": n}.get(border)
        pad = [draw(st.integers(0, 2 if limit is None else min(2, limit))) for _ in range(2)]
        longest = (n + sum(pad) - 1) // d + 1            # the window fits once
        sizes.append(draw(st.integers(1, max(1, min(3, longest)))))
        strides.append(draw(st.integers(1, 2)))
        dilations.append(d)
        padding.append(pad)
    attrs = {"size": sizes, "border": border, "padding": padding, "stride": strides,
             "dilation": dilations}
    if "normalize" in domains:
        attrs["normalize"] = domains["normalize"]
    return kit.Signature((dtype,), (shape,), attrs, dtype)


def feed_box(inputs, attrs, index):
    """The input elements of out[index]'s window; under a mirroring or replicating border an
    input element may enter a window more than once, and is listed once per entry."""
    (x,) = inputs
    rank = x.ndim
    stride, dilation = attrs["stride"] or [1] * rank, attrs["dilation"] or [1] * rank
    if attrs["border"] in ("constant", "ignore"):
        spans = [dilated_taps(i, n, s, w, p[0], 1, d) for i, n, s, w, p, d
                 in zip(index, x.shape, stride, attrs["size"], attrs["padding"], dilation)]
    else:   # the source of each position of the extended input
        spans = [np.pad(np.arange(n), tuple(p), mode=PAD_MODES[attrs["border"]])
                 [i * s + np.arange(w) * d] for i, n, s, w, p, d
                 in zip(index, x.shape, stride, attrs["size"], attrs["padding"], dilation)]
    return [x[np.ix_(*spans)].ravel()]


def box_size(shapes, attrs):
    """The taps of one window: at most that many terms are summed into one output element."""
    return math.prod(attrs["size"])


def nnef_box(case, call):
    attrs = {name: case.attrs[name] for name in ("size", "border", "stride", "dilation", "normalize")
             if name in case.attrs}
    attrs["padding"] = [tuple(int(p) for p in pair) for pair in case.attrs["padding"]]
    return call(["in0"], attrs)


_HOOKS = dict(draw=draw_box, draw_honours=frozenset({"attrs"}), feeding=feed_box,
              accumulation_length=box_size, nnef=nnef_box)


def numpy_box(x, *, size, border, padding, stride, dilation, normalize=False):
    """The numpy backend: ``np.pad`` in the border's mode, ``np.sum`` in x's type over each
    ``sliding_window_view`` window (:func:`reduce_windows`), divided by the window's size (or,
    under 'ignore', by the input elements it covers) with ``normalize``."""
    rank, zero = x.ndim, x.dtype.type(0)
    stride, dilation = stride or [1] * rank, dilation or [1] * rank
    pads, flat, axes = [tuple(p) for p in padding], [[0, 0]] * rank, tuple(range(rank, 2 * rank))

    def summed(values):
        windows = reduce_windows(values, zero, size, stride, flat, None, dilation)
        return np.sum(windows, axis=axes, dtype=x.dtype)

    total = summed(np.pad(x, pads, mode=PAD_MODES[border]))
    if not normalize:
        return total
    if border == "ignore":
        return total / summed(np.pad(np.ones(x.shape, x.dtype), pads))
    return total / x.dtype.type(math.prod(size))


@op("nnef_box", numpy=numpy_box, version=1, **_HOOKS)
def oracle_nnef_box(x, *, size, border, padding, stride, dilation, normalize):
    """NNEF box: the sum of each window over the border-extended input, divided by the window's
    size with ``normalize`` (under 'ignore', the input elements it covers)."""
    return (box(x, size, border, padding, stride, dilation, normalize),)


def numpy_avg_pool(x, *, size, border, padding, stride, dilation):
    """The numpy backend: :func:`numpy_box` normalised."""
    return numpy_box(x, size=size, border=border, padding=padding, stride=stride,
                     dilation=dilation, normalize=True)


@op("nnef_avg_pool", numpy=numpy_avg_pool, version=1, **_HOOKS)
def oracle_nnef_avg_pool(x, *, size, border, padding, stride, dilation):
    """NNEF avg_pool: ``box(..., normalize = true)``."""
    return (box(x, size, border, padding, stride, dilation, True),)
