"""ONNX's shape and creation operators (ai.onnx): Flatten, Shape (start and end), Size,
EyeLike, ConstantOfShape and Constant. Flatten copies its input's elements; Shape and Size read
only its shape; EyeLike, ConstantOfShape and Constant make new tensors of a type an attribute
names. Every output is judged exactly: an element is a copy, a count, a 0, a 1 or an attribute's
value."""
from __future__ import annotations

import math

import numpy as np
from conform.ops.movement import moved

from conform.dtypes import (
    FLOAT_FORMATS,
    STRING,
    AbsentValue,
    component_dtype,
    int_info,
    is_complex,
    is_integer,
    np_dtype,
    resolve_edge_value,
)
from conform.model_formats import Unsupported, onnx_opset
from conform.ops._lowering import from_onnx_element_types
from conform.op_registry import op


def no_input_feeds(inputs, attrs, index):
    """No input element is a term of the output element (it is a shape, a count or a
    constant)."""
    return [None] * len(inputs)


def _onnx_type_name(dtype: str) -> str:
    """The type string an ONNX schema's constraint lists for conform dtype ``dtype``."""
    return {"float32": "float", "float64": "double", "float8_e8m0fnu": "float8e8m0",
            "float4_e2m1fn": "float4e2m1"}.get(dtype, dtype.replace("float8_", "float8"))


def require_schema_type(op_type: str, param: str, dtype: str) -> None:
    """Raise :class:`Unsupported` where the schema of ``op_type`` at the run's opset does not
    allow ``dtype`` for type parameter ``param`` (an output's type, which the drawn dtype label
    does not carry: EyeLike's and ConstantOfShape's T2)."""
    import onnx.defs

    schema = onnx.defs.get_schema(op_type, onnx_opset())
    allowed = next(tc.allowed_type_strs for tc in schema.type_constraints
                   if tc.type_param_str == param)
    if f"tensor({_onnx_type_name(dtype)})" not in allowed:
        raise Unsupported(f"ONNX {op_type} (opset {onnx_opset()}) does not allow {dtype} for "
                          f"{param}: the standard rules this case out")


# -- Flatten ------------------------------------------------------------------------------------

def draw_onnx_flatten(draw, kit, spec, dtype):
    """An input of rank 0 to 4 (empty dimensions too) and ``axis`` in [-r, r]."""
    shape = draw(kit.shape(min_rank=0, max_rank=4, max_side=5,
                           min_side=draw(kit.st.sampled_from([1, 1, 1, 0]))))
    rank = len(shape)
    return kit.Signature((dtype,), (shape,), {"axis": draw(kit.st.integers(-rank, rank))}, dtype)


def numpy_onnx_flatten(data, *, axis):
    """The numpy backend: ``np.reshape`` to the two products."""
    axis = axis + data.ndim if axis < 0 else axis
    return data.reshape(math.prod(data.shape[:axis]), math.prod(data.shape[axis:]))


@moved("onnx_flatten", draw=draw_onnx_flatten, numpy=numpy_onnx_flatten,
       onnx=lambda case, graph: graph.node(graph.op_type, graph.inputs, axis=case.attrs["axis"]))
def oracle_onnx_flatten(data, *, axis):
    """Flatten: shape (d_0 X ... X d_(axis-1), d_axis X ... X d_n), the elements in row-major
    order; ``axis`` in [-r, r], negative 'counting dimensions from the back'; axis 0 gives
    (1, d_0 X ... X d_n)."""
    axis = axis + data.ndim if axis < 0 else axis
    outer = int(np.prod(data.shape[:axis], dtype=np.int64))
    inner = int(np.prod(data.shape[axis:], dtype=np.int64))
    return (data.ravel(order="C").reshape(outer, inner),)


# -- Shape and Size -----------------------------------------------------------------------------

def draw_onnx_shape(draw, kit, spec, dtype):
    """An input of rank 0 to 5 and ``start`` and ``end`` each absent or anywhere in
    [-r - 2, r + 2] (the text clamps them to [0, r])."""
    st = kit.st
    shape = draw(kit.shape(min_rank=0, max_rank=5, max_side=4,
                           min_side=draw(st.sampled_from([1, 1, 1, 0]))))
    rank, attrs = len(shape), {}
    for name in ("start", "end"):
        if draw(st.booleans()):
            attrs[name] = draw(st.integers(-rank - 2, rank + 2))
    return kit.Signature((dtype,), (shape,), attrs, "int64")


def _clamped(axis: int, rank: int) -> int:
    """'Negative axes indicate counting back from the last axis ... axes will be clamped to the
    range [0, r]' (after adding r to a negative one)."""
    return min(max(axis + rank if axis < 0 else axis, 0), rank)


def numpy_onnx_shape(data, *, start=0, end=None):
    """The numpy backend: the slice ``data.shape[start:end]`` (Python's slice clamps alike)."""
    return np.asarray(data.shape[start:end], dtype=np.int64)


@op("onnx_shape", version=1, draw=draw_onnx_shape, numpy=numpy_onnx_shape,
    feeding=no_input_feeds, onnx=lambda case, graph: graph.node(graph.op_type, graph.inputs,
                                                                  **case.attrs))
def oracle_onnx_shape(data, *, start=0, end=None):
    """Shape-15: the sizes of the axes from ``start`` (default 0) up to ``end`` (exclusive,
    default r), each negative one counted from the back, then clamped to [0, r]; empty where
    start >= end."""
    rank = data.ndim
    first, last = _clamped(start, rank), _clamped(rank if end is None else end, rank)
    return (np.array([data.shape[k] for k in range(first, last)], dtype=np.int64),)


def draw_onnx_size(draw, kit, spec, dtype):
    """An input of rank 0 to 5, empty dimensions too."""
    shape = draw(kit.shape(min_rank=0, max_rank=5, max_side=5,
                           min_side=draw(kit.st.sampled_from([1, 1, 1, 0]))))
    return kit.Signature((dtype,), (shape,), {}, "int64")


@op("onnx_size", version=1, draw=draw_onnx_size, feeding=no_input_feeds,
    numpy=lambda data: np.int64(np.size(data)))
def oracle_onnx_size(data):
    """Size: 'a int64 scalar that equals to the total number of elements' (1 for a 0-d
    input, 0 for an empty one)."""
    return (np.array(math.prod(data.shape), dtype=np.int64),)


def _widened(dtype: str) -> np.dtype:
    """The type an oracle answers in for outputs of ``dtype``: bool, uint64 (whose largest
    values int64 does not hold), int64 for the other integers, complex128 for complex, else
    float64."""
    if is_complex(dtype):
        return np.dtype(np.complex128)
    if dtype in ("bool", "uint64"):
        return np.dtype(dtype)
    if dtype == STRING:   # text: object arrays of str
        return np.dtype(object)
    return np.dtype(np.int64 if is_integer(dtype) else np.float64)


# -- EyeLike ------------------------------------------------------------------------------------

def draw_onnx_eye_like(draw, kit, spec, dtype):
    """A 2-D input of T1 (empty sides too), ``k`` anywhere from below the first row to past the
    last column, and ``dtype`` (T2) absent (the input's type) or any type the spec lists."""
    st = kit.st
    rows, cols = draw(st.integers(0, 6)), draw(st.integers(0, 6))
    attrs = {"k": draw(st.integers(-rows - 1, cols + 1))}
    out = dtype
    if draw(st.booleans()):
        out = attrs["dtype"] = draw(st.sampled_from(spec.dtypes))
    return kit.Signature((dtype,), ((rows, cols),), attrs, out)


def onnx_eye_like(case, graph):
    """One EyeLike node, ``dtype`` as its ONNX element type (refused where the opset's T2 does
    not hold it)."""
    attrs = {"k": case.attrs["k"]}
    if "dtype" in case.attrs:
        require_schema_type(graph.op_type, "T2", case.attrs["dtype"])
        attrs["dtype"] = graph.onnx_type(case.attrs["dtype"])
    graph.node(graph.op_type, graph.inputs, **attrs)


def numpy_onnx_eye_like(data, *, k, dtype=None):
    """The numpy backend: ``np.eye`` in the output type."""
    return np.eye(*data.shape, k=k, dtype=np_dtype(dtype) if dtype else data.dtype)


@op("onnx_eye_like", version=1, draw=draw_onnx_eye_like, onnx=onnx_eye_like,
    numpy=numpy_onnx_eye_like, feeding=no_input_feeds, from_onnx=from_onnx_element_types("dtype"))
def oracle_onnx_eye_like(data, *, k, dtype=None, dtypes=()):
    """EyeLike: the input's shape, 'T2[i, i+k] = 1' and zeros everywhere else (1 and 0 of the
    output type: True and False for bool); T2 is ``dtype``, else the input's type."""
    rows, cols = data.shape
    i, j = np.arange(rows)[:, None], np.arange(cols)[None, :]
    return ((j - i == k).astype(_widened(dtype or (dtypes[0] if dtypes else "float64"))),)


# -- ConstantOfShape ----------------------------------------------------------------------------

#: Values drawn for the ``value`` attribute, by name (:func:`conform.dtypes.resolve_edge_value`);
#: a name the output type lacks (inf in float8_e4m3fn, -0 in fnuz and integer types) is not drawn.
CONSTANT_VALUES = ("zero", "-zero", "one", "-one", "half", "max_finite", "-max_finite",
                   "min_subnormal", "inf", "-inf", "nan", "int_min", "int_max")


def _constant(name, dtype: str):
    """The ``value`` attribute's number: a name resolved in ``dtype``, or a bool as it is."""
    return name if dtype == "bool" else resolve_edge_value(name, dtype)


def _has_value(name: str, dtype: str) -> bool:
    """Whether the output type holds the named value (integers: within their range)."""
    try:
        value = _constant(name, dtype)
    except (AbsentValue, KeyError):
        return False
    return not is_integer(dtype) or int_info(dtype).min <= value <= int_info(dtype).max


def draw_onnx_constant_of_shape(draw, kit, spec, dtype):
    """The output's rank (the int64 shape input's length, 0 giving a scalar) and ``value``: a
    number of the output type (T2, the dtype label), or absent for float32 (the text's
    default: 0 of type float32)."""
    st = kit.st
    rank = draw(st.integers(0, 4))
    if dtype == "bool":
        attrs = {"value": draw(st.booleans())}
    else:
        names = [n for n in CONSTANT_VALUES if _has_value(n, dtype)]
        attrs = {"value": draw(st.sampled_from(names))}
    if dtype == "float32" and draw(st.integers(0, 3)) == 0:
        attrs = {}
    return kit.Signature(("int64",), ((rank,),), {**attrs, "dtype": dtype}, dtype)


def values_onnx_constant_of_shape(rng, inputs, attrs):
    """The shape: sides in [0, 4] with at most 256 elements."""
    (shape,) = inputs
    sides = rng.integers(0, 5, size=shape.shape)
    while math.prod(sides.tolist()) > 256:
        sides = np.maximum(sides - 1, 0)
    return [sides.astype(np.int64)]


def onnx_constant_of_shape(case, graph):
    """One ConstantOfShape node with ``value`` a one-element tensor of the output type."""
    from onnx import numpy_helper

    dtype = case.attrs["dtype"]
    require_schema_type(graph.op_type, "T2", dtype)
    attrs = {}
    if "value" in case.attrs:
        value = np.array([_constant(case.attrs["value"], dtype)]).astype(np_dtype(dtype))
        attrs["value"] = numpy_helper.from_array(value, "value")
    graph.node(graph.op_type, graph.inputs, **attrs)


def numpy_onnx_constant_of_shape(shape, *, dtype, value=None):
    """The numpy backend: ``np.full`` in the output type."""
    fill = 0 if value is None else _constant(value, dtype)
    return np.full(tuple(shape.tolist()), fill, dtype=np_dtype(dtype))


def from_onnx_constant_of_shape(inputs, attrs, opset):
    """A ConstantOfShape node as a case: ``value``'s one element and type (the output's), or,
    without it, the text's default: 'the datatype defaults to float32'."""
    if attrs.get("value") is None:
        return inputs, {"dtype": "float32"}
    value = np.asarray(attrs["value"])
    return inputs, {"dtype": value.dtype.name, "value": value.reshape(-1)[0].item()}


@op("onnx_constant_of_shape", version=1, draw=draw_onnx_constant_of_shape,
    values=values_onnx_constant_of_shape, onnx=onnx_constant_of_shape,
    numpy=numpy_onnx_constant_of_shape, feeding=no_input_feeds, value_dependent_shape=True,
    from_onnx=from_onnx_constant_of_shape)
def oracle_onnx_constant_of_shape(shape, *, dtype, value=None):
    """ConstantOfShape: a tensor of shape ``input`` (empty: a scalar), every element ``value``
    (its type the output's), or 0 of type float32 without it."""
    fill = 0.0 if value is None else _constant(value, dtype)
    return (np.full(tuple(int(s) for s in shape), fill, dtype=_widened(dtype)),)


# -- Constant -----------------------------------------------------------------------------------

#: Constant's attribute forms that fix the output type
_TYPED_FORMS = {"float32": ("value_float", "value_floats"), "int64": ("value_int", "value_ints"),
                STRING: ("value_string", "value_strings")}


def bit_width(dtype: str) -> int:
    """The bits one element of ``dtype`` is made of (bool: 1; complex: its two parts)."""
    if dtype == "bool":
        return 1
    if is_complex(dtype):
        return 2 * bit_width(component_dtype(dtype))
    return FLOAT_FORMATS[dtype].bits if dtype in FLOAT_FORMATS else int_info(dtype).bits


def patterns(dtype: str) -> tuple[int, int]:
    """How many bit patterns :func:`from_bits` reads per element of ``dtype``, and each one's
    width: a complex element is two, its real part's then its imaginary part's."""
    if is_complex(dtype):
        return 2, bit_width(component_dtype(dtype))
    return 1, bit_width(dtype)


def from_bits(bits, dtype: str, shape=None) -> np.ndarray:
    """The array of ``dtype`` whose elements have the bit patterns ``bits`` (unsigned
    integers, little end first for the narrow types, each in its own byte as ml_dtypes keeps
    them; a complex element's two parts, real first: :func:`patterns`), shaped ``shape``."""
    if dtype == "bool":
        array = np.asarray(bits, np.uint8).astype(bool)
    else:
        array = np.asarray(bits, f"uint{max(8, patterns(dtype)[1])}").view(np_dtype(dtype))
    return array.reshape(shape if shape is not None else array.shape)


def draw_onnx_constant(draw, kit, spec, dtype):
    """A form (``value``, a tensor of any listed type; ``sparse_value``, one or more elements
    of one, the others 0, for types with a zero (the checker refuses a sparse tensor of no
    value, or of rank 0); ``value_float(s)`` for float32 and ``value_int(s)``
    for int64: a scalar or a 1-D list), a shape (empty sides too), and each element's bits,
    drawn over every pattern of the type (NaNs, -0 and subnormals included)."""
    st = kit.st
    forms = ("value", "value", "sparse_value") + _TYPED_FORMS.get(dtype, ())
    if dtype in ("float8_e8m0fnu", STRING):   # no zero: a sparse tensor's other elements
        forms = ("value",) + _TYPED_FORMS.get(dtype, ())   # would have no value
    form = draw(st.sampled_from(forms))
    if form in ("value", "sparse_value"):   # (a sparse tensor: rank >= 1, a value or more)
        shape = draw(kit.shape(min_rank=int(form != "value"), max_rank=3, max_side=5, min_side=draw(
            st.sampled_from([1, 1, 1, 0 if form == "value" else 1]))))
    else:
        shape = () if form in ("value_float", "value_int", "value_string") \
            else (draw(st.integers(1, 8)),)
    size = math.prod(shape)
    if dtype == STRING:   # the elements' text (kit.text: conform's string alphabet)
        text = draw(st.lists(kit.text(), min_size=size, max_size=size))
        return kit.Signature((), (), {"form": form, "dtype": dtype, "shape": list(shape),
                                      "bits": [], "text": text}, dtype)
    per, width = patterns(dtype)
    bits = draw(st.lists(st.integers(0, 2 ** width - 1), min_size=size * per,
                         max_size=size * per))
    attrs = {"form": form, "dtype": dtype, "shape": list(shape), "bits": bits}
    if form == "sparse_value":
        attrs["indices"] = sorted(draw(st.sets(st.integers(0, size - 1), min_size=1,
                                               max_size=size)))
        attrs["bits"] = bits[:len(attrs["indices"]) * per]
    return kit.Signature((), (), attrs, dtype)


def _sparse_attribute(dtype, shape, bits, indices):
    from onnx import helper, numpy_helper

    values = numpy_helper.from_array(from_bits(bits, dtype), "values")
    positions = numpy_helper.from_array(np.asarray(indices, np.int64), "indices")
    return helper.make_sparse_tensor(values, positions, list(shape))


def onnx_constant(case, graph):
    """One Constant node with the case's form; a form the run's opset does not have (the
    value_* forms before 12, sparse_value before 11) is ruled out by the standard."""
    from onnx import AttributeProto, helper, numpy_helper

    form, dtype, shape, bits = (case.attrs[k] for k in ("form", "dtype", "shape", "bits"))
    require_schema_type(graph.op_type, "T", dtype)
    since = {"value": 1, "sparse_value": 11}.get(form, 12)
    if onnx_opset() < since:
        raise Unsupported(f"ONNX Constant has no {form} before opset {since}")
    if form == "sparse_value":
        attribute = helper.make_attribute(form, _sparse_attribute(dtype, shape, bits,
                                                                  case.attrs["indices"]))
    elif form == "value":
        attribute = helper.make_attribute(form, numpy_helper.from_array(
            _dense(form, dtype, shape, bits, (), case.attrs.get("text", ())), "value"))
    else:
        array = _dense(form, dtype, shape, bits, (), case.attrs.get("text", ()))
        kind = {"value_float": AttributeProto.FLOAT, "value_floats": AttributeProto.FLOATS,
                "value_int": AttributeProto.INT, "value_ints": AttributeProto.INTS,
                "value_string": AttributeProto.STRING,
                "value_strings": AttributeProto.STRINGS}[form]
        numbers = [float(v) if dtype == "float32" else v if dtype == STRING else int(v)
                   for v in array.ravel()]
        attribute = helper.make_attribute(form, numbers if form.endswith("s") else numbers[0],
                                          attr_type=kind)
    graph.node(graph.op_type, [])
    graph.nodes[-1].attribute.append(attribute)


def _dense(form, dtype, shape, bits, indices, text=()):
    """The output's elements in ``dtype`` (a string array from ``text``)."""
    if dtype == STRING:
        out = np.empty(len(text), object)
        out[:] = list(text)
        return out.reshape(shape)
    if form != "sparse_value":
        return from_bits(bits, dtype, shape)
    out = np.zeros(math.prod(shape), np_dtype(dtype))
    out[np.asarray(indices, np.int64)] = from_bits(bits, dtype)
    return out.reshape(shape)


def numpy_onnx_constant(*, form, dtype, shape, bits, indices=(), text=()):
    """The numpy backend: the attribute's array (``np.zeros`` with the sparse elements set)."""
    return _dense(form, dtype, shape, bits, indices, text)


def from_onnx_constant(inputs, attrs, opset):
    """A Constant node as a case: its one attribute's form, and the tensor's type, shape and
    each element's bits (``value``, ``value_float(s)``, ``value_int(s)``; the sparse and
    string forms are not read back)."""
    (form, given), = attrs.items()
    typed = {f: t for t, forms in _TYPED_FORMS.items() for f in forms}
    if form not in ("value", *typed) or typed.get(form) == STRING:
        raise ValueError(f"a Constant's {form} is not read back as a case")
    value = np.asarray(given, np_dtype(typed[form]) if form in typed else None)
    if value.dtype.kind in "OUS":
        raise ValueError("a Constant of strings is not read back as a case")
    dtype = value.dtype.name
    width = patterns(dtype)[1]
    bits = np.ascontiguousarray(value).view(f"uint{max(8, width)}") & ((1 << width) - 1)
    return [], {"form": form, "dtype": dtype, "shape": list(value.shape),
                "bits": bits.ravel().tolist()}


@op("onnx_constant", version=1, draw=draw_onnx_constant, onnx=onnx_constant,
    numpy=numpy_onnx_constant, feeding=lambda inputs, attrs, index: [],
    from_onnx=from_onnx_constant)
def oracle_onnx_constant(*, form, dtype, shape, bits, indices=(), text=()):
    """Constant: 'a constant tensor', the value of the one attribute given: ``value`` (the
    tensor), ``sparse_value`` (its elements at ``indices``, the others 0), ``value_float(s)``
    (a float32 scalar or 1-D tensor), ``value_int(s)`` (int64), ``value_string(s)`` (a string
    scalar or 1-D tensor: ``text``)."""
    return (_dense(form, dtype, shape, bits, indices, text).astype(_widened(dtype)),)
