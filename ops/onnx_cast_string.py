"""ONNX Cast to and from strings (opsets 9 to 25: the string paragraph of
``onnx.defs.get_schema("Cast", N).doc`` is the same at each; Cast-6 says "Casting to and from
strings is not supported yet"), beside ops/onnx_cast.py's numeric Cast:

- "Casting from string tensor in plain (e.g., "3.14" and "1000") and scientific numeric
  representations (e.g., "1e-5" and "1E8") to float types is supported": a numeral's value,
  rounded to the float type (IEEE 754-2019 §5.12.2: conversion from a decimal character
  sequence of at most H = 20 significant digits (binary64) is correctly rounded).
- ""+INF" (and "INF"), "-INF", and "NaN" are positive infinity, negative infinity, and
  not-a-number", each "in a case-insensitive way".
- "converting string "100.5" to an integer may yield result 100": an integer numeral to an
  integer type is its value; a fraction ("to INT is an undefined behavior") is not drawn, nor
  is "Hello World!" ("undefined behavior"), nor a numeral out of the target's range (no rule).
- "When casting from numeric tensors to string tensors, plain floating-point representation
  (such as "314.15926") would be used": a plain numeral (no exponent, as against the
  "scientific" forms above) of the value. The text fixes no digit count; the oracle gives the
  shortest numeral that reads back as the value, and :func:`canonical_cast_string` accepts
  any plain numeral that reads back as it (an integer's numeral is its decimal digits).
"""
from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction

import numpy as np

from conform.dtypes import FLOAT_FORMATS, int_info, is_integer, is_string, np_dtype
from conform.op_registry import op
from conform.ops.onnx_cast import from_onnx_cast, onnx_cast_node

#: "plain" numerals (no exponent) and numerals with the "scientific" exponent
PLAIN = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)\Z")
NUMERAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
#: the reserved literals, matched case-insensitively
SPECIAL = {"+inf": np.inf, "inf": np.inf, "-inf": -np.inf, "nan": np.nan}
#: the text's own examples of numerals
EXAMPLES = ("3.14", "1000", "1e-5", "1E8")


def string_labels(spec):
    """'string->T' and 'T->string' for every other dtype of the spec."""
    others = [d for d in spec.dtypes if not is_string(d)]
    return [f"string->{d}" for d in others] + [f"{d}->string" for d in others]


def numeral_value(text: str):
    """A string's value under the text: a reserved literal's float, else the numeral's exact
    value (a Fraction); ValueError for anything else (undefined behaviour: never drawn)."""
    if text.lower() in SPECIAL:
        return SPECIAL[text.lower()]
    if not NUMERAL.match(text):
        raise ValueError(f"{text!r} is no numeral the Cast text defines")
    return Fraction(text)


def odd_rounded(value) -> float:
    """``value`` (a Fraction or a float) in float64 rounded to odd where inexact, so that one
    later rounding to nearest even into a narrower type is the correct rounding of the value
    (Boldo and Melquiond, IEEE TC 2008)."""
    nearest = float(value)
    if isinstance(value, float) or Fraction(nearest) == value:
        return nearest
    if np.array(nearest).view(np.int64) & 1 == 0:   # even: step to the odd neighbour
        nearest = float(np.nextafter(nearest, np.inf if value > Fraction(nearest) else -np.inf))
    return nearest


def representation(value: float, source: str) -> str:
    """The oracle's plain numeral of ``value`` (of type ``source``): an integer's decimal
    digits; for a float, "NaN", "INF", "-INF", or the shortest plain numeral reading back as
    the value (a zero's sign kept)."""
    if is_integer(source) or source == "bool":
        return str(int(value))
    if np.isnan(value):
        return "NaN"
    if np.isinf(value):
        return "INF" if value > 0 else "-INF"
    return np.format_float_positional(np_dtype(source).type(value), unique=True, trim="-")


def reads_back(text: str, value: float, source: str) -> bool:
    """Whether backend string ``text`` is a representation of ``value`` of type ``source``
    the text allows: a reserved literal of the same special value (any case), or a plain
    numeral whose value, rounded to ``source``, is ``value`` (either zero for a zero)."""
    if np.isnan(value) or np.isinf(value):
        special = SPECIAL.get(text.lower())
        return special is not None and (np.isnan(value) if np.isnan(special) else special == value)
    if is_integer(source) or not PLAIN.match(text):
        return False
    try:
        back = np.array(odd_rounded(Fraction(text))).astype(np_dtype(source))
    except OverflowError:
        return False
    return float(back) == value


def canonical_cast_string(outputs, case):
    """A string output's elements that represent the operand's value as the text allows
    (:func:`reads_back`) become the oracle's representation; the others are left to fail."""
    (out,) = outputs
    if not is_string(case.out_dtype):
        return outputs
    source = case.input_dtypes[0]
    values = np.asarray(case.inputs[0]).astype(np.float64).ravel()
    got = np.asarray(out, object).ravel().copy()
    if got.size != values.size:
        return outputs
    for k, (text, value) in enumerate(zip(got.tolist(), values.tolist())):
        if isinstance(text, str) and reads_back(text, value, source):
            got[k] = representation(value, source)
    return [got.reshape(np.shape(out))]


def draw_cast_string(draw, kit, spec, dtype):
    """dtype is 'SRC->DST': a shape, the operand SRC and the result DST."""
    source, target = dtype.split("->")
    return kit.Signature((source,), (draw(kit.shape()),), {"new_dtype": target}, target)


def _exact_numeral(rng, value: float) -> str:
    """``value``'s exact decimal value as a plain or a scientific numeral (e or E, the
    exponent shifted by up to 3 places)."""
    exact = Decimal(value)
    if rng.integers(0, 2):
        return format(exact, "f")
    shift = int(rng.integers(-3, 4))
    mark = "eE"[int(rng.integers(0, 2))]
    return f"{format(exact.scaleb(-shift), 'f')}{mark}{shift}"


def _float_numerals(rng, target: str, count: int, subnormals: bool) -> list[str]:
    """Numerals for a float target: exact values of the type (ordinary, extreme, and
    subnormal where ``subnormals``), the text's examples, 20-digit numerals beside a midpoint
    of two neighbours (correctly rounded, IEEE 754 §5.12.2), the reserved literals in random
    case."""
    fmt = FLOAT_FORMATS[target]
    kind_count = 5
    out = []
    for _ in range(count):
        kind = int(rng.integers(0, kind_count))
        if kind == 0:
            value = float(np.array(rng.uniform(-300, 300)).astype(np_dtype(target)))
            out.append(_exact_numeral(rng, value))
        elif kind == 1:
            low = fmt.min_subnormal if subnormals else fmt.min_normal
            value = [0.0, -0.0, fmt.min_normal, fmt.max_finite, -fmt.max_finite, low, -low][int(rng.integers(0, 7))]
            out.append(_exact_numeral(rng, value))
        elif kind == 2:
            out.append(EXAMPLES[int(rng.integers(0, len(EXAMPLES)))])
        elif kind == 3:
            below = float(np.array(rng.uniform(1, 300)).astype(np_dtype(target)))
            above = float(np.nextafter(np.array(below, np_dtype(target)), np.inf))
            middle = (Fraction(below) + Fraction(above)) / 2
            out.append(format(Decimal(middle.numerator) / Decimal(middle.denominator), ".19e"))
        else:
            word = ["INF", "+INF", "-INF", "NaN"][int(rng.integers(0, 4))]
            out.append("".join(c.lower() if rng.integers(0, 2) else c for c in word))
    return out


def values_cast_string(rng, inputs, attrs):
    """A string operand becomes numerals the text defines for its target: integer numerals
    in the target's range for an integer type, :func:`_float_numerals` for a float type (a
    third of the cases with subnormal values)."""
    operand = inputs[0]
    if operand.dtype != object:
        return inputs
    target, count = attrs["new_dtype"], operand.size
    if is_integer(target):
        info = int_info(target)
        low, high = max(info.min, -300), min(info.max, 300)
        ends = (info.min, min(info.max, 2**63 - 1))   # the oracle's integers are int64
        texts = [str(ends[k] if k < 2 else int(rng.integers(low, high + 1)))
                 for k in rng.integers(0, 8, count).tolist()]
    else:
        texts = _float_numerals(rng, target, count, subnormals=rng.integers(0, 3) == 0)
    made = np.empty(count, object)
    made[:] = texts
    return [made.reshape(operand.shape)]


def numpy_cast_string(operand, *, new_dtype, **_):
    """The numpy backend: NumPy's own conversions through its unicode type (``str`` of a
    number; a float or integer read from text)."""
    if is_string(new_dtype):
        return (operand.astype(np.str_).astype(object),)
    return (operand.astype(np.str_).astype(np_dtype(new_dtype)),)


def _parsed(input, new_dtype, rounding):  # noqa: A002
    flat = [numeral_value(text) for text in np.asarray(input, object).ravel().tolist()]
    if is_integer(new_dtype):
        return np.array([int(v) for v in flat], np.int64).reshape(np.shape(input))
    return np.array([rounding(v) for v in flat], np.float64).reshape(np.shape(input))


def rounded_cast_string(input, *, new_dtype, dtypes):  # noqa: A002
    """A numeral read into float64, correctly rounded (Python's exact Fraction to float)."""
    return (_parsed(input, new_dtype, float),)


def from_onnx_cast_string(inputs, attrs, opset):
    """A Cast node to or from string as a case (:func:`~conform.ops.onnx_cast.from_onnx_cast`;
    ``saturate`` left out: the text applies it to float 8 targets only)."""
    new_dtype = from_onnx_cast(inputs, attrs, opset)[1]["new_dtype"]
    if not is_string(new_dtype) and np.asarray(inputs[0]).dtype.kind not in "OUS":
        raise ValueError(f"a Cast to {new_dtype} of a non-string input is onnx_cast's")
    return inputs[:1], {"new_dtype": new_dtype}


@op("onnx_cast_string", version=1, draw=draw_cast_string, dtype_labels=string_labels,
    values=values_cast_string, onnx=onnx_cast_node, numpy=numpy_cast_string,
    rounded64=rounded_cast_string, canonical=canonical_cast_string,
    from_onnx=from_onnx_cast_string)
def oracle_onnx_cast_string(input, *, new_dtype, dtypes):  # noqa: A002
    """Cast from a string: each numeral's value (a float target: rounded to odd in float64,
    so that the judge's one rounding into the target is correct; an integer: exactly); to a
    string: :func:`representation` of each element."""
    if is_string(new_dtype):
        wide = np.asarray(input)
        if dtypes[0] == "uint64":   # widened to int64: its bits
            wide = wide.view(np.uint64)
        flat = (wide.astype(np.float64) if wide.dtype.kind == "f" else wide).ravel().tolist()
        out = np.empty(len(flat), object)
        out[:] = [representation(v, dtypes[0]) for v in flat]
        return (out.reshape(np.shape(input)),)
    return (_parsed(input, new_dtype, odd_rounded),)
