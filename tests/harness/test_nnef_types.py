"""What NNEF's type system takes decides what is drawn for an NNEF backend (issue 32 item 3):
a fragment's ``tensor<scalar>`` parameters take float values only, ``tensor<integer>`` integers,
``tensor<logical>`` bools, and a generic fragment's ``tensor<?>`` parameters one kind between
them. A label the standard rules out is never drawn, so that an ``unsupported`` verdict on an
NNEF consumer means the consumer lacks what NNEF allows."""
from __future__ import annotations

import pytest

from conform.harness.backends.nnef_models import types_allow
from conform.harness.run.runner import SelectionError, by_format


@pytest.mark.parametrize("op, label, allowed", [
    ("abs", "float32", True), ("abs", "int32", False),            # abs(x: tensor<scalar>)
    ("bitwise_and", "bool", True), ("bitwise_and", "int64", False),  # and(x: tensor<logical>)
    ("nnef_select", "int32", True), ("nnef_select", "bool", True),   # select<?>: condition logical
    ("nnef_gather", "float32", True),                                # gather<?>(indices: integer)
    ("reduce_sum", "int32", False), ("pad", "bool", False),
])
def test_the_fragments_declared_types_decide(specs, op, label, allowed):
    assert types_allow(specs[op], label) is allowed


def test_a_run_never_draws_what_nnef_rules_out(specs):
    pairs = [(specs["abs"], "float32"), (specs["abs"], "int32"), (specs["bitwise_and"], "int64")]
    assert by_format(pairs, "nnef", "nnef") == [(specs["abs"], "float32")]
    assert by_format(pairs, "numpy", None) == pairs   # a backend of no format takes them all
    with pytest.raises(SelectionError):
        by_format([(specs["exp"], "float32")], "nnef", "no_such_format")
