"""Length independence of element-wise results (generators/_length.py, harness/judge/
consistency.py ``length_dependence``): a length case holds one element of its partner case alone
in a tensor of one element; the two are judged together and must give the same bits."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from conform.generators import generate_cases
from conform.harness.judge.judging import result_records
from conform.harness.judge.outcome import Outcome
from conform.harness.run.case_queue import LazyQueue


@pytest.fixture(scope="module")
def drawn(specs):
    return generate_cases(specs["exp"], "float32", count=2, seed=0)


def _pair(drawn):
    cases = copy.deepcopy(drawn)
    at = next(i for i, c in enumerate(cases) if c.plan == "length")
    return cases, cases[at - 1], cases[at]


def test_the_length_case_repeats_an_element_of_its_partner_right_after_it(specs, drawn):
    cases, partner, length = _pair(drawn)
    assert length.extra == {"length_of": partner.id, "element": 8} and partner.plan == "critical"
    assert length.inputs[0].shape == (1,) and length.inputs[0][0] == partner.inputs[0][8]
    assert sum(c.plan == "length" for c in cases) == 1
    assert not [c for c in generate_cases(specs["onnx_softmax"], "float32", count=2, seed=0)
                if c.plan == "length"]   # not element-wise: none


def _records(specs, partner, length, at_8, alone):
    spec = specs["exp"]
    wide = np.exp(partner.inputs[0].astype(np.float64)).astype(np.float32)
    wide[8] = at_8
    return result_records([(spec, partner, Outcome("ok", outputs=[wide])),
                           (spec, length, Outcome("ok", outputs=[np.float32([alone])]))], "b")


def test_a_result_that_depends_on_the_length_fails_naming_both_cases(specs, drawn):
    _, partner, length = _pair(drawn)
    partner.inputs[0][8] = length.inputs[0][0] = 0.5   # (an ordinary value, far from overflow)
    right = np.float32(np.exp(np.float64(partner.inputs[0][8])))
    assert [r["verdict"] for r in _records(specs, partner, length, right, right)] == ["pass"] * 2
    off = np.nextafter(right, np.float32(0))   # 1 ULP: within exp's bound, another answer
    records = _records(specs, partner, length, right, off)
    assert [r["verdict"] for r in records] == ["pass", "fail"]
    assert f"as element 8 of case {partner.id} ({partner.inputs[0].size} elements)" \
        in records[1]["message"] and "length dependent" in records[1]["message"]


def test_no_batch_ends_between_a_length_case_and_its_partner(drawn):
    cases, partner, length = _pair(drawn)
    cut = cases.index(length)
    queue = LazyQueue(cases)
    first = queue.take(cut)   # would end right after the partner
    assert first[-2:] == [partner, length] and queue.take(len(cases))[0] is cases[cut + 1]
