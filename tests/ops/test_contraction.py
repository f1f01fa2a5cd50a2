"""The contractions beyond XLA's (ops/onnx_contraction.py, ops/nnef_contraction.py): ONNX Gemm,
MatMul's drawer, Einsum, NNEF matmul and linear: worked examples, the onnx package's backend node
cases judged under the specs, onnx.reference and numpy.einsum as second opinions, the derived
bounds and their regions, and injected bugs caught through onnxruntime and the nnef executor."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from conform.generators._case import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from conform.oracles.expectations import expect
from tests.ops.ort_graphs import run_graph, run_nnef_document

GEMM = "onnx_gemm"


def _case(op, inputs, **attrs):
    dtype = str(inputs[0].dtype)
    return Case(id=f"{op}.{dtype}.0", op=op, dtype=dtype, input_dtypes=(dtype,) * len(inputs),
                out_dtype=dtype, inputs=list(inputs), attrs=attrs, plan="normal", seed=1)


def _gemm_case(a, b, c=None, **attrs):
    attrs = {"transA": None, "transB": None, "alpha": None, "beta": None, **attrs}
    if c is None:
        return _case(GEMM, [a, b], **attrs, absent_inputs=["c"])
    return _case(GEMM, [a, b, c], **attrs)


def test_a_hand_worked_gemm_with_transposes_and_broadcast_c():
    a = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])       # (K=3, M=2), transA
    b = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]])        # (N=2, K=3), transB
    c = np.array([[10.0], [20.0]])                           # (M, 1)
    (y,) = evaluate(GEMM, [a, b, c], {"transA": 1, "transB": 1, "alpha": 0.5, "beta": -1.0})
    # A' B' = [[1 + 10, 3 - 5], [2 + 12, 4 - 6]] = [[11, -2], [14, -2]]
    assert y.tolist() == [[5.5 - 10, -1 - 10], [7 - 20, -1 - 20]]
    (y,) = evaluate(GEMM, [a.T, b.T], {"absent_inputs": ("c",)})
    assert y.tolist() == [[11.0, -2.0], [14.0, -2.0]]


def test_empty_k_leaves_beta_times_c():
    (y,) = evaluate(GEMM, [np.zeros((2, 0)), np.zeros((0, 3)), np.array([1.0, 2.0, 3.0])],
                    {"beta": 2.0})
    assert y.tolist() == [[2.0, 4.0, 6.0]] * 2


def _gemm_node_cases(all_cases):
    return [case for case in all_cases if case.model.graph.node[-1].op_type == "Gemm"]


def test_the_onnx_backend_node_cases_pass_under_the_spec(specs, onnx_node_cases):
    """The expected outputs of onnx/backend/test/case/node/gemm.py (float32, computed by numpy)
    judged as a backend's answer would be."""
    cases = _gemm_node_cases(onnx_node_cases)
    assert len(cases) >= 10
    for node_case in cases:
        (node,) = node_case.model.graph.node
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        for inputs, outputs in node_case.data_sets:
            inputs = [np.asarray(x) for x in inputs]
            case = _gemm_case(*inputs, **attrs)
            assert judge_outputs(specs[GEMM], case, list(outputs)).verdict == "pass", node_case.name


def test_onnx_reference_agrees_where_beta_is_not_zero():
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((5, 4))
    c = rng.standard_normal((1, 5))
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=1, transB=1, alpha=0.5,
                            beta=-0.75)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 11, None)
                                            for n in "abc"],
                              [helper.make_tensor_value_info("y", 11, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    (theirs,) = ReferenceEvaluator(model).run(None, {"a": a, "b": b, "c": c})
    (ours,) = evaluate(GEMM, [a, b, c], {"transA": 1, "transB": 1, "alpha": 0.5, "beta": -0.75})
    np.testing.assert_allclose(ours, theirs, rtol=1e-14)


def test_the_bound_counts_k_plus_two_roundings(specs):
    a, b, c = np.float32([[1, -2, 3]]), np.float32([[1], [1], [1]]), np.float32([[-8]])
    (y,) = expect(specs[GEMM], _gemm_case(a, b, c, alpha=2.0, beta=0.5))
    u = 2.0 ** -24
    gamma = 5 * u / (1 - 5 * u)
    assert y.expected.tolist() == [[0.0]]
    assert y.accumulation[0][0, 0] == pytest.approx(gamma * (2 * 6 + 4), rel=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_bound_covers_products_rounded_below_the_normal_range(specs, dtype):
    """A subnormal product errs by up to half the smallest subnormal: the bound keeps that term
    in float64 too, where 2**-1075 alone would underflow to zero."""
    tiny = np.finfo(dtype).smallest_subnormal
    a, b = dtype([[tiny * 3, tiny * 5]]), dtype([[0.5], [0.5]])
    (y,) = expect(specs[GEMM], _gemm_case(a, b, dtype([[0]])))
    assert y.accumulation[0][0, 0] >= tiny
    (y,) = expect(specs[EINSUM], _einsum_case("ij,jk->ik", a, b))
    assert y.accumulation[0][0, 0] >= tiny


def test_regions_zero_beta_with_infinite_c_and_overflowing_orders(specs):
    a, b = np.float32([[1, 2]]), np.float32([[1, 1], [1, 1]])
    c = np.float32([[np.inf, 1]])
    (y,) = expect(specs[GEMM], _gemm_case(a, b, c, beta=0.0))
    assert np.isnan(y.expected[0, 0]) and y.impl_mask.tolist() == [[True, False]]
    big = np.float32([[3e38, 3e38]])
    (y,) = expect(specs[GEMM], _gemm_case(big, b, np.float32([[-3e38, 0]]), alpha=0.5))
    # 0.5 * 6e38 - 3e38 = 0 exactly, but the unscaled sum 6e38 overflows float32 in some orders
    assert y.expected[0, 0] == 0.0 and y.impl_mask.all()


# ------------------------------------------------------------------ onnxruntime

def _run_gemm_nodes(nodes, a, b, c, rows, cols):
    return run_graph(nodes, {"a": a, "b": b, "c": c}, {"y": (np.float32, (rows, cols))})


def _operands(seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-4, 4, (5, 7)).astype(np.float32)
    b = rng.uniform(-4, 4, (6, 7)).astype(np.float32)
    c = rng.uniform(-4, 4, (5, 1)).astype(np.float32)
    return a, b, c


def test_onnxruntimes_own_gemm_passes(specs):
    a, b, c = _operands(31)
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], transB=1, alpha=-0.75, beta=1.25)
    out = _run_gemm_nodes([node], a, b, c, 5, 6)
    case = _gemm_case(a, b, c, transB=1, alpha=-0.75, beta=1.25)
    assert judge_outputs(specs[GEMM], case, out).verdict == "pass"


def test_alpha_scaling_c_too_fails(specs):
    """Y = alpha * (A B' + beta C) instead of alpha A B' + beta C."""
    a, b, c = _operands(32)
    consts = {"alpha": -0.75, "beta": 1.25}
    nodes = [helper.make_node("Constant", [], [name], value=helper.make_tensor(name, 1, [], [v]))
             for name, v in consts.items()]
    nodes += [helper.make_node("Transpose", ["b"], ["bt"]),
              helper.make_node("MatMul", ["a", "bt"], ["ab"]),
              helper.make_node("Mul", ["c", "beta"], ["bc"]),
              helper.make_node("Add", ["ab", "bc"], ["sum"]),
              helper.make_node("Mul", ["sum", "alpha"], ["y"])]
    out = _run_gemm_nodes(nodes, a, b, c, 5, 6)
    bad = judge_outputs(specs[GEMM], _gemm_case(a, b, c, transB=1, **consts), out)
    assert bad.verdict == "fail" and bad.mismatched > 0


# ------------------------------------------------------------------ drawn cases

def _drawn(specs, op, count=200, seed=5):
    from conform.generators import generate_cases

    return [case for case in generate_cases(specs[op], "float32", count=count, seed=seed)
            if case.plan == "normal"]


def test_the_matmul_drawer_covers_vectors_broadcast_batches_and_empty_dimensions(specs):
    cases = _drawn(specs, "onnx_matmul", count=600) + _drawn(specs, "onnx_matmul", count=600, seed=6)
    shapes = [tuple(x.shape for x in case.inputs) for case in cases]
    seen = {
        "both 1-D": any(len(a) == 1 and len(b) == 1 for a, b in shapes),
        "A 1-D": any(len(a) == 1 and len(b) > 1 for a, b in shapes),
        "B 1-D": any(len(b) == 1 and len(a) > 1 for a, b in shapes),
        "missing leading dims": any(len(a) > 1 and len(b) > 1 and len(a) != len(b)
                                    for a, b in shapes),
        "1 against n": any(any(1 in (x, y) and max(x, y) > 1
                               for x, y in zip(a[-3::-1], b[-3::-1])) for a, b in shapes),
        "empty": any(0 in a + b for a, b in shapes),
    }
    assert all(seen.values()), seen


@pytest.mark.parametrize("op", ["onnx_matmul", GEMM, "onnx_einsum"])
def test_onnx_reference_agrees_on_drawn_cases(specs, op):
    """The drawn float32 cases' models pass onnx's full check, and onnx.reference as a second
    opinion (never the oracle) agrees on them, empty and 1-D operands included."""
    import onnx
    from onnx.reference import ReferenceEvaluator

    from conform.harness.backends.onnx_models import build_model

    cases = _drawn(specs, op, count=120)
    for case in cases:
        model = build_model(specs[op], case)
        onnx.checker.check_model(model, full_check=True)
        feeds = {f"in{i}": x for i, x in enumerate(case.inputs)}
        (theirs,) = ReferenceEvaluator(model).run(None, feeds)
        (ours,) = evaluate(op, case.inputs, case.attrs)
        assert theirs.shape == ours.shape, case.attrs
        np.testing.assert_allclose(theirs, ours, rtol=1e-5, atol=1e-4, err_msg=str(case.attrs))
    assert len(cases) >= 10


# ------------------------------------------------------------------ Einsum

EINSUM = "onnx_einsum"


def _einsum_case(equation, *operands):
    absent = ["x1", "x2"][len(operands) - 1:]
    attrs = {"equation": equation, **({"absent_inputs": absent} if absent else {})}
    return _case(EINSUM, list(operands), **attrs)


def _einsum(equation, *operands):
    (out,) = evaluate(EINSUM, [np.asarray(x, np.float64) for x in operands],
                      {"equation": equation})
    return out


def test_implicit_outputs_sort_the_letters_occurring_once():
    x = np.arange(6.0).reshape(2, 3)
    assert _einsum("ji", x).tolist() == x.T.tolist()          # output 'ij': a transpose
    assert _einsum("ij", x).tolist() == x.tolist()
    assert _einsum("aB", x).tolist() == x.T.tolist()          # 'B' < 'a' in ASCII
    assert _einsum("ii", np.arange(9.0).reshape(3, 3)).tolist() == 12.0   # a trace
    assert _einsum("i,j", [1.0, 2.0], [3.0, 4.0, 5.0]).tolist() == [[3, 4, 5], [6, 8, 10]]
    y = np.arange(24.0).reshape(2, 3, 4)
    assert _einsum("...ij", y).tolist() == y.tolist()         # ellipsis dimensions first
    assert _einsum("...ji", y).tolist() == y.transpose(0, 2, 1).tolist()


def test_explicit_forms_diagonals_sums_and_products():
    m = np.arange(9.0).reshape(3, 3)
    assert _einsum("ii->i", m).tolist() == [0, 4, 8]
    assert _einsum("ij->i", m).tolist() == [3, 12, 21]
    assert _einsum("ij->", m).tolist() == 36
    assert _einsum("->", np.array(5.0)).tolist() == 5.0
    assert _einsum("iij->j", np.arange(8.0).reshape(2, 2, 2)).tolist() == [0 + 6, 1 + 7]
    a, b, c = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4), np.ones((4, 2))
    assert _einsum("ij,jk,kl->il", a, b, c).tolist() == (a @ b @ c).tolist()
    assert _einsum("bij, bjk -> bik", a[None], b[None]).tolist() == [(a @ b).tolist()]
    # '...' broadcasts a size-1 dimension
    x, y = np.ones((1, 2, 3)), np.arange(24.0).reshape(4, 3, 2)
    assert _einsum("...ij,...jk->...ik", x, y).tolist() == np.matmul(x, y).tolist()


def test_numpy_einsum_agrees_on_drawn_cases(specs):
    """numpy.einsum as a second opinion (never the oracle) on drawn float32 cases."""
    cases = _drawn(specs, EINSUM, count=400)
    equations = set()
    for case in cases:
        (ours,) = evaluate(EINSUM, case.inputs, case.attrs)
        theirs = np.einsum(case.attrs["equation"], *[x.astype(np.float64) for x in case.inputs])
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, err_msg=case.attrs["equation"])
        equations.add(case.attrs["equation"])
    assert len(equations) >= 10


def test_the_einsum_bound_counts_products_and_additions(specs):
    a, b, c = np.float32([[1, -2]]), np.float32([[1, 1], [1, 1]]), np.float32([[1], [4]])
    (y,) = expect(specs[EINSUM], _einsum_case("ij,jk,kl->il", a, b, c))
    n = 2 * 2 + 3 - 2       # four terms of three factors
    gamma = n * 2.0 ** -24 / (1 - n * 2.0 ** -24)
    assert y.expected.tolist() == [[-5.0]]
    assert y.accumulation[0][0, 0] == pytest.approx(gamma * 15, rel=1e-6)
    # a partial product that overflows in some order of the factors: the region
    big = np.float32([[3e38, 1]])
    (y,) = expect(specs[EINSUM], _einsum_case("ij,jk,kl->il", big, b, np.float32([[1e-3], [1]])))
    assert y.impl_mask is not None and y.impl_mask.all()


def test_the_onnx_backend_einsum_cases_pass_under_the_spec(specs, onnx_node_cases):
    cases = [c for c in onnx_node_cases if c.model.graph.node[-1].op_type == "Einsum"]
    assert len(cases) >= 5
    for node_case in cases:
        (node,) = node_case.model.graph.node
        equation = helper.get_attribute_value(node.attribute[0]).decode()
        for inputs, outputs in node_case.data_sets:
            case = _einsum_case(equation, *[np.asarray(x) for x in inputs])
            assert judge_outputs(specs[EINSUM], case, list(outputs)).verdict == "pass", \
                node_case.name


def _run_einsum(equation, x):
    node = helper.make_node("Einsum", ["x"], ["y"], equation=equation)
    rows, cols = x.shape
    return run_graph([node], {"x": x}, {"y": (np.float32, (cols, rows))})


def test_an_implicit_output_left_unsorted_fails_and_onnxruntimes_einsum_passes(specs):
    """'ji' in the implicit form is 'ji->ij', a transpose; a backend keeping the letters in
    the order they appear ('ji->ji') copies the input."""
    x = np.arange(9, dtype=np.float32).reshape(3, 3)
    case = _einsum_case("ji", x)
    assert judge_outputs(specs[EINSUM], case, _run_einsum("ji", x)).verdict == "pass"
    bad = judge_outputs(specs[EINSUM], case, _run_einsum("ji->ji", x))
    assert bad.verdict == "fail" and bad.mismatched == 6


# ------------------------------------------------------------------ NNEF matmul and linear

def test_nnef_matmul_transposes_the_last_two_dimensions_and_broadcasts_batches():
    a = np.arange(12.0).reshape(1, 3, 4)           # transposeA: [1, 4, 3]
    b = np.arange(24.0).reshape(2, 4, 3)           # transposeB: [2, 3, 4]
    (c,) = evaluate("nnef_matmul", [a, b], {"transposeA": True, "transposeB": True})
    assert c.shape == (2, 4, 4)
    assert c.tolist() == np.matmul(a[0].T, np.swapaxes(b, 1, 2)).tolist()


def test_nnef_linear_is_input_times_filter_transposed_plus_bias():
    x, w = np.array([[1.0, 2.0]]), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    (y,) = evaluate("nnef_linear", [x, w, np.array([[10.0, 20.0, 30.0]])], {})
    assert y.tolist() == [[11.0, 22.0, 33.0]]
    (y,) = evaluate("nnef_linear", [x, w], {"absent_inputs": ("bias",)})
    assert y.tolist() == [[1.0, 2.0, 3.0]]


def _linear_document(c, o, *, transpose_b):
    call = ("linear(input, filter, bias)" if transpose_b
            else "add(matmul(input, filter, transposeB = false), bias)")
    return ("version 1.0;\ngraph g( input, filter, bias ) -> ( output )\n{\n"
            f"    input = external<scalar>(shape = [3, {c}]);\n"
            f"    filter = external<scalar>(shape = [{o}, {c}]);\n"
            f"    bias = external<scalar>(shape = [1, {o}]);\n"
            f"    output = {call};\n}}\n")


def test_nnef_linear_without_the_filter_transposed_fails(specs, tmp_path):
    """A linear that multiplies by the filter as it is (a square filter, so the shapes fit)."""
    rng = np.random.default_rng(41)
    x, w = rng.uniform(-4, 4, (3, 4)).astype(np.float32), rng.uniform(-4, 4, (4, 4)).astype(np.float32)
    bias = rng.uniform(-4, 4, (1, 4)).astype(np.float32)
    case = _case("nnef_linear", [x, w, bias])
    good = run_nnef_document(_linear_document(4, 4, transpose_b=True), [x, w, bias], tmp_path)
    assert judge_outputs(specs["nnef_linear"], case, good).verdict == "pass"
    bad = run_nnef_document(_linear_document(4, 4, transpose_b=False), [x, w, bias], tmp_path)
    assert judge_outputs(specs["nnef_linear"], case, bad).verdict == "fail"


def test_conv_boundaries_count_the_valid_window_placements(specs):
    from conform.generators._shape_edges import boundary_cases
    from conform.ops.contraction import CONV_BOUNDARIES, numpy_conv

    for case, (height, pad, stride) in zip(boundary_cases(specs["conv"], "float64", seed=0),
                                           CONV_BOUNDARIES):
        (out,) = evaluate("conv", case.inputs, case.attrs)
        placements = max((height + sum(pad) - 5) // stride + 1, 0)   # the dilated kernel: 5 rows
        assert out.shape == (1, 2, placements, 3), case.id
        assert np.allclose(numpy_conv(*case.inputs, **case.attrs)[0], out)
