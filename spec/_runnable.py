"""What the loader refuses because a run could not do it: value ranges no draw can come from,
rank bounds no shape meets, attributes the op's oracle does not take, and edge values no dtype
has. Each refusal is one :class:`~conform.spec._errors.SpecError` naming file, line and field.
(List sizes are bounded by the schema: ``maxItems``.)"""
from __future__ import annotations

import inspect
import math
from pathlib import Path
from typing import TYPE_CHECKING

from conform.dtypes import COMPLEX_COMPONENTS, FLOAT_FORMATS, STRING, int_info, resolve_edge_value
from conform.spec._errors import SpecError, line_of

if TYPE_CHECKING:
    import yaml

    from conform.ops import OpDefinition

#: The ranks a drawer reading ``min_rank``/``max_rank`` draws when the spec gives none
#: (:func:`conform.generators.kit.ranks`).
DEFAULT_RANKS = (0, 4)
#: Keywords the oracle receives from the harness itself: no attribute may be named so.
RESERVED_ATTRS = frozenset({"absent_inputs", "dtypes", "ftz"})
#: The dtype an edge value's name is checked against (it knows every name of an integer type
#: too, as one it lacks).
_NAMES_OF = "float32"
_INT64_MAX = (1 << 63) - 1


def dtype_class(dtype: str) -> str:
    """'float', 'complex', 'int', 'bool' or 'string' for a dtype name."""
    if dtype in FLOAT_FORMATS:
        return "float"
    if dtype in COMPLEX_COMPONENTS:
        return "complex"
    if dtype == STRING:
        return "string"
    return "bool" if dtype == "bool" else "int"


#: The name an ``int`` range's end may use in an expression (spec/critical.py's grammar): the
#: dtype's width in bits, for a range that depends on it (a shift amount's, ``[0, "bits - 1"]``)
WIDTH = "bits"


def range_end(end, dtype: str):
    """A value range's end in ``dtype``: a number as it stands, or an expression in
    :data:`WIDTH`, the integer type's width in bits.

    >>> range_end("bits - 1", "int4"), range_end("bits - 1", "uint64"), range_end(7, "int4")
    (3, 63, 7)
    """
    if not isinstance(end, str):
        return end
    from conform.spec.critical import evaluate

    return int(evaluate(end, dtype, {WIDTH: int_info(dtype).bits}))


def dtype_range(low, high, dtype: str) -> tuple:
    """``[low, high]`` (an int or float value range) clipped to the values ``dtype`` holds: an
    integer type's bounds, a float format's finite values (positive ones only for an unsigned
    format such as float8_e8m0fnu). Empty where ``low > high`` comes back. An int range's end
    may be an expression in the type's width (:func:`range_end`)."""
    low, high = range_end(low, dtype), range_end(high, dtype)
    if dtype in FLOAT_FORMATS:   # e.g. [-1000, 1000] in float8_e4m3fn (largest finite value 448)
        fmt = FLOAT_FORMATS[dtype]
        bottom = -fmt.max_finite if fmt.signed else fmt.min_normal   # E8M0: positive only
        return max(low, bottom), min(high, fmt.max_finite)
    info = int_info(dtype)
    return max(low, int(info.min)), min(high, int(info.max))


def check_runnable(data: dict, root: yaml.Node, path: Path, found: OpDefinition) -> None:
    """Raise SpecError where ``data`` (a schema-valid spec) declares what a run cannot do."""
    _check_ranks(data, root, path, found)
    _check_attributes(data, root, path, found)
    inputs = [e if isinstance(e, str) else e["name"] for e in data["signature"]["inputs"]]
    _check_ranges(data.get("values", {}), data, None, ("values",), root, path)
    for name, ranges in data.get("input_values", {}).items():
        if name not in inputs:
            raise SpecError(path, line_of(root, ["input_values", name]), f"input_values.{name}",
                            f"{name!r} names no input (inputs: {inputs})")
        _check_ranges(ranges, data, name, ("input_values", name), root, path)
    for cls, values in data.get("edge_values", {}).items():
        for k, value in enumerate(values):
            _check_edge_value(value, cls, ("edge_values", cls, k), root, path)
    for i, entry in enumerate(data.get("edge_cases", [])):
        for name, value in entry.items():
            _check_edge_value(value, "float", ("edge_cases", i, name), root, path)


def _dtypes_of(data: dict, cls: str, name: str | None) -> list[str]:
    """The dtypes of class ``cls`` an input (``name``; None: any input) may be drawn in: the
    spec's dtypes and the fixed types of its signature's inputs."""
    found = list(data["dtypes"])
    for entry in data["signature"]["inputs"]:
        if isinstance(entry, dict) and (name is None or entry["name"] == name):
            kind = entry.get("type", "T")
            if name is not None and kind != "T":
                found = []
            found += [] if kind == "T" else kind if isinstance(kind, list) else [kind]
    return [d for d in dict.fromkeys(found) if dtype_class(d) == cls]


def _check_ranges(ranges: dict, data: dict, name: str | None, at: tuple, root: yaml.Node,
                  path: Path) -> None:
    """A ``values`` (``name`` None) or ``input_values`` entry: each class's range for the dtypes
    of the class without a range of their own, each dtype's range for that dtype, which must
    be one the input is drawn in."""
    for key, pair in ranges.items():
        if key in ("float", "int"):
            dtypes = [d for d in _dtypes_of(data, key, name) if d not in ranges]
            _check_range(pair, dtypes, key, (*at, key), root, path)
            continue
        if key not in _dtypes_of(data, dtype_class(key), name):
            raise SpecError(path, line_of(root, [*at, key]), ".".join((*at, key)),
                            f"{key!r} is no dtype the input is drawn in")
        _check_range(pair, [key], dtype_class(key), (*at, key), root, path)


def _check_range(pair: list, dtypes: list[str], cls: str, at: tuple, root: yaml.Node,
                 path: Path) -> None:
    """A value range's ends are finite (integers for ``int``), in order, no wider than float64
    can draw from, and each dtype of its class holds a value in it."""
    def refuse(message, *more):
        raise SpecError(path, line_of(root, [*at, *more]), ".".join(map(str, [*at, *more])),
                        f"range={pair!r}: {message}")

    low, high = pair
    for k, end in enumerate(pair):
        if isinstance(end, str):
            _check_width_expression(end, dtypes, cls, lambda message: refuse(message, k))
            continue
        if isinstance(end, bool) or not _finite(end):
            refuse("a draw needs finite ends, not NaN, infinity or beyond float64", k)
        if cls == "int" and float(end) != int(end):
            refuse("an int range needs whole-number ends", k)
    if not any(isinstance(end, str) for end in pair) and low > high:
        refuse("the ends are reversed: write [low, high]")
    if cls == "float" and not math.isfinite(float(high) - float(low)):
        refuse("wider than float64 holds (high - low overflows): no uniform draw")
    for dtype in dtypes:
        bottom, top = dtype_range(low, high, dtype)
        if bottom > top:
            refuse(f"no {dtype} value lies in it (the type's finite range is elsewhere)")
        if cls == "int" and top > _INT64_MAX:   # integers are drawn in int64
            refuse(f"its {dtype} values beyond int64 cannot be drawn: end it at {_INT64_MAX}")


def _check_width_expression(end: str, dtypes: list[str], cls: str, refuse) -> None:
    """An expression end: in an ``int`` range only, naming the width alone (:func:`range_end`)
    and giving a whole number in every dtype."""
    from conform.spec.critical import RegionExpressionError, parse

    if cls != "int":
        refuse(f"only an int range's end may be an expression (in {WIDTH!r}), not {end!r}")
    try:
        parse(end, (WIDTH,))
        values = [float(range_end(end, dtype)) for dtype in dtypes]
    except (RegionExpressionError, KeyError, ValueError, OverflowError) as exc:
        refuse(f"{end!r} is not an expression in {WIDTH!r} alone: {exc}")
    if any(not _finite(v) for v in values):
        refuse(f"{end!r} is not a finite number in every dtype")


def _finite(number) -> bool:
    try:
        return math.isfinite(float(number))
    except OverflowError:   # an integer beyond float64's range
        return False


def _check_edge_value(value, cls: str, at: tuple, root: yaml.Node, path: Path) -> None:
    """An edge value's name is one some dtype has (a name a dtype lacks, as ``inf`` in
    float8_e4m3fn or ``int_min`` in a float type, is left out of its draws: no error), a number
    fits float64 (NaN and infinities are edge values too), and an integer list's numbers are
    whole."""
    where = (line_of(root, list(at)), ".".join(map(str, at)))
    if isinstance(value, str):
        try:
            resolve_edge_value(value, _NAMES_OF)
        except KeyError as exc:
            if type(exc) is KeyError:   # not AbsentValue: a name no dtype has
                raise SpecError(path, *where, f"edge value {value!r} is neither a number nor "
                                "a known name (docs/spec-format.md, edge_values)") from None
    elif isinstance(value, int) and not isinstance(value, bool) and not _finite(value):
        raise SpecError(path, *where, f"{value} is beyond float64's range")
    elif cls == "int" and isinstance(value, float) and math.isfinite(value) \
            and not value.is_integer():
        raise SpecError(path, *where, f"{value!r} is no whole number, as an int edge value must be")


def _check_ranks(data: dict, root: yaml.Node, path: Path, found: OpDefinition) -> None:
    """``min_rank <= max_rank`` (each defaulting as the drawers do)."""
    signature = data["signature"]
    if not {"min_rank", "max_rank"} & set(signature):
        return
    low, high = (signature.get(k, d) for k, d in zip(("min_rank", "max_rank"), DEFAULT_RANKS))
    if low > high:
        key = "min_rank" if "min_rank" in signature else "max_rank"
        raise SpecError(path, line_of(root, ["signature", key]), f"signature.{key}",
                        f"min_rank={low} is above max_rank={high}: no shape has such a rank"
                        + ("" if {"min_rank", "max_rank"} <= set(signature) else
                           f" (max_rank defaults to {DEFAULT_RANKS[1]})"))


def _check_attributes(data: dict, root: yaml.Node, path: Path, found: OpDefinition) -> None:
    """Every attribute is one the op's oracle takes (every case passes them to it) and none
    is a keyword the harness gives the oracle itself."""
    parameters = inspect.signature(found.oracle).parameters
    any_keyword = any(p.kind == p.VAR_KEYWORD for p in parameters.values())
    for name in data["signature"].get("attrs", {}):
        taken = name in parameters and parameters[name].kind in (
            inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        if name in RESERVED_ATTRS or not (taken or any_keyword):
            raise SpecError(path, line_of(root, ["signature", "attrs", name]),
                            f"signature.attrs.{name}",
                            f"attribute {name!r} is reserved for the harness" if name in
                            RESERVED_ATTRS else f"the oracle of op {data['op']} "
                            f"({found.module}) takes no attribute {name!r}")


def check_model_hooks(data: dict, root: "yaml.Node", path: Path, found: "OpDefinition",
                      models: list) -> None:
    """A model that needs an op hook names an op that has it (the correctly_rounded model
    only where float64 is listed)."""
    needs = (("derived", "error_bound", "the derived model needs an error_bound hook"),
             ("statistical", "distribution", "the statistical model needs a distribution hook"),
             ("correctly_rounded", "rounded64", "the correctly_rounded model of a float64 result "
              "needs a rounded64 hook (the float64 oracle's value is itself a rounding)"))
    for model_name, hook, text in needs:
        if getattr(found, hook) is None and any(model_name in model for by_dtype in models
                                                for model in by_dtype.values()) \
                and (hook != "rounded64" or "float64" in data["dtypes"]):
            raise SpecError(path, line_of(root, ["error_model"]), "error_model",
                            f"{text}, and op {data['op']} ({found.module}) has none")
