"""Spec loading: every built-in spec validates; malformed specs name file, line and field."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conform.spec import BUILTIN_DIR, SpecError, load_spec, load_specs

# A fixed copy of a spec, so that line numbers in the expectations below do not move when the
# built-in add.yaml grows.
ADD = """\
op: add
summary: Element-wise sum lhs + rhs.
defined_by:
  xla: {name: Add, section: "element-wise binary arithmetic", source: seeds/004_c11ff90b720ca9d5.txt}
  onnx: {name: Add, opset: 14}
signature: {inputs: [lhs, rhs]}
dtypes: [float16, float32, float64, int32, int64]
values: {float: [-100, 100], int: [-10000, 10000]}
error_model:
  float: {ulp: 0.5, why: "IEEE 754-2019 5.4.1: addition is correctly rounded (<= 0.5 ULP)"}
  int: {exact: true, why: "integer addition is exact where the result fits"}
implementation_defined:
  - {region: int_overflow, why: "XLA semantics do not specify integer overflow"}
bindings:
  xla: {lax: add}
  onnx: {op_type: Add, opsets: [14, 28]}
"""


def test_builtin_suite_has_at_least_24_ops_each_citing_its_standards(specs):
    assert len(specs) >= 24
    assert sum("xla" in spec.defined_by for spec in specs.values()) >= 24
    for spec in specs.values():
        assert spec.defined_by, spec.op
        if "xla" in spec.defined_by:
            assert spec.defined_by["xla"]["section"], spec.op
        assert spec.bindings, spec.op
        for fmt in spec.bindings:   # a binding needs the standard that defines the op in it
            assert fmt == "numpy" or fmt in spec.defined_by, (spec.op, fmt)


def test_a_spec_without_xla_loads(tmp_path):
    text = ADD.replace(
        "  xla: {name: Add, section: \"element-wise binary arithmetic\", source: seeds/004_c11ff90b720ca9d5.txt}\n", "")
    assert "xla: {name" not in text
    spec = load_spec(_write(tmp_path, text.replace("  xla: {lax: add}\n", "")))
    assert "xla" not in spec.defined_by and "xla" not in spec.bindings


def test_every_error_model_states_why(specs):
    for spec in specs.values():
        for key, model in spec.error_model.items():
            assert len(model["why"]) >= 10, (spec.op, key)


def _write(tmp_path: Path, text: str, name: str = "add.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# (replacement applied to add.yaml, expected line, expected field, message fragment)
BAD_SPECS = [
    (("dtypes: [float16, float32, float64, int32, int64]", "dtypes: [float16, float33]"),
     7, "dtypes.1", "'float33' is not one of"),
    (("  float: {ulp: 0.5, why", "  float: {ulp: -1, why"), 10, "error_model.float.ulp",
     "-1 is less than the minimum of 0"),
    (("signature: {inputs: [lhs, rhs]}", "signature: {inputs: [lhs, rhs], max_rnak: 2}"), 6,
     "signature.max_rnak", "Additional properties are not allowed ('max_rnak' was unexpected)"),
    (("values: {float:", "valuez: {float:"), 8, "valuez",
     "Additional properties are not allowed ('valuez' was unexpected)"),
    (("  - {region: int_overflow,", "  - {region: int_overflowz,"), 13,
     "implementation_defined.0.region", "region='int_overflowz' is unknown"),
    (("summary: Element-wise sum lhs + rhs.\n", ""), 1, "<top>", "'summary' is a required property"),
    (("op: add", "op: sub"), 1, "op", "does not match the file name"),
    (("bindings:\n", "bindings:\n  tflite: {op: ADD}\n"), 15, "bindings.tflite",
     "Additional properties are not allowed ('tflite' was unexpected)"),
    # named outputs
    (("signature: {inputs: [lhs, rhs]}", "signature: {inputs: [lhs, rhs], outputs: [sum, sum]}"),
     6, "signature.outputs.1", "output name 'sum' is given twice"),
    (("signature: {inputs: [lhs, rhs]}",
      "signature: {inputs: [lhs, rhs], outputs: [sum, {name: carry, type: float32, error_model: "
      "{int: {exact: true, why: integers are exact}}}]}"),
     6, "signature.outputs.1.error_model", "output 'carry' can be a float but no float error model"),
    (("  - {region: int_overflow,", "  - {region: int_overflow, outputs: [carry],"), 13,
     "implementation_defined.0.outputs.0", "'carry' names no output (outputs: ['out'])"),
    # sequence outputs and ONNX operands (ops/sequence_values.py)
    (("signature: {inputs: [lhs, rhs]}",
      "signature: {inputs: [lhs, rhs], outputs: [{name: parts, sequence: true}, sum]}"),
     6, "signature.outputs.0.sequence", "the next output must be their shapes"),
    (("signature: {inputs: [lhs, rhs]}",
      "signature: {inputs: [lhs, rhs], outputs: [{name: parts, sequence: false}]}"),
     6, "signature.outputs.0.sequence", "True was expected"),
    (("  onnx: {op_type: Add, opsets: [14, 28]}",
      "  onnx: {op_type: Add, opsets: [14, 28], operands: [A]}"), 16,
     "bindings.onnx.operands", "operands=['A'] names 1 formal inputs for 2 signature inputs"),
    # an ONNX binding names the opsets whose text it follows, none past the pinned onnx's newest
    (("  onnx: {op_type: Add, opsets: [14, 28]}", "  onnx: {op_type: Add}"), 16,
     "bindings.onnx", "'opsets' is a required property"),
    (("  onnx: {op_type: Add, opsets: [14, 28]}", "  onnx: {op_type: Add, opsets: [14, 99]}"), 16,
     "bindings.onnx.opsets.1", "99 is greater than the maximum of 28"),
    # a NumPy binding names a public NumPy function or ufunc, never a path out of numpy
    (("  onnx: {op_type: Add, opsets: [14, 28]}\n", "  onnx: {op_type: Add, opsets: [14, 28]}\n  numpy: {fn: f2py.os.write}\n"), 17,
     "bindings.numpy.fn",
     "fn='f2py.os.write' leaves the numpy namespace (numpy.os is os)"),
    (("  onnx: {op_type: Add, opsets: [14, 28]}\n", "  onnx: {op_type: Add, opsets: [14, 28]}\n  numpy: {fn: ndarray}\n"), 17,
     "bindings.numpy.fn",
     "fn='ndarray' is not a NumPy function or ufunc"),
    # what a run cannot do (spec/_runnable.py): value ranges, rank bounds, attributes, edge values
    (("values: {float: [-100, 100]", "values: {float: [100, -100]"), 8, "values.float",
     "range=[100, -100]: the ends are reversed"),
    (("values: {float: [-100, 100]", "values: {float: [-1.0e+308, 1.0e+308]"), 8, "values.float",
     "high - low overflows"),
    (("values: {float: [-100, 100]", "values: {float: [.nan, .nan]"), 8, "values.float.0",
     "a draw needs finite ends"),
    (("values: {float: [-100, 100]", "values: {float: [1.0e+6, 1.0e+7]"), 8, "values.float",
     "no float16 value lies in it"),
    (("int: [-10000, 10000]", "int: [0.5, 3]"), 8, "values.int.0", "whole-number ends"),
    (("values: {float:", "input_values: {lsh: {float: [0, 1]}}\nvalues: {float:"), 8,
     "input_values.lsh", "'lsh' names no input"),
    # a range of one dtype's own (spec/_runnable.py _check_ranges): a dtype the input is drawn in
    (("values: {float: [-100, 100]", "values: {float8_e8m0fnu: [1, 2], float: [-100, 100]"), 8,
     "values.float8_e8m0fnu", "'float8_e8m0fnu' is no dtype the input is drawn in"),
    (("values: {float: [-100, 100]", "values: {float32: [1.0e+6, 1.0e+7], float: [1.0e+6, 1.0e+7]"),
     8, "values.float", "no float16 value lies in it"),
    (("values: {float: [-100, 100]", "values: {float16: [1.0e+6, 1.0e+7], float: [-100, 100]"),
     8, "values.float16", "no float16 value lies in it"),
    (("values: {float: [-100, 100]", "values: {complex64: [0, 1], float: [-100, 100]"), 8,
     "values", "'complex64' is not one of"),
    # an end in the type's width: int ranges only, the width alone (spec/_runnable.py range_end)
    (("int: [-10000, 10000]", 'int: [0, "bitz - 1"]'), 8, "values.int.1",
     "'bitz - 1' is not an expression in 'bits' alone"),
    (("int: [-10000, 10000]", 'int: [0, "max_finite"]'), 8, "values.int.1",
     "'max_finite' is not an expression in 'bits' alone"),
    (("values: {float: [-100, 100]", 'values: {float: [0, "bits"]'), 8, "values.float.1",
     "only an int range's end may be an expression"),
    (("signature: {inputs: [lhs, rhs]}", "signature: {inputs: [lhs, rhs], min_rank: 3, max_rank: 1}"),
     6, "signature.min_rank", "min_rank=3 is above max_rank=1"),
    (("signature: {inputs: [lhs, rhs]}", "signature: {inputs: [lhs, rhs], min_rank: 5}"),
     6, "signature.min_rank", "(max_rank defaults to 4)"),
    (("signature: {inputs: [lhs, rhs]}", "signature: {inputs: [lhs, rhs], attrs: {frob: 3}}"),
     6, "signature.attrs.frob", "the oracle of op add (conform.ops.elementwise) takes no attribute 'frob'"),
    (("signature: {inputs: [lhs, rhs]}", "signature: {inputs: [lhs, rhs], attrs: {ftz: true}}"),
     6, "signature.attrs.ftz", "reserved for the harness"),
    (("bindings:\n", "edge_values: {float: [zero, bogus]}\nbindings:\n"), 14, "edge_values.float.1",
     "edge value 'bogus' is neither a number nor a known name"),
    (("bindings:\n", "edge_values: {int: [1, 2.5]}\nbindings:\n"), 14, "edge_values.int.1",
     "2.5 is no whole number"),
    (("bindings:\n", "edge_values: {float: [" + ", ".join(["1"] * 65) + "]}\nbindings:\n"), 14,
     "edge_values.float", "65 entries, at most 64 allowed"),   # (the had 120,000)
]


@pytest.mark.parametrize("replacement, line, field, fragment", BAD_SPECS)
def test_malformed_spec_names_file_line_and_field(tmp_path, replacement, line, field, fragment):
    old, new = replacement
    assert old in ADD
    path = _write(tmp_path, ADD.replace(old, new, 1))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert info.value.path == str(path)
    assert info.value.line == line
    assert info.value.field == field.replace("<top>", "")
    assert str(info.value).startswith(f"{path}:{line}: field {field}: ")
    assert fragment in str(info.value)


def test_invalid_yaml_syntax_reports_the_line(tmp_path):
    path = _write(tmp_path, ADD.replace("summary: Element-wise sum lhs + rhs.",
                                        "summary: [unclosed"))
    with pytest.raises(SpecError, match=re.escape(f"{path}:")) as info:
        load_spec(path)
    assert "invalid YAML" in str(info.value)
    assert info.value.line is not None


def test_an_op_no_module_defines_is_named(tmp_path):
    path = _write(tmp_path, ADD.replace("op: add", "op: addd"), name="addd.yaml")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert (info.value.line, info.value.field) == (1, "op")
    assert "op 'addd' has no definition in any op module; registered: " in str(info.value)


def test_a_signature_field_the_ops_drawer_ignores_is_refused(tmp_path):
    """transpose draws its own signatures (ops/movement.py), which read no rank bounds."""
    text = (BUILTIN_DIR / "transpose.yaml").read_text(encoding="utf-8")
    assert "signature: {inputs: [operand]}" in text
    path = _write(tmp_path, text.replace("signature: {inputs: [operand]}",
                                         "signature: {inputs: [operand], min_rank: 2}"),
                  name="transpose.yaml")
    line = text.splitlines().index("signature: {inputs: [operand]}") + 1
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert (info.value.line, info.value.field) == (line, "signature.min_rank")
    assert "min_rank=2 would be ignored: the drawer of op transpose" in str(info.value)


def test_a_users_spec_folder_adds_to_the_builtin_suite(tmp_path, specs):
    path = _write(tmp_path, ADD.replace("Element-wise sum", "Element-wise addition"))
    loaded = load_specs(tmp_path)
    assert set(loaded) == set(specs)                      # nothing dropped
    assert loaded["add"].path == str(path)                # the folder's own spec of an op wins
    assert loaded["add"].summary.startswith("Element-wise addition")


@pytest.mark.parametrize("make", [lambda p: p / "missing", lambda p: p])
def test_an_empty_or_missing_spec_folder_is_an_error(tmp_path, make):
    with pytest.raises(SpecError, match="no op spec|does not exist"):
        load_specs(make(tmp_path))


def test_load_specs_keeps_parsed_specs_and_rereads_a_changed_or_broken_file(tmp_path, monkeypatch):
    monkeypatch.setenv("CONFORM_CACHE_DIR", str(tmp_path / "cache"))
    specs_dir = tmp_path / "specs"
    specs_dir.mkdir()
    path = _write(specs_dir, ADD)
    first = load_specs(specs_dir)
    assert len(list((tmp_path / "cache" / "specs").glob("*.json"))) == 1
    assert load_specs(specs_dir) == first                    # from the cache
    path.write_text(ADD.replace("Element-wise sum", "Element-wise addition"))
    assert load_specs(specs_dir)["add"].summary == "Element-wise addition lhs + rhs."
    path.write_text(ADD.replace("  int: {exact: true,", "  int: {exact: false,"))
    with pytest.raises(SpecError) as info:                    # a broken file is never cached
        load_specs(specs_dir)
    assert info.value.line == 11 and info.value.field == "error_model.int.exact"
    assert len(list((tmp_path / "cache" / "specs").glob("*.json"))) == 2


def test_model_for_falls_back_from_dtype_to_class(specs):
    power = specs["power"]
    assert power.model_for("float32")["ulp"] == 16
    assert specs["add"].model_for("float16")["correctly_rounded"] is True
    assert specs["add"].model_for("int32")["exact"] is True
    assert specs["eq"].model_for("bool")["exact"] is True


def test_published_json_schema_matches_the_loader():
    import json

    from conform.spec import SCHEMA

    import conform.spec

    published = json.loads((Path(conform.spec.__file__).parent / "schema.json").read_text(encoding="utf-8"))
    assert published == json.loads(json.dumps(SCHEMA)), \
        "spec/schema.json is stale: run python -m conform.spec"


def test_an_attribute_range_with_its_ends_reversed_is_refused(tmp_path):
    path = tmp_path / "add.yaml"
    path.write_text(ADD.replace("signature: {inputs: [lhs, rhs]}",
                                "signature: {inputs: [lhs, rhs], attrs: {k: {range: [3, 1]}}}"),
                    encoding="utf-8")
    with pytest.raises(SpecError, match=re.escape("field signature.attrs.k.range: range=[3, 1] "
                                                  "has its ends reversed")) as caught:
        load_spec(path)
    assert caught.value.line == 6


def test_an_int_range_may_end_at_the_types_width(tmp_path):
    """A shift amount's range, [0, "bits - 1"]: 0 to 31 in int32, 0 to 3 in int4."""
    from conform.generators._values import value_range

    path = _write(tmp_path, ADD.replace("int: [-10000, 10000]", 'int: [0, "bits - 1"]', 1))
    spec = load_spec(path)
    assert [value_range(spec, "lhs", d) for d in ("int32", "int4", "uint64", "int2")] == \
        [(0, 31), (0, 3), (0, 63), (0, 1)]


def test_a_dtypes_own_range_overrides_its_class_where_the_class_holds_none_of_it(tmp_path):
    """clamp's min is drawn in [-10, 0], which float8_e8m0fnu (no zero, no sign) cannot hold:
    its own range replaces the class's for that dtype only, and the class's is not checked
    against it."""
    from conform.generators._values import value_range
    text = ADD.replace("dtypes: [float16,", "dtypes: [float8_e8m0fnu, float16,").replace(
        "values: {float: [-100, 100]",
        "input_values: {lhs: {float: [-10, 0], float8_e8m0fnu: [0.25, 1]}}\nvalues: {float: [-100, 100]")
    spec = load_spec(_write(tmp_path, text))
    assert value_range(spec, "lhs", "float8_e8m0fnu") == (0.25, 1)
    assert value_range(spec, "lhs", "float16") == (-10, 0)
    assert value_range(spec, "rhs", "float8_e8m0fnu") == (2.0 ** -127, 100)
    with pytest.raises(SpecError, match="no float8_e8m0fnu value lies in it"):
        load_spec(_write(tmp_path, text.replace(", float8_e8m0fnu: [0.25, 1]", "")))
