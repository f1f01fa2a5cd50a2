"""NNEF round, any_reduce and all_reduce: the oracles on hand-worked examples, round's halves
left to the implementation (and nothing else), and numpy and the nnef executor passing."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from conform.oracles.feeding import feeding_elements
from backend_verdicts import verdicts


def test_round_and_its_halves(specs):
    x = np.array([0.4, -0.6, 2.5, -1.5, 3.0, 1e30], np.float64)
    (out,) = evaluate("nnef_round", [x], {})
    assert out.tolist() == [0.0, -1.0, 3.0, -2.0, 3.0, 1e30]
    spec = specs["nnef_round"]
    case = Case(id="nnef_round.float32.hand", op="nnef_round", dtype="float32",
                input_dtypes=("float32",), out_dtype="float32", inputs=[x.astype(np.float32)],
                attrs={}, plan="hand", seed=0)
    to_even = np.rint(x).astype(np.float32)          # 2.0 and -2.0 at the halves
    judged = judge_outputs(spec, case, [to_even])    # the two halves open, the rest judged
    assert (judged.verdict, judged.impl_defined, judged.checked) == ("pass", 2, 4)
    truncated = np.trunc(x).astype(np.float32)        # -0.6 -> -0: wrong off the halves
    assert judge_outputs(spec, case, [truncated]).verdict == "fail"


def test_logical_reductions():
    x = np.array([[True, False], [False, False]])
    (any_,) = evaluate("nnef_any_reduce", [x], {"dimensions": [1]})
    (all_,) = evaluate("nnef_all_reduce", [x], {"dimensions": [0, 1]})
    assert any_.tolist() == [True, False] and all_.tolist() is False
    (empty,) = evaluate("nnef_all_reduce", [np.zeros((2, 0), bool)], {"dimensions": [1]})
    assert empty.tolist() == [True, True]


@pytest.mark.parametrize("name, fill", [("nnef_any_reduce", False), ("nnef_all_reduce", True)])
def test_a_logical_reduction_is_fed_by_its_whole_slice(name, fill):
    """From all false (any) or all true (all), flipping one element moves exactly the output
    whose slice holds it, and the rule lists that slice (the feeding test's values 1, 2, ...
    are all true and stay so: it cannot see this)."""
    shape, attrs = (2, 3, 2), {"dimensions": [0, 2]}
    labels = np.arange(1.0, 13.0).reshape(shape)
    x = np.full(shape, fill)
    (base,) = evaluate(name, [x], attrs)
    for i in range(base.size):
        moved = set()
        for j in range(x.size):
            flipped = x.copy()
            flipped.flat[j] = not fill
            if evaluate(name, [flipped], attrs)[0][i] != base[i]:
                moved.add(float(labels.flat[j]))
        (fed,) = feeding_elements(name, [labels], attrs, [i])
        assert set(fed.tolist()) == moved and len(moved) == 4


@pytest.mark.parametrize("name, dtype", [("nnef_round", "float32"), ("nnef_any_reduce", "bool"),
                                         ("nnef_all_reduce", "bool")])
def test_numpy_and_the_executor_pass(specs, name, dtype):
    from conform.harness.backends.nnef_backend import NnefBackend
    from conform.harness.backends.numpy_backend import NumpyBackend

    for backend in (NumpyBackend(), NnefBackend()):
        found = verdicts(specs[name], backend, dtype, count=6, seed=7)
        assert found <= {"pass", "impl_defined"} and "pass" in found


def test_constant_repeats_one_value_or_lays_out_one_per_element(specs):
    (one,) = evaluate("nnef_constant", [], {"shape": [2, 2], "value": [-0.0], "dtype": "float32"})
    assert one.tolist() == [[0.0, 0.0], [0.0, 0.0]] and np.signbit(one).all()
    (each,) = evaluate("nnef_constant", [], {"shape": [2, 1], "value": [1.5, 2.0],
                                             "dtype": "float32"})
    assert each.tolist() == [[1.5], [2.0]]
    spec = specs["nnef_constant"]
    case = Case(id="nnef_constant.float32.hand", op="nnef_constant", dtype="float32",
                input_dtypes=(), out_dtype="float32", inputs=[],
                attrs={"shape": [2], "value": [-0.0], "dtype": "float32"}, plan="hand", seed=0)
    assert judge_outputs(spec, case, [np.array([-0.0, 0.0], np.float32)]).verdict == "fail"


def _constant_case(dtype, shape, value):
    return Case(id=f"nnef_constant.{dtype}.hand", op="nnef_constant", dtype=dtype,
                input_dtypes=(), out_dtype=dtype, inputs=[],
                attrs={"shape": shape, "value": value, "dtype": dtype}, plan="hand", seed=0)


def test_constant_runs_on_the_executor_with_an_unused_parameter(specs, nnef_backend):
    """NNEF's grammar (seed 000, <graph-declaration>) gives a graph at least one parameter:
    the document declares an unused logical one, and the executor computes the constant."""
    from conform.harness.backends.models import run_case
    from conform.harness.backends.nnef_models import PLACEHOLDER, build_document

    spec = specs["nnef_constant"]
    case = _constant_case("float32", [2, 2], [1.5, -0.0, 3.0, 4.0])
    document = build_document(spec, case)
    assert f"graph conform_nnef_constant( {PLACEHOLDER} )" in document.text
    assert "constant<scalar>(shape = [2, 2], value = [1.5, -0.0, 3.0, 4.0])" in document.text
    (out,) = run_case(nnef_backend, spec, case)
    assert judge_outputs(spec, case, [out]).verdict == "pass"
    assert np.signbit(out[0, 1])


def test_the_executor_aborts_on_a_repeated_integer_or_logical_constant(specs, tmp_path):
    """A deviation of the nnef package (1.0.10): constant<integer> or constant<logical> with
    one value for several elements (the standard library's value: ?[] of one item, repeated)
    throws 'Value: kind mismatch' out of the executor (SIGABRT); one value per element runs.
    Repro: conform run --backend nnef --ops nnef_constant --dtypes int32 --out /tmp/c"""
    import subprocess
    import sys

    from conform.harness.backends.nnef_models import build_document

    code = ("import sys, nnef, numpy as np\n"
            "open('graph.nnef', 'w').write(sys.argv[1])\n"
            "print(nnef.Session('graph.nnef', lowered=[])(np.zeros(1, bool))[0].tolist())\n")
    for value, dies in (([7], True), ([7, 8], False)):
        text = build_document(specs["nnef_constant"], _constant_case("int32", [2], value)).text
        done = subprocess.run([sys.executable, "-c", code, text], capture_output=True,
                              text=True, cwd=tmp_path, timeout=120)
        assert (done.returncode != 0) is dies, done.stderr
        assert ("kind mismatch" in done.stderr) is dies
