"""The judge names what feeds the worst element: a value, a window, or an element moved."""
from __future__ import annotations

import numpy as np

from conform.generators._case import Case
from conform.harness.judge.judging import failure_message, judge_outputs


def _case(op, inputs, attrs, dtype="float32"):
    return Case(id=f"{op}.{dtype}.0", op=op, dtype=dtype, input_dtypes=(dtype,) * len(inputs),
                out_dtype=dtype, inputs=inputs, attrs=attrs, plan="normal", seed=1)


def test_a_failing_window_names_the_operand_elements_of_its_window(specs):
    x = np.float32([[[1, 2, np.nan, 4, 5]]])
    case = _case("reduce_window_max", [x], {"window_dimensions": [1, 1, 3],
                                            "window_strides": [1, 1, 2], "padding": [[0, 0], [0, 0], [1, 1]]})
    actual = np.float32([[[2, 4, 5]]])   # NaN ignored: out[0, 0, 1] should be NaN
    judgement = judge_outputs(specs["reduce_window_max"], case, [actual])
    assert judgement.verdict == "fail" and judgement.worst["index"] == [0, 0, 1]
    assert judgement.worst["inputs"] == [[2.0, "nan", 4.0]]
    assert "inputs=([2.0, nan, 4.0])" in failure_message(case, judgement, "b")


def test_a_long_slice_is_shown_in_part_and_counted(specs):
    x = np.arange(20, dtype=np.float32).reshape(2, 10)
    case = _case("reduce_sum", [x], {"dimensions": [1]})
    judgement = judge_outputs(specs["reduce_sum"], case, [np.float32([45, 100])])
    assert judgement.worst["inputs"] == [[float(v) for v in range(10, 20)]]
    assert "inputs=([10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, ... (10 values)])" in \
        failure_message(case, judgement, "b")


def test_a_square_transpose_names_the_element_moved_not_the_one_at_the_same_index(specs):
    x = np.float32([[1, 2], [3, 4]])
    case = _case("transpose", [x], {"permutation": [1, 0]})
    judgement = judge_outputs(specs["transpose"], case, [np.float32([[1, 3], [-2, 4]])])
    assert judgement.worst["index"] == [1, 0] and judgement.worst["inputs"] == [2.0]


def test_padding_names_the_padding_value_where_it_fed_the_element(specs):
    case = _case("pad", [np.float32([1, 2]), np.float32(7)], {"padding_config": [[1, 0, 0]]})
    judgement = judge_outputs(specs["pad"], case, [np.float32([0, 1, 2])])
    assert judgement.worst["index"] == [0] and judgement.worst["inputs"] == [None, 7.0]


def test_passing_records_keep_no_slices(specs):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    case = _case("reduce_sum", [x], {"dimensions": [1]})
    judgement = judge_outputs(specs["reduce_sum"], case, [np.float32([3, 12])])
    assert judgement.verdict == "pass" and judgement.worst["inputs"] == [None]


def test_a_feeding_rule_that_fails_still_gets_its_verdict(specs, monkeypatch):
    import dataclasses

    from conform import op_registry as _registry

    def broken(inputs, attrs, index):
        raise IndexError("a feeding rule with a bug")

    spec = specs["reduce_sum"]
    monkeypatch.setitem(_registry._REGISTRY, "reduce_sum",
                        dataclasses.replace(spec.definition, feeding=broken))
    case = _case("reduce_sum", [np.float32([1, 2])], {"dimensions": [0]})
    judgement = judge_outputs(spec, case, [np.float32(4)])
    assert judgement.verdict == "fail" and judgement.worst["inputs"] == [None]


def test_a_wholly_implementation_defined_output_names_no_worst_element(specs):
    """Every element out of int8's range: the record must not depend on what the backend put
    there (it did: element 0's error, 0 or not, made result lines differ across runs)."""
    spec = specs["onnx_cast"]
    case = Case(id="onnx_cast.float32->int8.0", op="onnx_cast", dtype="float32->int8",
                input_dtypes=("float32",), out_dtype="int8", inputs=[np.float32([1e10, -1e10, 300])],
                attrs={"new_dtype": "int8"}, plan="normal", seed=1)
    for fill in (0, 1, 127):
        judgement = judge_outputs(spec, case, [np.full(3, fill, np.int8)])
        assert (judgement.verdict, judgement.checked, judgement.impl_defined) == ("impl_defined", 0, 3)
        assert (judgement.max_error, judgement.bound, judgement.worst) == (0.0, 0.0, None)


def test_rounding_the_oracle_into_a_narrow_type_warns_of_nothing():
    """Overflow to infinity is the rounding's answer: no NumPy warning reaches the terminal."""
    import warnings

    from conform.harness.judge.compare import round_to_dtype

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isinf(round_to_dtype(np.array([1e300, -1e300]), "float16")).all()
        round_to_dtype(np.array([np.nan, 1e300]), "int8")


def test_a_case_passes_on_its_defined_outputs_beside_a_wholly_open_one():
    """Several outputs: one wholly open does not keep another's judged elements from deciding;
    a case with nothing judged stays ``impl_defined``."""
    from conform.harness.judge.compare import Judgement
    from conform.harness.judge.judging import combined

    def part(verdict, checked, opened):
        return Judgement(verdict, "exact", "mismatch", checked=checked, impl_defined=opened)

    case = combined(["a", "b"], [part("impl_defined", 0, 3), part("pass", 4, 0)])
    assert (case.verdict, case.checked, case.impl_defined) == ("pass", 4, 3)
    assert combined(["a", "b"], [part("impl_defined", 0, 3), part("pass", 0, 0)]).verdict \
        == "impl_defined"   # (an empty output judges nothing either)
    assert combined(["a", "b"], [part("impl_defined", 0, 3), part("fail", 4, 0)]).verdict == "fail"


def test_raising_is_excused_by_an_open_input_only_where_the_values_could_matter(specs):
    """A backend raising on a case with elements in an open region: ``impl_defined``; one that
    :class:`Refused` the model whatever the values (a shape check): ``error``."""
    from conform.harness.judge.judging import result_record
    from conform.harness.run.worker import failed
    from conform.model_formats import Refused

    case = _case("relu", [np.float32([np.nan, 1])], {})   # relu(NaN): region nan_operand
    raised = failed(ValueError("no NaN here"))
    assert result_record(specs["relu"], case, raised, "b")["verdict"] == "impl_defined"
    refused = failed(Refused("ValueError: Shape error while inferring shape of tensor 'out0'"))
    record = result_record(specs["relu"], case, refused, "b")
    assert (record["verdict"], record["message"]) == (
        "error", "Refused: ValueError: Shape error while inferring shape of tensor 'out0'")
