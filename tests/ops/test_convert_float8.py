"""ConvertElementType to and from float8 and int4/uint4: the oracle (with the judge's one
rounding) against an independent nearest-value search over all 256 encodings, the drawn
values, the corpus round trip, and a real jax run."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conform.generators import dtype_labels, generate_cases
from conform.generators._case import Case
from conform.generators._corpus_format import read, write
from conform.generators._values import edge_values, fill, value_range
from conform.harness.judge.compare import compare, round_to_dtype
from conform.oracles import evaluate
from conform.oracles.expectations import expect
from conform.dtypes import FLOAT_FORMATS, np_dtype
from tests.spec.test_float8 import FLOAT8, nearest, table

EXACT = {"exact": True, "why": "correctly rounded"}
FLOATS = ["float16", "float32", "float64", *FLOAT8]
#: the float8 types convert_element_type draws (StableHLO's e4m3, e3m4 and e4m3b11fnuz: not yet)
CONVERTED_FLOAT8 = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"]


def converted(x: np.ndarray, new_dtype: str) -> np.ndarray:
    """The oracle's answer, rounded as the judge rounds it, as float64."""
    (out,) = evaluate("convert_element_type", [x], {"new_dtype": new_dtype})
    with np.errstate(invalid="ignore", over="ignore"):
        return round_to_dtype(out, new_dtype).astype(np.float64)


def same(a, b) -> bool:
    numbers = ~np.isnan(b)
    return np.array_equal(a, b, equal_nan=True) and \
        np.array_equal(np.signbit(a[numbers]), np.signbit(b[numbers]))


@pytest.mark.parametrize("source", FLOAT8)
@pytest.mark.parametrize("target", FLOATS)
def test_every_float8_encoding_converts_correctly(source, target):
    codes = np.arange(256, dtype=np.uint16).astype(np.uint8)
    x = codes.view(np_dtype(source))
    values = table(source)   # decoded from the bit fields, not by ml_dtypes
    want = nearest(target, values) if target in FLOAT8 else values.astype(np_dtype(target))
    if target in FLOAT8 or source != target:
        assert same(converted(x, target), np.asarray(want, np.float64))


@pytest.mark.parametrize("target", FLOAT8)
def test_every_float16_value_converts_to_float8_correctly(target):
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    assert same(converted(x, target), nearest(target, x.astype(np.float64)))


@pytest.mark.parametrize("target", ["int4", "uint4", "int32", "bool"])
def test_float8_to_integers_truncates_and_flags_what_does_not_fit(specs, target):
    from conform.oracles.expectations import expect

    spec = specs["convert_element_type"]
    x = np.array([2.75, -2.75, 7.5, -9.0, 15.0, 16.0, np.nan, -0.0], np_dtype("float8_e4m3fn"))
    case = Case(id="t", op=spec.op, dtype=f"float8_e4m3fn->{target}",
                input_dtypes=("float8_e4m3fn",), out_dtype=target, inputs=[x],
                attrs={"new_dtype": target}, plan="normal", seed=0)
    (answer,) = expect(spec, case)
    if target == "bool":
        assert answer.expected.tolist() == [True] * 7 + [False] and answer.impl_mask is None
        return
    assert answer.expected[:2].tolist() == [2, -2]
    fits = {"int4": [1, 1, 1, 0, 0, 0, 0, 1], "uint4": [1, 0, 1, 0, 1, 0, 0, 1],
            "int32": [1, 1, 1, 1, 1, 1, 0, 1]}[target]
    assert (~answer.impl_mask).astype(int).tolist() == fits


def test_integers_to_int4_out_of_range_are_implementation_defined(specs):
    from conform.oracles.expectations import expect

    spec = specs["convert_element_type"]
    x = np.array([-9, -8, 7, 8, 15, 16], np.int32)
    for target, fits in (("int4", [0, 1, 1, 0, 0, 0]), ("uint4", [0, 0, 1, 1, 1, 0])):
        case = Case(id="t", op=spec.op, dtype=f"int32->{target}", input_dtypes=("int32",),
                    out_dtype=target, inputs=[x], attrs={"new_dtype": target}, plan="normal",
                    seed=0)
        assert (~expect(spec, case)[0].impl_mask).astype(int).tolist() == fits
    back = evaluate("convert_element_type", [np.array([-8, 7], np_dtype("int4"))],
                    {"new_dtype": "float8_e4m3fn"})[0]
    assert back.tolist() == [-8.0, 7.0]


@pytest.mark.parametrize("name", FLOAT8)
def test_draws_reach_every_value_and_the_extremes(specs, name):
    spec = specs["convert_element_type"]
    rng = np.random.default_rng(0)
    wide = fill(rng, shape=(4096,), dtype=name, plan="wide", low=0, high=0, edges=np.array([]))
    assert wide.dtype == np_dtype(name)
    finite = table(name)[np.isfinite(table(name))]
    assert set(np.unique(finite)) <= set(wide.astype(np.float64).tolist())
    fmt = FLOAT_FORMATS[name]
    edges = edge_values(spec, name).astype(np.float64)
    for extreme in (fmt.max_finite, fmt.min_subnormal, fmt.min_normal):
        assert extreme in edges or -extreme in edges
    assert np.isinf(edges).any() == fmt.has_inf and np.isnan(edges).any()
    low, high = value_range(spec, "operand", name)
    top = min(1000, fmt.max_finite)   # the spec says [-1000, 1000]
    assert (low, high) == (-top, top)


@pytest.mark.parametrize("name, bounds", [("int4", (-8, 7)), ("uint4", (0, 15))])
def test_four_bit_draws_stay_in_range(specs, name, bounds):
    spec = specs["convert_element_type"]
    assert value_range(spec, "operand", name) == bounds
    rng = np.random.default_rng(0)
    for plan in ("normal", "wide", "edge"):
        x = fill(rng, shape=(512,), dtype=name, plan=plan, low=bounds[0], high=bounds[1],
                 edges=edge_values(spec, name)).astype(np.int64)
        assert x.min() >= bounds[0] and x.max() <= bounds[1]
    assert set(edge_values(spec, name).astype(np.int64).tolist()) >= set(bounds)


def test_labels_cover_float8_and_int4_both_ways(specs):
    labels = set(dtype_labels(specs["convert_element_type"]))
    for name in (*CONVERTED_FLOAT8, "int4", "uint4"):
        assert f"float32->{name}" in labels and f"{name}->float32" in labels
    assert "float8_e4m3fn->float8_e5m2fnuz" in labels and "int4->uint4" in labels


def test_the_corpus_keeps_float8_and_int4_bit_for_bit(specs, tmp_path):
    spec = specs["convert_element_type"]
    cases = []
    for label in ("float8_e4m3fn->float32", "float32->float8_e5m2fnuz", "int4->uint4",
                  "uint4->float8_e5m2"):
        cases += generate_cases(spec, label, count=4, seed=3, answer=expect)
    # every float8 encoding, NaN payloads and -0 among them, and every 4-bit integer
    patterns = np.arange(256, dtype=np.uint16).astype(np.uint8)
    for name in FLOAT8:
        cases.append(Case(id=f"all.{name}", op=spec.op, dtype=f"{name}->float32",
                          input_dtypes=(name,), out_dtype="float32",
                          inputs=[patterns.view(np_dtype(name)), patterns.view(np_dtype(name))[7]],
                          attrs={"new_dtype": "float32"}, plan="special", seed=0))
    cases.append(Case(id="all.int4", op=spec.op, dtype="int4->int32", input_dtypes=("int4",),
                      out_dtype="int32", inputs=[np.arange(-8, 8).astype(np_dtype("int4"))],
                      attrs={"new_dtype": "int32"}, plan="special", seed=0))
    write(tmp_path / "corpus", cases)
    back = read(tmp_path / "corpus")
    assert len(back) == len(cases)
    for a, b in zip(cases, back):
        assert [x.dtype for x in a.inputs] == [x.dtype for x in b.inputs]
        assert [type(x) for x in a.inputs] == [type(x) for x in b.inputs]
        assert all(np.asarray(x).tobytes() == np.asarray(y).tobytes()
                   for x, y in zip(a.inputs, b.inputs))
        if a.expectation is not None:   # one answer per output
            assert [e.expected.tobytes() for e in a.expectation] == \
                [e.expected.tobytes() for e in b.expectation]


def test_a_backend_that_rounds_float64_twice_is_caught():
    """ml_dtypes' float64 -> float8 goes through float32: the exact judge sees it."""
    x = np.array([1 + 2.0 ** -4 + 2.0 ** -40, 3.0])
    (expected,) = evaluate("convert_element_type", [x], {"new_dtype": "float8_e4m3fn"})
    twice = x.astype(np_dtype("float8_e4m3fn"))
    assert compare(twice, expected, out_dtype="float8_e4m3fn", model=EXACT).verdict == "fail"


@pytest.mark.slow
def test_jax_runs_the_float8_and_int4_conversions(conform_cli, tmp_path):
    out = tmp_path / "run"
    proc = conform_cli("run", "--backend", "jax", "--ops", "convert_element_type", "--dtypes",
                       "float8_e4m3fn,float8_e4m3fnuz,float8_e5m2,float8_e5m2fnuz,int4,uint4",
                       "--max-examples", 3, "--out", out, "--no-cache", "--quiet")
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    counts: dict = {}
    for r in records:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    assert proc.returncode == 0, proc.stderr
    assert set(counts) <= {"pass", "impl_defined"} and counts["pass"] > 200, counts
    labels = {r["dtype"] for r in records if r["verdict"] == "pass"}
    for name in CONVERTED_FLOAT8:
        assert f"float32->{name}" in labels and f"{name}->float64" in labels
    for name in ("int4", "uint4"):   # into int4, most drawn values do not fit: impl_defined
        assert f"{name}->int32" in labels and f"{name}->float8_e4m3fn" in labels
