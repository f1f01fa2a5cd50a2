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
signature: {family: elementwise, inputs: [lhs, rhs]}
dtypes: [float16, float32, float64, int32, int64]
values: {float: [-100, 100], int: [-10000, 10000]}
oracle: add
error_model:
  float: {ulp: 0.5, why: "IEEE 754-2019 5.4.1: addition is correctly rounded (<= 0.5 ULP)"}
  int: {exact: true, why: "integer addition is exact where the result fits"}
implementation_defined:
  - {region: int_overflow, why: "XLA semantics do not specify integer overflow"}
bindings:
  xla: {lax: add}
  onnx: {op_type: Add}
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
    (("oracle: add", "oracle: addd"), 9, "oracle", "oracle='addd' is not registered"),
    (("  float: {ulp: 0.5, why", "  float: {ulp: -1, why"), 11, "error_model.float.ulp",
     "-1 is less than the minimum of 0"),
    (("signature: {family: elementwise", "signature: {family: elementwize"), 6,
     "signature.family", "'elementwize' is not one of"),
    (("  - {region: int_overflow,", "  - {region: int_overflowz,"), 14,
     "implementation_defined.0.region", "region='int_overflowz' is unknown"),
    (("summary: Element-wise sum lhs + rhs.\n", ""), 1, "<top>", "'summary' is a required property"),
    (("op: add", "op: sub"), 1, "op", "does not match the file name"),
    (("bindings:\n", "bindings:\n  tflite: {op: ADD}\n"), 16, "bindings.tflite",
     "Additional properties are not allowed ('tflite' was unexpected)"),
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


def test_load_specs_reads_a_directory(tmp_path):
    _write(tmp_path, ADD)
    assert list(load_specs(tmp_path)) == ["add"]


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
    path.write_text(ADD.replace("oracle: add", "oracle: nope"))
    with pytest.raises(SpecError) as info:                    # a broken file is never cached
        load_specs(specs_dir)
    assert info.value.line == 9 and info.value.field == "oracle"
    assert len(list((tmp_path / "cache" / "specs").glob("*.json"))) == 2


def test_model_for_falls_back_from_dtype_to_class(specs):
    power = specs["power"]
    assert power.model_for("float32")["ulp"] == 16
    assert specs["add"].model_for("float16")["ulp"] == 0.5
    assert specs["add"].model_for("int32")["exact"] is True
    assert specs["eq"].model_for("bool")["exact"] is True


def test_published_json_schema_matches_the_loader():
    import json

    from conform.spec import SCHEMA

    published = json.loads((BUILTIN_DIR.parent / "schema.json").read_text(encoding="utf-8"))
    assert published == json.loads(json.dumps(SCHEMA)), \
        "spec/schema.json is stale: run python -m conform.spec"
