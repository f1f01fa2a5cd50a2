"""JSON Schema for op spec files (ops/*.yaml, and the YAML files of installed op packages).

The schema is also written to ``spec/schema.json`` (``python -m conform.spec``) so that
editors can autocomplete spec files.
"""
from conform.model_formats import ONNX_OPSET_NEWEST

DTYPES = ["bool", "int2", "int4", "int8", "int16", "int32", "int64", "uint2", "uint4", "uint8",
          "uint16", "uint32", "uint64", "float4_e2m1fn", "float8_e4m3fn", "float8_e4m3fnuz",
          "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float8_e4m3", "float8_e3m4",
          "float8_e4m3b11fnuz", "float6_e2m3fn", "float6_e3m2fn", "float16", "bfloat16", "float32",
          "float64", "complex64", "complex128", "string"]

# List sizes a run can afford (the built-in specs use a fraction): the edge sweep of a binary op
# holds every pair of edge values, each edge case and critical region is a case per dtype.
MAX_EDGE_VALUES = 64
MAX_ROWS = 256
MAX_REGIONS = 64
MAX_CHOICES = 256
MAX_OPERANDS = 64
#: The kinds of ``properties`` entries (harness/judge/properties.py checks each).
PROPERTY_KINDS = ("range", "monotone", "symmetry", "row_sum", "fixed_points")

# an end is a number, or (an int range) an expression in the type's width, "bits - 1"
_range = {"type": "array", "minItems": 2, "maxItems": 2,
          "items": {"oneOf": [{"type": "number"}, {"type": "string", "maxLength": 100}]}}
# per class (float, int), or per dtype (its own range, overriding its class's: float8_e8m0fnu
# holds no value at or below 0)
_value_ranges = {
    "type": "object",
    "additionalProperties": _range,
    "propertyNames": {"enum": ["float", "int"] + [d for d in DTYPES
                                                  if d not in ("bool", "string")
                                                  and not d.startswith("complex")]},
}
_edge_value = {"oneOf": [{"type": "number"}, {"type": "string"}, {"type": "boolean"}]}
_error_model = {
    "type": "object",
    "additionalProperties": False,
    "required": ["why"],
    "minProperties": 2,
    "maxProperties": 4,
    "properties": {
        "why": {"type": "string", "minLength": 10},
        "exact": {"const": True},
        # the correct rounding of the exact result, bit for bit (docs/error-models.md)
        "correctly_rounded": {"const": True},
        "ulp": {"oneOf": [
            {"type": "number", "minimum": 0},
            {"type": "object", "additionalProperties": False, "required": ["below", "above"],
             "properties": {"below": {"type": "number", "minimum": 0},
                            "above": {"type": "number", "minimum": 0}}}]},
        "abs_rel": {
            "type": "object", "additionalProperties": False, "required": ["atol", "rtol"],
            "properties": {"atol": {"type": "number", "minimum": 0},
                           "rtol": {"type": "number", "minimum": 0}},
        },
        "accumulation": {
            "type": "object", "additionalProperties": False,
            "properties": {"final_ulp": {"type": "number", "minimum": 0},
                           "accumulator_at_least": {"enum": ["float32", "float64"]},
                           "product_roundings": {"type": "integer", "minimum": 0}},
        },
        # a composite op's bound, derived in its op module's ``error_bound`` hook from the
        # rounding errors of the computation its standard defines (docs/error-models.md)
        "derived": {
            "type": "object", "additionalProperties": False,
            "properties": {"final_ulp": {"type": "number", "minimum": 0},
                           "accumulator_at_least": {"enum": ["float32", "float64"]},
                           "constants": {"type": "object",
                                         "additionalProperties": {"type": "number",
                                                                  "minimum": 0}}},
        },
        # a random op's outputs tested against the law its text states, each case's tests
        # together at false-alarm probability at most alpha (docs/error-models.md)
        "statistical": {
            "type": "object", "additionalProperties": False, "required": ["alpha"],
            "properties": {"alpha": {"type": "number", "exclusiveMinimum": 0,
                                     "maximum": 1e-6}},
        },
        "signed_zero": {"enum": ["strict", "any"]},
        "saturate": {"const": True},   # overflow gives ±max_finite (docs/error-models.md)
    },
}

_error_models = {   # per dtype (or dtype class) the model judging it
    "type": "object",
    "minProperties": 1,
    "propertyNames": {"enum": ["float", "complex", "int", "bool", "string"] + DTYPES},
    "additionalProperties": _error_model,
}
_input_name = {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"}
_attribute_domain = {"oneOf": [
    {"type": ["number", "boolean", "string"]},
    {"type": "array"},
    {"type": "object", "additionalProperties": False, "required": ["choice"],
     "properties": {"choice": {"type": "array", "minItems": 1, "maxItems": MAX_CHOICES}}},
    {"type": "object", "additionalProperties": False, "required": ["range"],
     "properties": {"range": {"type": "array", "items": {"type": "integer"}, "minItems": 2,
                              "maxItems": 2}}},
    {"type": "object", "additionalProperties": False, "required": ["axis_of"],
     "properties": {"axis_of": _input_name, "negative": {"type": "boolean"}}},
    {"type": "object", "additionalProperties": False, "required": ["axes_of"],
     "properties": {"axes_of": _input_name, "negative": {"type": "boolean"},
                    "min_size": {"type": "integer", "minimum": 0}}},
    {"type": "object", "additionalProperties": False, "required": ["permutation_of"],
     "properties": {"permutation_of": _input_name}},
]}

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "conform op spec",
    "type": "object",
    "additionalProperties": False,
    "required": ["op", "summary", "defined_by", "signature", "dtypes", "error_model", "bindings"],
    "properties": {
        "op": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
        "summary": {"type": "string", "minLength": 5},
        "defined_by": {
            "type": "object",
            "additionalProperties": False,
            "minProperties": 1,   # at least one standard; ops XLA does not define omit xla
            "properties": {
                "xla": {
                    "type": "object", "additionalProperties": False, "required": ["name", "section"],
                    "properties": {"name": {"type": "string"}, "section": {"type": "string"},
                                   "source": {"type": "string"}},
                },
                "onnx": {
                    "type": "object", "additionalProperties": False, "required": ["name"],
                    "properties": {"name": {"type": "string"}, "opset": {"type": "integer"},
                                   "note": {"type": "string"}},
                },
                "nnef": {
                    "type": "object", "additionalProperties": False, "required": ["name"],
                    "properties": {"name": {"type": "string"}, "note": {"type": "string"}},
                },
            },
        },
        "signature": {
            "type": "object",
            "additionalProperties": False,
            "required": ["inputs"],
            "properties": {
                "inputs": {"type": "array", "minItems": 0, "maxItems": MAX_OPERANDS,
                           "items": {"oneOf": [
                    {"type": "string"},
                    {"type": "object", "additionalProperties": False, "required": ["name"],
                     "properties": {"name": {"type": "string"},
                                    "type": {"oneOf": [
                                        {"enum": ["T"] + DTYPES},
                                        {"type": "array", "items": {"enum": DTYPES},
                                         "minItems": 2, "uniqueItems": True}]},
                                    "optional": {"type": "boolean"},
                                    "scalar": {"type": "boolean"}}}]}},
                "min_rank": {"type": "integer", "minimum": 0},
                "max_rank": {"type": "integer", "minimum": 0, "maximum": 6},
                "shapes": {"enum": ["equal", "onnx_broadcast", "nnef_broadcast", "xla_broadcast"]},
                "attrs": {"type": "object", "additionalProperties": _attribute_domain},
                "outputs": {"type": "array", "minItems": 1, "maxItems": MAX_OPERANDS,
                            "items": {"oneOf": [
                    _input_name,
                    {"type": "object", "additionalProperties": False, "required": ["name"],
                     "properties": {"name": _input_name, "type": {"enum": ["T"] + DTYPES},
                                    "error_model": _error_models,
                                    # an ONNX sequence output: this output (its elements
                                    # raveled and concatenated) and the next (their shapes,
                                    # int64 [length, rank]) are one graph output (ops/sequence_values.py)
                                    "sequence": {"const": True}}}]}},
            },
        },
        "dtypes": {"type": "array", "items": {"enum": DTYPES}, "minItems": 1, "uniqueItems": True},
        "output_dtype": {"oneOf": [{"enum": ["same", "bool", "component"]}, {"const": "attr:new_dtype"}]},
        "values": _value_ranges,
        "input_values": {"type": "object", "additionalProperties": _value_ranges},
        "edge_values": {
            "type": "object", "additionalProperties": False,
            "properties": {"float": {"type": "array", "items": _edge_value,
                                     "maxItems": MAX_EDGE_VALUES},
                           "int": {"type": "array", "items": _edge_value,
                                   "maxItems": MAX_EDGE_VALUES}},
        },
        "edge_cases": {
            "type": "array", "maxItems": MAX_ROWS,
            "items": {"type": "object", "minProperties": 1, "additionalProperties": _edge_value},
        },
        "special_values": {
            "type": "array", "maxItems": MAX_ROWS,
            "items": {
                "type": "object", "additionalProperties": False,
                "required": ["inputs", "output", "source"],
                "properties": {"inputs": {"type": "array", "items": _edge_value, "minItems": 1},
                               "output": {"oneOf": [{"type": "number"}, {"type": "string"}]},
                               "source": {"type": "string", "minLength": 5}},
            },
        },
        "error_model": _error_models,
        # where the op's behaviour changes, over the dtype's constants (spec/critical.py)
        "critical_regions": {
            "type": "array", "maxItems": MAX_REGIONS,
            "items": {
                "type": "object", "additionalProperties": False, "required": ["name", "at", "why"],
                "oneOf": [{"required": ["ulps"]}, {"required": ["rel"]}],
                "properties": {"name": _input_name,
                               "at": {"oneOf": [{"type": "number"}, {"type": "string"}]},
                               "ulps": {"type": "integer", "minimum": 1, "maximum": 1 << 20},
                               "rel": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                               "input": _input_name, "mirror": {"type": "boolean"},
                               "with": {"type": "object", "additionalProperties": {
                                   "oneOf": [{"type": "number"}, {"type": "string"}]}},
                               "why": {"type": "string", "minLength": 10}},
            },
        },
        "implementation_defined": {
            "type": "array", "maxItems": MAX_REGIONS,
            "items": {
                "type": "object", "additionalProperties": False, "required": ["region", "why"],
                "properties": {"region": {"type": "string"}, "why": {"type": "string"},
                               "outputs": {"type": "array", "items": _input_name, "minItems": 1},
                               # how the region's answers must agree across positions
                               # (harness/judge/consistency.py): element-wise ops always
                               "consistency": {"enum": ["value", "selected"]}},
            },
        },
        # what the standard promises beyond one element's error, judged on every case
        # (harness/judge/properties.py): each entry one kind and the source that promises it
        "properties": {
            "type": "array", "maxItems": MAX_REGIONS,
            "items": {
                "type": "object", "additionalProperties": False, "required": ["source"],
                "oneOf": [{"required": [kind]} for kind in PROPERTY_KINDS],
                "properties": {"range": _range, "fixed_points": _range,
                               "monotone": {"enum": ["increasing", "decreasing"]},
                               "symmetry": {"enum": ["odd", "even"]},
                               "row_sum": {"type": "number"},
                               "output": _input_name,
                               "source": {"type": "string", "minLength": 10}},
            },
        },
        # value plans for ill-conditioned but legal inputs (generators/_values.py): "offset", a
        # large common offset with a small spread; "cancel", sums that nearly cancel. one_pass:
        # whether the text lets the variance be evaluated in one pass (mean(x*x) - mean(x)**2)
        "conditioning": {
            "type": "object", "additionalProperties": False, "required": ["plans", "why"],
            "properties": {"plans": {"type": "array", "minItems": 1, "uniqueItems": True,
                                     "items": {"enum": ["offset", "cancel"]}},
                           "one_pass": {"enum": ["allowed", "forbidden"]},
                           "why": {"type": "string", "minLength": 10}},
        },
        # pairs of attribute classes (or optional inputs' presence) the covering design
        # leaves out (spec/_design.py): the text rules them out or leaves them open
        "excluded_pairs": {
            "type": "array", "maxItems": MAX_REGIONS,
            "items": {
                "type": "object", "additionalProperties": False, "required": ["when", "why"],
                "properties": {"when": {"type": "object", "minProperties": 2,
                                        "maxProperties": 2},
                               "why": {"type": "string", "minLength": 10}},
            },
        },
        "bindings": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                # ``lax`` may be left out where the op module's ``lax`` hook lowers the op
                # without it (the loader checks); or why jax cannot express the op (every case
                # of it is then unsupported with that reason: conform.harness.backends.base.binding)
                "xla": {"oneOf": [
                    {"type": "object", "additionalProperties": False,
                     "properties": {"lax": {"type": "string"}, "params": {"type": "object"}}},
                    {"type": "object", "additionalProperties": False, "required": ["unsupported"],
                     "properties": {"unsupported": {"type": "string", "minLength": 10}}}]},
                "onnx": {
                    # ``opsets``: the first and last opset whose text of the operator the
                    # binding follows (required: a binding claims no version it never read)
                    "type": "object", "additionalProperties": False,
                    "required": ["op_type", "opsets"],
                    "properties": {"op_type": {"type": "string"}, "attributes": {"type": "object"},
                                   "opsets": {"type": "array", "minItems": 2, "maxItems": 2,
                                              "items": {"type": "integer", "minimum": 1,
                                                        "maximum": ONNX_OPSET_NEWEST}},
                                   "dtypes": {"type": "array", "items": {"enum": DTYPES}},
                                   # per signature input, the ONNX operator's formal input it
                                   # feeds (a sequence formal takes its elements), or null for
                                   # a value a subgraph reads from the outer scope
                                   "operands": {"type": "array", "minItems": 1,
                                                "items": {"type": ["string", "null"]}}},
                },
                "nnef": {
                    "type": "object", "additionalProperties": False, "required": ["op"],
                    "properties": {"op": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
                                   "attributes": {"type": "object"}},
                },
                # the numpy backend's computation (conform.ops.numpy_computation): numpy.<fn>(*inputs,
                # **params, **attrs), or why NumPy cannot express the op
                "numpy": {"oneOf": [
                    {"type": "object", "additionalProperties": False, "required": ["fn"],
                     "properties": {"fn": {"type": "string",
                                           "pattern": "^[a-z_][a-z0-9_]*(\\.[a-z_][a-z0-9_]*)*$"},
                                    "params": {"type": "object"},
                                    "attrs": {"type": "object", "additionalProperties": {
                                        "type": "string", "pattern": "^[a-z_][a-z0-9_]*$"}}}},
                    {"type": "object", "additionalProperties": False, "required": ["unsupported"],
                     "properties": {"unsupported": {"type": "string", "minLength": 10}}}]},
            },
        },
    },
}
