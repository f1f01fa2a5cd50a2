"""ONNX's signal windows (ai.onnx, opset 17): HannWindow, HammingWindow and BlackmanWindow,
written from their operator texts (``onnx.defs.get_schema(name, 17)``).

The doc strings say only 'Generates a <name> window as described in the paper
https://ieeexplore.ieee.org/document/1455106' (F. J. Harris, "On the use of windows for
harmonic analysis with the discrete Fourier transform", Proc. IEEE 66(1), 1978) and what
``periodic`` means; the schemas' function bodies give the formula the three share::

    N = size if periodic else size - 1
    output[n] = A0 - A1 * cos(2 pi n / N) + A2 * cos(4 pi n / N),   n = 0 .. size - 1

with (A0, A1, A2) = (0.5, 0.5, 0) for Hann, (25/46, 21/46, 0) for Hamming (Harris's "exact"
Hamming coefficients; the body's float constants 0.54347825 and 0.45652175), and
(0.42, 0.5, 0.08) for Blackman, every operation in float32, then ``Cast(to=output_datatype)``.
The oracle evaluates the formula exactly (float64); the bound (:func:`window_bound`) is the
error of the body's float32 evaluation. A symmetric window of size 1 (N = 0) is 0 / 0 in the
body and undefined in the paper: it is not drawn.
"""
from __future__ import annotations

import numpy as np

from conform.dtypes import is_integer, np_dtype
from conform.op_registry import op
from conform.ops._lowering import from_onnx_element_types
from conform.ops.onnx_shape import no_input_feeds

#: (A0, A1, A2) of each window, from the function bodies (Hamming's as the exact fractions).
COEFFICIENTS = {"hann": (0.5, 0.5, 0.0), "hamming": (25 / 46, 21 / 46, 0.0),
                "blackman": (0.42, 0.5, 0.08)}
FLOAT32_U = 2.0 ** -24   # the unit roundoff of the body's float32 arithmetic
MAX_SIZE = 256           # CONFORM_MAX_ARRAY_SIZE's default
COS_ULP = 4              # OpenCL C 3.0 §7.4: single-precision cos within 4 ULP
OUTPUT_TYPES = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
                "float16", "float32", "float64", "bfloat16")   # T2 of the schema


def _angles(size: int, periodic: int) -> np.ndarray:
    """2 pi n / N for n < size (N = size, or size - 1 for a symmetric window)."""
    span = size if periodic else size - 1
    return 2 * np.pi * np.arange(size) / span if size else np.zeros(0)


def window(kind: str, size: int, periodic: int = 1) -> np.ndarray:
    """The exact window values (float64): A0 - A1 cos(theta) + A2 cos(2 theta).

    >>> window("hann", 4).tolist()
    [0.0, 0.5, 1.0, 0.5]
    """
    a0, a1, a2 = COEFFICIENTS[kind]
    theta = _angles(size, periodic)
    return a0 - a1 * np.cos(theta) + a2 * np.cos(2 * theta)


def float32_error(kind: str, size: int, periodic: int, cos_ulp: float = COS_ULP) -> np.ndarray:
    """Per element, the absolute error of the function body's float32 evaluation.

    theta is fl(n * fl(fl(2 pi) / N)): three roundings, |theta' - theta| <= gamma_3 theta,
    and cos is 1-Lipschitz, so each cosine term errs by a_k (gamma_3 k theta) from its argument,
    plus cos_ulp ULPs (at most 2 cos_ulp u) from the cosine itself, plus the roundings of the
    coefficient and of the product (2u, with one u of slack for the products of the
    deltas); the two additions and A0's rounding add u (A0 + A1 + A2) each (every partial sum
    is at most A0 + A1 + A2 = 1 in magnitude). Higham 2002, Lemma 3.1 and §2.2."""
    a0, a1, a2 = COEFFICIENTS[kind]
    u = FLOAT32_U
    gamma3 = 3 * u / (1 - 3 * u)
    theta = _angles(size, periodic)
    terms = sum(a * (gamma3 * k * theta + (2 * cos_ulp + 3) * u) for k, a in ((1, a1), (2, a2)))
    return terms + 3 * u * (a0 + a1 + a2)


def open_integers(kind: str, size: int, periodic: int) -> np.ndarray:
    """For an integer output: the elements whose float32 value may lie at or past 1/2 from 0
    (Cast's text names no rounding from float to fixed point: truncation and rounding to
    nearest differ there, and 1 - tiny truncates to 0)."""
    reach = np.abs(window(kind, size, periodic)) + float32_error(kind, size, periodic)
    return reach >= 0.5


def _integer_cast(values: np.ndarray) -> np.ndarray:
    """The integer every reading of Cast gives where the value is within 1/2 of 0: 0."""
    return np.zeros(values.shape, np.int64)


def draw_window(draw, kit, spec, dtype):
    """The size (an int32 or int64 scalar: its value from ``fill_window``), periodic absent
    (its default, 1), 0 or 1, and the output type as output_datatype (left out for float, its
    default, half the time)."""
    st = kit.st
    attrs = draw(st.sampled_from([{}, {"periodic": 0}, {"periodic": 1}]))
    if dtype != "float32" or draw(st.booleans()):
        attrs["output_datatype"] = dtype
    index = draw(st.sampled_from(("int32", "int64")))
    return kit.Signature((index,), ((),), attrs, dtype)


def fill_window(rng, signature, plan):
    """The size: 0 to 64 (up to MAX_SIZE in the wide plan, 0 to 3 in the edge plans); at least
    2 for a symmetric window."""
    top = {"wide": MAX_SIZE, "edge": 3, "special": 3}.get(plan, 64)
    size = int(rng.integers(0, top + 1))
    if signature.attrs.get("periodic", 1) == 0:
        size = max(size, 2)
    return [np.asarray(size, np_dtype(signature.input_dtypes[0]))]


def onnx_window(case, graph):
    """One node: output_datatype as the TensorProto enum where the case gives it."""
    attrs = {"periodic": case.attrs["periodic"]} if "periodic" in case.attrs else {}
    if "output_datatype" in case.attrs:
        attrs["output_datatype"] = graph.onnx_type(case.attrs["output_datatype"])
    graph.node(graph.op_type, [graph.inputs[0]], **attrs)


def window_bound(kind: str):
    """The ``derived`` model's bound of ``kind``'s float outputs: :func:`float32_error`."""
    def bound(inputs, attrs, outputs, *, out_dtype, u, constants, dtypes):
        size, periodic = int(inputs[0]), attrs.get("periodic", 1)
        return (float32_error(kind, size, periodic),)
    return bound


def _numpy_window(function):
    """The numpy backend: NumPy's symmetric window (float64) of size + 1 less its last point
    for a periodic one, then the body's final Cast to output_datatype (``astype``)."""
    def compute(size, *, periodic=1, output_datatype="float32"):
        length = int(size)
        values = function(length + 1)[:-1] if periodic else function(length)
        return (values.astype(np_dtype(output_datatype)),)
    return compute


def _define(kind: str, name: str, numpy_function=None):
    def oracle(size, *, periodic=1, output_datatype="float32", open_elements=False):
        values = window(kind, int(size), periodic)
        if open_elements:   # only an integer output has open elements
            return (open_integers(kind, int(size), periodic) & is_integer(output_datatype),)
        return (_integer_cast(values) if is_integer(output_datatype) else values,)

    oracle.__doc__ = (f"ONNX {name}: {COEFFICIENTS[kind]} as (A0, A1, A2) of A0 - A1 cos(2 pi n "
                      "/ N) + A2 cos(4 pi n / N), N = size (periodic) or size - 1; an integer "
                      "output is 0 where every reading of the cast gives 0 (elsewhere open).")
    numpy = _numpy_window(numpy_function) if numpy_function is not None else None
    # the size is a count (the window's length and N), no term of an element: nothing feeds
    return op(f"onnx_{kind}_window", version=1, draw=draw_window, fill=fill_window,
              value_dependent_shape=True, onnx=onnx_window, numpy=numpy,
              draw_honours=frozenset({"scalar"}), feeding=no_input_feeds,
              error_bound=window_bound(kind),
              from_onnx=from_onnx_element_types("output_datatype"))(oracle)


# numpy.hanning and numpy.blackman evaluate these formulas (symmetric, in float64);
# numpy.hamming uses 0.54 and 0.46, not the body's 25/46 and 21/46: no numpy binding.
oracle_hann_window = _define("hann", "HannWindow", np.hanning)
oracle_hamming_window = _define("hamming", "HammingWindow")
oracle_blackman_window = _define("blackman", "BlackmanWindow", np.blackman)
