"""Covering designs for attributes (generators/_covering.py): every pair of attribute classes of
every op is drawn at the default budget, the design is deterministic, hooks honour its rows, and
the spec's excluded_pairs are checked when it loads."""
from __future__ import annotations

import itertools
import re

import pytest

from conform.generators import attribute_pair_coverage, kit
from conform.generators._covering import design, factors, pair_coverage
from conform.generators._drawing import draw_plans
from conform.spec import SpecError, load_spec

DEFAULT_BUDGET, DEFAULT_SEED = 20, 0   # conform run's


def test_every_op_with_two_factors_draws_every_pair_at_the_default_budget(specs):
    """Computed from the signatures the default corpus draws (every dtype label): 100% for
    every op with at least two factors; the pairs a spec's excluded_pairs name (its text rules
    them out or leaves them open) are not counted, and there are few."""
    short, counted = {}, 0
    for name, spec in specs.items():
        found = attribute_pair_coverage(spec, count=DEFAULT_BUDGET, seed=DEFAULT_SEED)
        if found is None:
            continue
        counted += 1
        if found["covered"] != found["pairs"]:
            short[name] = found["missing"]
    assert counted >= 60 and not short, short
    excluded = {name for name, spec in specs.items() if spec.excluded_pairs}
    assert excluded == {"onnx_einsum", "onnx_loop", "onnx_resize", "onnx_resize_opset11",
                        "onnx_resize_opset13", "onnx_resize_opset18"}


def test_the_design_is_pairwise_deterministic_and_reordered_per_seed_and_dtype(specs):
    spec = specs["onnx_resize"]
    rows = design(spec, "float32", seed=0, slots=5)
    assert rows == design(spec, "float32", seed=0, slots=5)
    assert rows != design(spec, "float32", seed=1, slots=5)
    assert rows != design(spec, "float16", seed=0, slots=5)
    assert 20 <= len(rows) <= 40   # the largest factors are 6 x 4 classes
    assert pair_coverage(spec, rows)["ratio"] == 1.0
    assert not any(r["mode"] == "nearest" and r["exclude_outside"] == 1 for r in rows)


def test_the_whole_product_where_it_fits_the_budget_so_every_triple_too(specs):
    spec = specs["onnx_is_inf"]   # two choice factors of two classes: 4 rows
    assert len(factors(spec)) == 2 and len(design(spec, "float32", seed=0, slots=5)) == 4
    spec = specs["onnx_dropout"]  # ratio and training_mode, optional: absent/present each
    rows = design(spec, "float32", seed=0, slots=5)
    assert sorted(map(sorted, (r.items() for r in rows))) == sorted(
        sorted(zip(("input:ratio", "input:training_mode"), combo))
        for combo in itertools.product(("absent", "present"), repeat=2))


def test_a_signature_is_drawn_per_row_where_the_design_outgrows_the_budget(specs):
    spec = specs["onnx_lrn"]   # 4 choice factors: 17 rows, more than 20 cases' 5 signatures
    rows = design(spec, "float32", seed=DEFAULT_SEED, slots=5)
    plans = draw_plans(spec, "float32", count=DEFAULT_BUDGET, seed=DEFAULT_SEED)
    signatures = list({id(p[0]): p[0] for p in plans}.values())
    assert len(plans) == max(DEFAULT_BUDGET, len(rows)) and len(signatures) == len(rows)
    for row, signature in zip(rows, signatures):
        assert {k: signature.attrs[k] for k in row} == row
    small = specs["onnx_cum_sum"]   # 4 rows: the budget's 5 signatures, 20 cases, as before
    assert len(draw_plans(small, "float32", count=DEFAULT_BUDGET, seed=DEFAULT_SEED)) == 20


def test_kit_gives_the_rows_classes_and_draws_the_rest(specs):
    from conform.generators._drawing import _draw
    import random

    spec = specs["onnx_clip"]
    with kit.designing({"input:min": "absent", "input:max": "present"}):
        drawn = _draw(kit.st.builds(lambda: None).flatmap(
            lambda _: kit.st.composite(lambda draw: (
                kit.absent_inputs(draw, spec), kit.choose(draw, "p", [1, 2, 3]),
                kit.choose_int(draw, "k", 1, 3)))()), random.Random(0))
    assert drawn[0] == ["min"] and drawn[1] in (1, 2, 3) and 1 <= drawn[2] <= 3
    with kit.designing({"p": 2, "k": 3}):
        fixed = _draw(kit.st.composite(lambda draw: (
            kit.choose(draw, "p", [1, 2, 3]), kit.choose_int(draw, "k", 1, 3),
            kit.choose_int(draw, "k", 1, 2)))(), random.Random(0))
    assert fixed[:2] == (2, 3) and fixed[2] in (1, 2)   # 3 is out of [1, 2]: drawn


@pytest.mark.parametrize("when, message", [
    ({"exclusive": 0, "nope": 1}, "'nope' is no factor of the op's design"),
    ({"exclusive": 0, "reverse": 2}, "reverse=2 is no class of its factor (classes: [0, 1])"),
])
def test_excluded_pairs_are_checked_when_the_spec_loads(specs, tmp_path, when, message):
    text = open(specs["onnx_cum_sum"].path).read()
    entry = ", ".join(f"{k}: {v}" for k, v in when.items())
    path = tmp_path / "onnx_cum_sum.yaml"
    path.write_text(text + f'excluded_pairs:\n  - {{when: {{{entry}}}, why: "a reason here"}}\n')
    with pytest.raises(SpecError, match=re.escape(message)):
        load_spec(path)


def test_conform_list_reports_the_coverage_in_json(capsys):
    """In this process, after the first test: the coverage computed there is reused."""
    import json

    from conform.harness.cli.main import main

    assert main(["list", "--format", "json", "--attribute-coverage"]) == 0
    rows = {r["op"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["onnx_cum_sum"]["attribute_pair_coverage"]["ratio"] == 1.0
    assert rows["abs"]["attribute_pair_coverage"] is None
