"""Dtype vocabulary shared by specs, generators, oracles and backends.

Named edge values used in spec files (``edge_values``) are resolved here, e.g. ``-max_finite``,
``min_subnormal``, ``int_min``.

The float formats are IEEE 754's binary16/32/64, bfloat16, the four 8-bit formats
(docs/dtypes.md has the references): OCP *8-bit Floating Point Specification (OFP8)* rev. 1.0
E4M3 (``float8_e4m3fn``: no infinities, NaN only at S.1111.111, so the largest finite value is
448) and E5M2 (``float8_e5m2``: IEEE-like, with infinities), and the ``fnuz`` variants that ONNX
(Cast, "Float 8 types") takes from Graphcore/AMD: no infinities, no negative zero, the one NaN
encoded where -0 would be (0x80), exponent bias one larger than OCP's; and the two formats of
the OCP *Microscaling Formats (MX) Specification* v1.0: the element format FP4 E2M1
(``float4_e2m1fn``: no infinities, no NaN, -0, largest value 6) and the scale format E8M0
(``float8_e8m0fnu``: unsigned powers of two 2**-127 to 2**127, no zero, no infinities, NaN at
0xFF); StableHLO's other narrow floats: the IEEE-style ``float8_e4m3`` (bias 7, infinities,
largest 240) and ``float8_e3m4`` (bias 3, largest 15.5), Graphcore's ``float8_e4m3b11fnuz``
(bias 11, fnuz, largest 30), and MX's FP6 ``float6_e2m3fn`` and ``float6_e3m2fn`` (no
infinities, no NaN, largest 7.5 and 28). The integers include ONNX's int2/uint2 and int4/uint4.

The complex types ``complex64`` and ``complex128`` (XLA's C64 and C128) are pairs of float32
and float64 components, real and imaginary (:data:`COMPLEX_COMPONENTS`): each component has its
float type's values, edge values and traits.

``string`` is ONNX's STRING element type (TensorProto.STRING: UTF-8 text). Its NumPy form is an
object array whose elements are Python ``str``: what onnxruntime takes and gives, and what the
onnx package's ``numpy_helper`` makes (onnxruntime 1.32 refuses NumPy 2's ``StringDType``). Such
arrays cross processes and files as data, never pickled: :func:`string_bytes` and
:func:`strings_from`.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

#: dtypes NumPy does not have, from ml_dtypes
ML_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
             "float8_e8m0fnu", "float4_e2m1fn", "float8_e4m3", "float8_e3m4",
             "float8_e4m3b11fnuz", "float6_e2m3fn", "float6_e3m2fn", "int2", "int4", "uint2",
             "uint4")
#: the integers among them (NumPy's kind 'V': ``np.iinfo`` refuses them)
_ML_INTEGERS = ("int2", "int4", "uint2", "uint4")
#: the complex dtypes and the float type of their real and imaginary components
COMPLEX_COMPONENTS = {"complex64": "float32", "complex128": "float64"}
#: ONNX's string element type (arrays of it: NumPy object arrays of Python str)
STRING = "string"


@functools.cache   # called for every input of every case: NumPy makes the name anew (~5 us)
def dtype_name(dtype: np.dtype) -> str:
    """``str(dtype)``: NumPy's name of ``dtype`` ('float32', 'bfloat16', 'object')."""
    return str(dtype)


@functools.cache   # called for every input of every case
def np_dtype(name: str) -> np.dtype:
    """The NumPy dtype for a conform dtype name (bfloat16, float8_*, float4_e2m1fn and the 2- and
    4-bit integers come from ml_dtypes: :data:`ML_DTYPES`)."""
    if name in ML_DTYPES:
        return np.dtype(getattr(ml_dtypes, name))
    if name == STRING:
        return np.dtype(object)
    return np.dtype(name)


@functools.cache
def int_info(name: str):
    """``iinfo`` (``min``, ``max``, ``bits``) of an integer dtype name, the 2- and 4-bit ones
    included (NumPy's ``iinfo`` refuses ml_dtypes' integers).

    >>> (int_info("int4").min, int_info("uint4").max, int_info("int2").min, int_info("uint2").bits)
    (-8, 15, -2, 2)
    """
    return ml_dtypes.iinfo(np_dtype(name))


def is_complex(name: str) -> bool:
    """Whether ``name`` is a complex dtype (:data:`COMPLEX_COMPONENTS`).

    >>> is_complex("complex64"), is_complex("float32")
    (True, False)
    """
    return name in COMPLEX_COMPONENTS


def component_dtype(name: str) -> str:
    """The float type of a complex dtype's real and imaginary parts; ``name`` itself for any
    other dtype.

    >>> component_dtype("complex128"), component_dtype("float16")
    ('float64', 'float16')
    """
    return COMPLEX_COMPONENTS.get(name, name)


def result_dtype(rule: str, dtype: str) -> str:
    """The type of the result of an op drawn in ``dtype`` whose spec's ``output_dtype`` is
    ``rule``: ``bool`` for a predicate (``bool``), the component float type of a complex
    ``dtype`` for ``component`` (|z| of a complex64 is a float32; a real ``dtype`` is its own
    component), else ``dtype`` (``same``; ``attr:new_dtype`` is the case's own).

    >>> result_dtype("bool", "float32"), result_dtype("component", "complex64")
    ('bool', 'float32')
    >>> result_dtype("component", "int8"), result_dtype("same", "complex64")
    ('int8', 'complex64')
    """
    if rule == "bool":
        return "bool"
    return component_dtype(dtype) if rule == "component" else dtype


def complex_array(real, imag, dtype: str = "complex128") -> np.ndarray:
    """The complex array of ``dtype`` with parts ``real`` and ``imag`` (broadcast together),
    set part by part: ``real + 1j * imag`` would turn an infinite ``imag`` into ``nan + inf j``
    (``1j * inf`` multiplies ``0 * inf``).

    >>> complex_array(np.array([1.0]), np.array([np.inf])).tolist()
    [(1+infj)]
    """
    real, imag = np.broadcast_arrays(real, imag)
    out = np.empty(real.shape, np_dtype(dtype))
    out.real, out.imag = real, imag
    return out


def is_string(name: str) -> bool:
    """Whether ``name`` is the string dtype (:data:`STRING`).

    >>> is_string("string"), is_string("int8")
    (True, False)
    """
    return name == STRING


#: The characters string values are drawn from: ASCII letters of both cases, digits,
#: punctuation and whitespace (space, tab, newline); Latin letters whose case mapping changes
#: the length or depends on the locale ('ß' -> 'SS', 'İ' -> 'i̇', dotless 'ı', the ligature
#: 'ﬁ', titlecase 'ǅ', capital sharp s 'ẞ'); Greek capital and both small sigmas; a precomposed
#: 'é' and a combining acute accent (U+0301) to follow a base letter; Cyrillic; CJK; and a
#: character beyond the BMP (U+1F600: four UTF-8 bytes, two UTF-16 units).
STRING_ALPHABET = ("abcxyzABCXYZ019-_.,!?*+()[]|\\ \t\n"
                   "ßẞİıﬁǅÉéΣσςЖж中文\u0301\U0001F600")
#: Strings an edge plan mixes into a string array: the empty string, whitespace only, case
#: pairs (both forms), a base letter with a combining mark and its precomposed form, and
#: leading, trailing and repeated spaces.
STRING_EDGES = ("", " ", "\t\n", "a", "A", "ß", "SS", "ss", "İ", "i\u0307", "ı", "I",
                "e\u0301", "é", "ΣΑΣ", "σας", "  a  b  ", "ﬁ", "中文")


def string_bytes(array: np.ndarray) -> bytes:
    """The elements of a string array (an object array of ``str``) as data: their UTF-8 byte
    lengths (int64, little-endian) then their UTF-8 bytes (lone surrogates kept:
    ``surrogatepass``), padded to a multiple of 16 bytes; :func:`strings_from` reads it back.
    Raises TypeError for an element that is not a ``str``.

    >>> data = string_bytes(np.array(["ß", ""], object))
    >>> data[:8], data[16:18], len(data)   # lengths 2 and 0, then the bytes of 'ß'
    (b'\\x02\\x00\\x00\\x00\\x00\\x00\\x00\\x00', b'\\xc3\\x9f', 32)
    """
    items = array.ravel().tolist()
    if not all(type(s) is str for s in items):
        raise TypeError("a string array holds an element that is not a str")
    encoded = [s.encode("utf-8", "surrogatepass") for s in items]
    data = np.array([len(b) for b in encoded], "<i8").tobytes() + b"".join(encoded)
    return data + bytes(-len(data) % 16)


def strings_from(buffer, offset: int, shape) -> tuple[np.ndarray, int]:
    """The string array of ``shape`` that :func:`string_bytes` wrote at ``offset`` of
    ``buffer``, and the offset just past it. Raises ValueError for bytes that are not such
    data (too short, a negative length, text that is not UTF-8).

    >>> strings_from(string_bytes(np.array(["ß", "a"], object)), 0, (2,))[0].tolist()
    ['ß', 'a']
    """
    count = math.prod(shape)
    lengths = np.frombuffer(buffer, "<i8", count, offset).astype(np.int64)
    start = offset + 8 * count
    if ((lengths < 0) | (lengths > len(buffer))).any() or start + int(lengths.sum()) > len(buffer):
        raise ValueError("string data shorter than the lengths it gives")
    ends = start + np.cumsum(lengths)
    data = bytes(memoryview(buffer)[start:int(ends[-1]) if count else start])
    cuts = (ends - start).tolist()
    out = np.empty(count, object)
    out[:] = [data[a:b].decode("utf-8", "surrogatepass") for a, b in zip([0] + cuts, cuts)]
    end = int(ends[-1]) if count else start
    return out.reshape(shape), end + (-(end - offset) % 16)


def content_bytes(array: np.ndarray) -> bytes:
    """An array's elements as bytes, for a content hash: its raw bytes, or for a string array
    :func:`string_bytes` (an object array's raw bytes are pointers)."""
    if array.dtype.hasobject:
        return string_bytes(array)
    return np.ascontiguousarray(array).tobytes()


def is_integer(name: str) -> bool:
    """Whether ``name`` is an integer dtype (the 2- and 4-bit ones are, though NumPy's kind is
    'V')."""
    return name in _ML_INTEGERS or np_dtype(name).kind in "iu"


@dataclass(frozen=True)
class FloatFormat:
    """Parameters and traits of a binary floating-point format (IEEE 754 terms).

    ``has_inf``, ``has_nan``, ``has_negative_zero`` and ``has_zero`` say which special values
    the format encodes, ``signed`` whether it has a sign bit (E8M0 has none: every value is
    positive). ``nan_encoding`` says where NaN lives: ``ieee`` (exponent all ones, fraction
    non-zero, beside the infinities), ``all_ones`` (only S.1111.111: OCP E4M3, which gives the
    top binade's largest significand to NaN), ``negative_zero`` (only 1.0000.000, the
    encoding of -0 elsewhere: the fnuz formats), ``exponent_all_ones`` (the all-ones exponent,
    a binade above ``emax``: E8M0's 0xFF) or ``none`` (no NaN: FP4 E2M1).
    """

    precision: int   # p: significand bits including the implicit one
    emin: int        # exponent of the smallest normal number
    emax: int        # exponent of the largest finite number
    bits: int = 0    # storage width (0: not needed)
    has_inf: bool = True
    has_nan: bool = True
    has_negative_zero: bool = True
    nan_encoding: str = "ieee"
    has_zero: bool = True
    signed: bool = True

    @property
    def unit_roundoff(self) -> float:
        return 2.0 ** -self.precision

    @property
    def min_normal(self) -> float:
        return 2.0 ** self.emin

    @property
    def min_subnormal(self) -> float:
        return 2.0 ** (self.emin - self.precision + 1)

    @property
    def ulp_at_max(self) -> float:
        """The spacing of the top binade."""
        return 2.0 ** (self.emax - self.precision + 1)

    @property
    def max_finite(self) -> float:
        top = 2.0 - 2.0 ** (1 - self.precision)   # largest significand
        if self.nan_encoding == "all_ones":          # ... is NaN's: the one below it
            top -= 2.0 ** (1 - self.precision)
        return top * 2.0 ** self.emax

    @property
    def below_max_finite(self) -> float:
        """The largest finite value but one (half of it in a one-bit significand: E8M0)."""
        if self.precision == 1:
            return self.max_finite / 2
        return self.max_finite - self.ulp_at_max

    @property
    def has_subnormals(self) -> bool:
        """Whether values below ``min_normal`` (other than zero) exist: not in E8M0."""
        return self.has_zero and self.precision > 1

    @property
    def beyond_max(self) -> float:
        """The value after ``max_finite`` were the exponent range unbounded: a correctly rounded
        result at or past it overflows (IEEE 754 §7.4). ``2**(emax+1)`` for IEEE formats."""
        return self.max_finite + self.ulp_at_max

    @property
    def overflow_value(self) -> float:
        """What a non-saturating rounding gives on overflow (sign aside): inf where the format
        has one, else NaN (OCP OFP8 §5 and ONNX Cast with saturate=0). NaN too where the format
        has neither (FP4 E2M1): no value of the format, a result its standard leaves open."""
        return np.inf if self.has_inf else np.nan


_FNUZ = dict(has_inf=False, has_negative_zero=False, nan_encoding="negative_zero")

FLOAT_FORMATS = {
    "float16": FloatFormat(11, -14, 15, 16),
    "bfloat16": FloatFormat(8, -126, 127, 16),
    "float32": FloatFormat(24, -126, 127, 32),
    "float64": FloatFormat(53, -1022, 1023, 64),
    # OCP OFP8 rev 1.0 table 1: E4M3 bias 7, E5M2 bias 15
    "float8_e4m3fn": FloatFormat(4, -6, 8, 8, has_inf=False, nan_encoding="all_ones"),
    "float8_e5m2": FloatFormat(3, -14, 15, 8),
    # fnuz: bias 8 and 16 (one more than OCP's), every exponent code is a finite binade
    "float8_e4m3fnuz": FloatFormat(4, -7, 7, 8, **_FNUZ),
    "float8_e5m2fnuz": FloatFormat(3, -15, 15, 8, **_FNUZ),
    # OCP MX v1.0: FP4 E2M1 (bias 1; 0.5 subnormal, 1 to 6), E8M0 (bias 127, scales only)
    "float4_e2m1fn": FloatFormat(2, 0, 2, 4, has_inf=False, has_nan=False, nan_encoding="none"),
    "float8_e8m0fnu": FloatFormat(1, -127, 127, 8, has_inf=False, has_negative_zero=False,
                                  nan_encoding="exponent_all_ones", has_zero=False,
                                  signed=False),
    # IEEE 754-style 8-bit formats (StableHLO f8E4M3, f8E3M4; LLVM APFloat's Float8E4M3 and
    # Float8E3M4): bias 7 and 3, infinities and NaNs at the all-ones exponent
    "float8_e4m3": FloatFormat(4, -6, 7, 8),
    "float8_e3m4": FloatFormat(5, -2, 3, 8),
    # Graphcore's E4M3 with bias 11 (StableHLO f8E4M3B11FNUZ): fnuz as above, 0x80 the one NaN
    "float8_e4m3b11fnuz": FloatFormat(4, -10, 4, 8, **_FNUZ),
    # OCP MX v1.0: FP6 E2M3 (bias 1, largest 7.5) and E3M2 (bias 3, largest 28): no inf, no NaN
    "float6_e2m3fn": FloatFormat(4, 0, 2, 6, has_inf=False, has_nan=False, nan_encoding="none"),
    "float6_e3m2fn": FloatFormat(3, -2, 4, 6, has_inf=False, has_nan=False, nan_encoding="none"),
}


def float_format(name: str) -> FloatFormat:
    return FLOAT_FORMATS[name]


def subnormal_mask(array: np.ndarray) -> np.ndarray | None:
    """Where ``array`` holds subnormals of its own format, in either part of a complex number
    (None for non-float arrays)."""
    if array.dtype.kind == "c":
        return subnormal_mask(array.real) | subnormal_mask(array.imag)
    dtype = str(array.dtype)
    if dtype not in FLOAT_FORMATS:
        return None
    with np.errstate(invalid="ignore"):
        wide = array.astype(np.float64)
    return (wide != 0) & (np.abs(wide) < FLOAT_FORMATS[dtype].min_normal)


def flush_subnormals(array: np.ndarray) -> np.ndarray:
    """``array`` with subnormal values (of its own format) read as zeros of the same sign
    (each part of a complex number on its own)."""
    if array.dtype.kind == "c":
        flushed = array.copy()
        flushed.real, flushed.imag = flush_subnormals(array.real), flush_subnormals(array.imag)
        return flushed
    tiny = subnormal_mask(array)
    if tiny is None or not tiny.any():
        return array
    zeros = np.copysign(np.zeros(array.shape), array.astype(np.float64)).astype(array.dtype)
    return np.where(tiny, zeros, array)


def round_to_format(values, fmt: FloatFormat, *, saturate: bool = False) -> np.ndarray:
    """``values`` (float64) rounded once, to nearest even, into ``fmt``, as float64.

    Rounds as if the exponent range were unbounded (subnormals at ``emin``); a result beyond
    ``max_finite`` overflows (IEEE 754 §7.4) to ``fmt.overflow_value`` with the value's sign,
    or to ``±max_finite`` under ``saturate`` (which infinities take too, as ONNX Cast with
    saturate=1 does for E4M3FN and E5M2; its table sends infinities to NaN in the fnuz formats).
    A format without -0 gives +0 for every zero. For formats narrower than float64 only; a
    scale format (no zero: E8M0) rounds by :func:`round_to_scale` to nearest, ties up.

    >>> round_to_format(np.array([464.0, 465.0, -1e-9]), FLOAT_FORMATS["float8_e4m3fn"]).tolist()
    [448.0, nan, -0.0]
    """
    if not fmt.has_zero:   # a scale format: powers of two only
        return round_to_scale(values, fmt, saturate=saturate)
    x = np.asarray(values, np.float64)
    with np.errstate(all="ignore"):
        finite = np.isfinite(x)
        _, e = np.frexp(np.where(finite, x, 0.0))   # |x| in [2**(e-1), 2**e)
        quantum = np.ldexp(1.0, np.maximum(e - 1, fmt.emin) - fmt.precision + 1)
        rounded = np.where(finite, np.rint(x / quantum) * quantum, x)
        over = np.abs(rounded) > fmt.max_finite
        limit = fmt.max_finite if saturate else fmt.overflow_value
        rounded = np.where(over, np.copysign(limit, x), rounded)
    if not fmt.has_negative_zero:
        rounded = np.where(rounded == 0, 0.0, rounded)
    return rounded


def round_to_scale(values, fmt: FloatFormat, *, mode: str = "nearest",
                   saturate: bool = False) -> np.ndarray:
    """``values`` (float64) rounded into a scale format (unsigned powers of two, no zero: OCP
    MX's E8M0), as float64. ``mode`` is ONNX Cast's ``round_mode``: ``up`` gives the least
    power of two >= x, ``down`` the greatest <= x, ``nearest`` the nearer of the two, ties
    (``1.5 * 2**k``) up. A value outside ``[min_normal, max_finite]`` (zero and infinity
    included) gives NaN, or the nearer bound under ``saturate``; NaN and negative values
    (which the format cannot hold) give NaN.

    >>> f = FLOAT_FORMATS["float8_e8m0fnu"]
    >>> [round_to_scale(np.array(3.0), f, mode=m).item() for m in ("up", "down", "nearest")]
    [4.0, 2.0, 4.0]
    >>> round_to_scale(np.array([0.0, 2.0 ** 200]), f, saturate=True) == [2.0 ** -127, 2.0 ** 127]
    array([ True,  True])
    """
    x = np.asarray(values, np.float64)
    with np.errstate(all="ignore"):
        _, e = np.frexp(np.where(np.isfinite(x) & (x > 0), x, 1.0))   # x in [2**(e-1), 2**e)
        down = np.ldexp(1.0, e - 1)
        rounded = {"up": np.where(x == down, down, 2 * down), "down": down,
                   "nearest": np.where(x >= 1.5 * down, 2 * down, down)}[mode]
        low, high = fmt.min_normal, fmt.max_finite
        outside = (x < low) | (x > high)
        bound = np.where(x < low, low, high) if saturate else np.nan
        rounded = np.where(outside, bound, rounded)
        return np.where(np.isnan(x) | (x < 0), np.nan, rounded)


def _float_named(fmt: FloatFormat) -> dict[str, float]:
    named = {
        "zero": 0.0, "inf": np.inf, "nan": np.nan, "one": 1.0, "half": 0.5,
        "min_subnormal": fmt.min_subnormal,
        "max_subnormal": fmt.min_normal - fmt.min_subnormal,
        "min_normal": fmt.min_normal,
        "max_finite": fmt.max_finite,
        "below_max_finite": fmt.below_max_finite,
    }
    if not fmt.has_inf:
        del named["inf"]
    if not fmt.has_nan:
        del named["nan"]
    if not fmt.has_zero:
        del named["zero"]
    if not fmt.has_subnormals:
        del named["min_subnormal"], named["max_subnormal"]
    return named


def _float_absent(value, fmt: FloatFormat, dtype: str) -> str | None:
    """Why the float ``value`` (a number: a literal or a resolved name) is absent from
    ``fmt``, or None: a zero in a format without one, a negative value in an unsigned one."""
    if not fmt.has_zero and value == 0:
        return f"edge value {value!r} does not exist in {dtype} (it has no zero)"
    if not fmt.signed and (value < 0 or (value == 0 and np.signbit(value))):
        return f"edge value {value!r} does not exist in {dtype} (it has no sign: no negatives)"
    return None


class AbsentValue(KeyError):
    """A named value the dtype does not have (``inf`` in float8_e4m3fn, ``-zero`` in a fnuz
    format or an integer type, ``int_min`` in a float type)."""


def resolve_edge_value(value, dtype: str):
    """A spec edge value (number or name, optionally '-'-prefixed) as a Python number.

    Raises :class:`AbsentValue` (a KeyError) for a name the dtype does not have, and KeyError
    for a name no dtype has.

    >>> resolve_edge_value("-max_finite", "float16")
    -65504.0
    >>> resolve_edge_value("int_min", "int32")
    -2147483648
    >>> resolve_edge_value("inf", "float8_e4m3fn")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    AbsentValue: edge value 'inf' does not exist in float8_e4m3fn (it has no infinities); ...

    A complex dtype resolves a value as its component float type does (a real number: the
    imaginary part is zero).
    """
    if dtype in COMPLEX_COMPONENTS:
        return resolve_edge_value(value, COMPLEX_COMPONENTS[dtype])
    if not isinstance(value, str):
        why = _float_absent(value, FLOAT_FORMATS[dtype], dtype) if dtype in FLOAT_FORMATS else None
        if why:
            raise AbsentValue(why)
        return value
    sign, name = (-1, value[1:]) if value.startswith("-") else (1, value)
    if dtype in FLOAT_FORMATS:
        fmt = FLOAT_FORMATS[dtype]
        named = _float_named(fmt)
        if not fmt.signed and sign < 0:
            raise AbsentValue(_float_absent(-1.0, fmt, dtype).replace("-1.0", repr(value)))
        if value == "-zero" and not fmt.has_negative_zero:
            raise AbsentValue(f"edge value {value!r} does not exist in {dtype} (it has no -0)")
        if name not in named:
            why = {"inf": " (it has no infinities)", "nan": " (it has no NaN)",
                   "zero": " (it has no zero)", "min_subnormal": " (it has no subnormals)",
                   "max_subnormal": " (it has no subnormals)"}.get(name)
            if why is not None or name in ("int_min", "int_max"):
                raise AbsentValue(f"edge value {value!r} does not exist in {dtype}{why or ''}; "
                                  f"known: {sorted(named)}")
            raise KeyError(f"edge value {value!r} is not defined for {dtype}; known: {sorted(named)}")
        return math.copysign(named[name], sign)   # -nan too: sign * nan keeps NaN's sign
    if dtype == STRING:   # text: its edge values are STRING_EDGES, not numbers
        raise AbsentValue(f"edge value {value!r} does not exist in string (text has no "
                          "numeric edge values)")
    if value == "-zero":
        raise AbsentValue(f"edge value {value!r} exists only for floating-point dtypes")
    if dtype == "bool":   # PRED: the truth values only
        named = {"zero": 0, "one": 1}
    else:
        info = int_info(dtype)
        named = {"zero": 0, "one": 1, "int_min": int(info.min), "int_max": int(info.max)}
    if name not in named:
        cls = AbsentValue if name in _float_named(FLOAT_FORMATS["float64"]) else KeyError
        raise cls(f"edge value {value!r} is not defined for {dtype}; known: {sorted(named)}")
    return sign * named[name]
