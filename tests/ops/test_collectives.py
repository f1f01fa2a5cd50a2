"""XLA collectives (ops/collectives.py): the oracles on the examples of the text (seed 004), and
the real jax backend on several host devices through the real CLI, with injected bugs."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conform.oracles import evaluate

OPS = "all_reduce,all_gather,reduce_scatter,all_to_all,collective_permute,cross_replica_sum,replica_id"
TWO = np.array([[1.0, 2.5], [3.0, 5.25]])


def _one(op, operand, **attrs):
    inputs = [] if operand is None else [np.asarray(operand)]
    (out,) = evaluate(op, inputs, attrs)
    return out


# --- the text's examples ------------------------------------------------------------------------

def test_all_reduce_the_texts_example():
    """Two replicas holding [1.0, 2.5] and [3.0, 5.25] both get [4.0, 7.75]."""
    out = _one("all_reduce", TWO, replica_count=2, replica_groups=[], computation="add")
    assert out.tolist() == [[4.0, 7.75], [4.0, 7.75]]
    assert _one("cross_replica_sum", TWO, replica_count=2, replica_groups=[]).tolist() == out.tolist()


def test_all_reduce_within_each_replica_group():
    """replica_groups = {0, 2}, {1, 3}: replicas 0 and 2 combine, and 1 and 3."""
    x = np.array([[1.0], [10.0], [100.0], [1000.0]])
    out = _one("all_reduce", x, replica_count=4, replica_groups=[[0, 2], [1, 3]], computation="add")
    assert out.ravel().tolist() == [101.0, 1010.0, 101.0, 1010.0]
    top = _one("all_reduce", x, replica_count=4, replica_groups=[[0, 2], [1, 3]], computation="max")
    assert top.ravel().tolist() == [100.0, 1000.0, 100.0, 1000.0]
    nan = _one("all_reduce", np.array([[np.nan], [1.0]]), replica_count=2, replica_groups=[],
               computation="min")
    assert np.isnan(nan).all()


def test_all_gather_the_texts_example_and_group_order():
    """[1.0, 2.5] and [3.0, 5.25] gathered along dimension 0 give [1.0, 2.5, 3.0, 5.25] on both
    replicas; a group's order sets the order of the pieces."""
    out = _one("all_gather", TWO, replica_count=2, replica_groups=[], all_gather_dim=0)
    assert out.tolist() == [[1.0, 2.5, 3.0, 5.25]] * 2
    swapped = _one("all_gather", TWO, replica_count=2, replica_groups=[[1, 0]], all_gather_dim=0)
    assert swapped.tolist() == [[3.0, 5.25, 1.0, 2.5]] * 2


def test_reduce_scatter_the_texts_example():
    """[1.0, 2.25] and [3.0, 5.25] scattered along dimension 0: [4.0] on the first replica,
    [7.5] on the second; a group's order sets which shard each replica gets."""
    x = np.array([[1.0, 2.25], [3.0, 5.25]])
    out = _one("reduce_scatter", x, replica_count=2, replica_groups=[], scatter_dimension=0,
               computation="add")
    assert out.tolist() == [[4.0], [7.5]]
    swapped = _one("reduce_scatter", x, replica_count=2, replica_groups=[[1, 0]],
                   scatter_dimension=0, computation="add")
    assert swapped.tolist() == [[7.5], [4.0]]


def test_all_to_all_the_texts_example():
    """AllToAll(f32[4, 16], split_dimension=1, concat_dimension=0, split_count=4): each core
    gets f32[16, 4], block i of every core, concatenated in core order."""
    x = np.arange(4 * 4 * 16, dtype=np.float64).reshape(4, 4, 16)
    out = _one("all_to_all", x, replica_count=4, replica_groups=[], split_dimension=1,
               concat_dimension=0)
    assert out.shape == (4, 16, 4)
    for core in range(4):
        want = np.concatenate([x[j][:, 4 * core:4 * core + 4] for j in range(4)], axis=0)
        assert (out[core] == want).all()


def test_all_to_all_groups_concatenate_in_the_groups_order():
    """replica_groups = {{1, 2, 3}, {4, 5, 0}}: the blocks received are concatenated in the
    order 1, 2, 3 and 4, 5, 0."""
    x = np.arange(6 * 3, dtype=np.float64).reshape(6, 3)
    out = _one("all_to_all", x, replica_count=6, replica_groups=[[1, 2, 3], [4, 5, 0]],
               split_dimension=0, concat_dimension=0)
    assert out[1].tolist() == [x[1][0], x[2][0], x[3][0]]
    assert out[0].tolist() == [x[4][2], x[5][2], x[0][2]]


def test_collective_permute_sends_and_zeros_the_replicas_that_receive_nothing():
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    out = _one("collective_permute", x, replica_count=3, source_target_pairs=[[0, 1], [1, 2]])
    assert out.tolist() == [[0.0, 0.0], [1.0, 2.0], [3.0, 4.0]]


def test_the_data_movement_collectives_move_every_types_bits():
    """Issue 36: gather, all-to-all and permute are drawn in every element type; their oracles
    move bits (uint64 above 2**63, complex with a -0 part, float8, bool)."""
    import ml_dtypes
    for x in [np.array([[2**63 + 1, 7], [3, 2**64 - 1]], np.uint64),
              np.array([[complex(-0.0, 1), 2j], [complex(1, -0.0), np.inf]], np.complex128),
              np.array([[-0.0, 448], [0.5, -1]], ml_dtypes.float8_e4m3fn),
              np.array([[True, False], [False, True]])]:
        both = np.concatenate(list(x))
        gathered = _one("all_gather", x, replica_count=2, replica_groups=[], all_gather_dim=0)
        sent = _one("all_to_all", x, replica_count=2, replica_groups=[], split_dimension=0,
                    concat_dimension=0)
        moved = _one("collective_permute", x, replica_count=2, source_target_pairs=[[0, 1]])
        for out, want in [(gathered, np.stack([both, both])), (sent, x.T), (moved[1], x[0])]:
            assert np.asarray(out).astype(x.dtype).tobytes() == want.tobytes(), x.dtype


def test_the_reductions_on_pred_and_wide_unsigned_integers():
    """Add and Max on PRED are logical OR, Min logical AND (StableHLO add, maximum, minimum);
    a uint64 sum above 2**63 is exact."""
    x = np.array([[True, False, False], [False, False, True]])
    for computation, want in [("add", [True, False, True]), ("max", [True, False, True]),
                              ("min", [False, False, False])]:
        out = _one("all_reduce", x, replica_count=2, replica_groups=[], computation=computation)
        assert out.dtype == np.bool_ and out.tolist() == [want, want]
    big = np.array([[2**63], [2**62 + 3]], np.uint64)
    total = _one("cross_replica_sum", big, replica_count=2, replica_groups=[])
    assert np.asarray(total).astype(np.uint64).ravel().tolist() == [2**63 + 2**62 + 3] * 2


def test_replica_id_counts_the_replicas():
    assert _one("replica_id", None, replica_count=5).tolist() == [0, 1, 2, 3, 4]


def test_max_and_min_are_judged_exactly_add_by_accumulation(specs):
    from conform.generators import generate_cases

    spec = specs["all_reduce"]
    for case in generate_cases(spec, "float32", count=12, seed=3):
        model = spec.model_for("float32", case=case)
        assert ("accumulation" in model) == (case.attrs["computation"] == "add"), case.attrs


# --- the real jax backend, through the CLI -------------------------------------------------------

def _records(out):
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def _run(conform_cli, out, backend, ops, *more):
    proc = conform_cli("run", "--backend", backend, "--ops", ops, "--max-examples", "3",
                       "--seed", "5", "--out", out, "--quiet", *more)
    assert (out / "results.jsonl").exists(), proc.stdout + proc.stderr
    return _records(out)


@pytest.mark.parametrize("backend, devices", [
    ("jax", 8), ("tests.ops.collective_backends:FourDevicesBackend", 4)])
def test_jax_runs_every_collective_on_its_host_devices(tmp_path, conform_cli, backend, devices):
    """Every case with at most ``devices`` replicas is judged (the failures are AllReduce's
    Max and Min on NaN: XLA:CPU's all-reduce drops NaN); a case needing more devices is
    unsupported with that reason."""
    records = _run(conform_cli, tmp_path / "run", backend, OPS, "--dtypes", "float32,int32,uint32")
    assert not [r["id"] for r in records if r["verdict"] in ("error", "crash", "timeout")]
    judged = {r["op"] for r in records if r["verdict"] in ("pass", "impl_defined")}
    assert judged == set(OPS.split(",")) if devices == 8 else len(judged) >= 4
    for r in records:
        if r["verdict"] == "fail":
            assert r["op"] == "all_reduce" and r["attrs"]["computation"] in ("max", "min")
            assert r["worst"]["expected"] == "nan", r["id"]
        many = r["attrs"]["replica_count"] > devices
        assert many == ("devices (one per replica)" in r.get("message", "")), r["id"]
    assert any(r["attrs"]["replica_count"] > 4 for r in records if r["verdict"] == "pass") \
        == (devices == 8)


@pytest.mark.parametrize("backend", ["IgnoredGroupsBackend", "DroppedReplicaBackend"])
def test_the_judge_catches_an_injected_collective_bug(tmp_path, conform_cli, backend):
    records = _run(conform_cli, tmp_path / "run", f"tests.ops.collective_backends:{backend}",
                   "all_reduce,cross_replica_sum,all_gather", "--dtypes", "float32,int32")
    failed = {r["op"] for r in records if r["verdict"] == "fail"
              and (r["worst"] or {}).get("expected") != "nan"}
    assert failed >= {"all_reduce", "cross_replica_sum"}, "the judge let the bug pass"
    assert not [r["id"] for r in records if r["verdict"] in ("error", "crash")]


def test_a_case_needing_more_devices_than_a_backend_has_is_unsupported_with_the_reason(specs):
    """A program's device count is its replica count; a backend declaring fewer devices never
    receives the case (the numpy backend declares one)."""
    from conform.generators import generate_cases
    from conform.harness.backends.models import run_case
    from conform.harness.backends.numpy_backend import NumpyBackend
    from conform.harness.backends.program import Program
    from conform.model_formats import Unsupported

    spec = specs["all_gather"]
    cases = generate_cases(spec, "float32", count=12, seed=4)
    many = next(case for case in cases if case.attrs["replica_count"] > 1)
    assert Program(spec, many).devices == many.attrs["replica_count"] == many.inputs[0].shape[0]
    assert Program(specs["exp"], generate_cases(specs["exp"], "float32", count=1, seed=0)[0]).devices == 1
    with pytest.raises(Unsupported, match=f"the case needs {Program(spec, many).devices} devices "
                                          r"\(one per replica\); numpy has 1"):
        run_case(NumpyBackend(), spec, many)


def test_complex_reductions_add_part_by_part_and_order_max_min_lexicographically():
    """Issue 36: a complex Add sums each part (StableHLO add: 'complex addition'), Max and Min
    pick by (real, imag) (StableHLO maximum, minimum); a NaN part makes Max and Min of its
    group open at that index, and Add never."""
    x = np.array([[3 - 1j, 1e16 + 1j], [3 + 2j, 1 + 0j], [-4 + 9j, -1e16 + 0j]])
    total = _one("cross_replica_sum", x, replica_count=3, replica_groups=[])
    assert total[0].tolist() == [2 + 10j, 1 + 1j]        # 1e16 + 1 - 1e16: exact, not 0
    top = _one("all_reduce", x, replica_count=3, replica_groups=[[0, 2], [1]], computation="max")
    assert top.tolist() == [[3 - 1j, 1e16 + 1j], [3 + 2j, 1 + 0j], [3 - 1j, 1e16 + 1j]]
    low = _one("reduce_scatter", x[:2], replica_count=2, replica_groups=[], scatter_dimension=0,
               computation="min")
    assert low.tolist() == [[3 - 1j], [1 + 0j]]
    x[1, 0] = complex(np.nan, 1)
    for computation, want in [("max", [[True, False]] * 3), ("add", [[False, False]] * 3)]:
        (mask,) = evaluate("all_reduce", [x], {"replica_count": 3, "replica_groups": [],
                                               "computation": computation,
                                               "open_elements": True})
        assert mask.tolist() == want


@pytest.mark.parametrize("computation, values, open_elements", [
    ("add", [[4.0, 1.0], [4.0, 0.5]], [True, False]),   # 8: past float4's 6
    ("max", [[6.0, -6.0], [4.0, 1.0]], [False, False]),  # a selection never overflows
])
def test_float4_sums_past_its_range_are_open_and_max_never(specs, computation, values,
                                                            open_elements):
    import dataclasses
    from conform.dtypes import np_dtype
    from conform.generators import generate_cases
    from conform.oracles.expectations import expect
    spec = specs["all_reduce"]
    case = generate_cases(spec, "float4_e2m1fn", count=1, seed=0)[0]
    attrs = {"replica_count": 2, "replica_groups": [], "computation": computation}
    case = dataclasses.replace(case, inputs=[np.array(values, np_dtype("float4_e2m1fn"))],
                               attrs=attrs, expectation=None)
    (answer,) = expect(spec, case)
    impl = np.zeros((2, 2), bool) if answer.impl_mask is None else answer.impl_mask
    assert impl.tolist() == [open_elements] * 2


def test_jax_sums_complex_replicas_within_the_bound_and_a_swapped_part_fails(specs, jax_backend):
    from tests.ops.xla_judging import jax_verdicts
    spec = specs["reduce_scatter"]
    verdicts = jax_verdicts(spec, jax_backend, "complex64", 4)
    assert "pass" in verdicts and set(verdicts) <= {"pass", "impl_defined", "unsupported"}

    def swapped(outputs, case):
        return [outputs[0].imag + 1j * outputs[0].real]
    assert "fail" in jax_verdicts(spec, jax_backend, "complex64", 4, change=swapped)
