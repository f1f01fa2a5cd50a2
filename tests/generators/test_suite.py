"""Generators: deterministic suites, valid signatures per family, value plans, edge cases."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conform.generators import case_digest, dtype_labels, edge_values, fill, generate_cases
from conform.dtypes import np_dtype
from conform.oracles import evaluate


def _digests(spec, label, seed, count=6):
    return [case_digest(c) for c in generate_cases(spec, label, count=count, seed=seed)]


@pytest.mark.parametrize("op", ["add", "conv", "pad", "convert_element_type", "concatenate"])
def test_same_seed_gives_the_same_cases_byte_for_byte(specs, op):
    label = dtype_labels(specs[op])[0]
    assert _digests(specs[op], label, seed=7) == _digests(specs[op], label, seed=7)


def test_different_seeds_give_different_cases(specs):
    assert _digests(specs["add"], "float32", seed=1) != _digests(specs["add"], "float32", seed=2)


def test_every_family_yields_cases_its_oracle_accepts(specs):
    for spec in specs.values():
        for label in dtype_labels(spec)[:2]:
            for case in generate_cases(spec, label, count=8, seed=3):
                # (np_dtype: a string input is an object array of str)
                assert [x.dtype for x in case.inputs] == [np_dtype(d) for d in case.input_dtypes], \
                    case.id
                if case.plan == "must_reject":   # an input the op's text forbids
                    continue
                outputs = evaluate(spec.oracle, case.inputs, case.attrs)
                assert len(outputs) == len(spec.outputs), case.id


def test_suites_cover_0d_empty_and_8_plus_element_tensors(specs):
    sizes = [x.size for c in generate_cases(specs["add"], "float32", count=60, seed=0)
             for x in c.inputs]
    ranks = [x.ndim for c in generate_cases(specs["add"], "float32", count=60, seed=0)
             for x in c.inputs]
    assert 0 in ranks and 0 in sizes and max(sizes) >= 8


def test_edge_plan_puts_specials_beyond_the_first_position(specs):
    cases = [c for c in generate_cases(specs["add"], "float32", count=60, seed=0)
             if c.plan in ("edge", "special") and c.inputs[0].size >= 4]
    positions = {int(np.flatnonzero(~np.isfinite(c.inputs[0]))[0]) for c in cases
                 if (~np.isfinite(c.inputs[0])).any()}
    assert positions - {0}


def test_edge_cases_from_the_spec_are_generated_for_dtypes_that_express_them(specs):
    ids = [c.id for c in generate_cases(specs["divide"], "int32", count=1, seed=0)]
    assert "divide.int32.edge0" in ids          # INT_MIN / -1
    case = next(c for c in generate_cases(specs["divide"], "int32", count=1, seed=0)
                if c.id == "divide.int32.edge0")
    where = np.flatnonzero(case.inputs[0] == np.iinfo(np.int32).min)
    assert where.size and case.inputs[1][where[0]] == -1 and case.inputs[0].size == 8
    float_ids = [c.id for c in generate_cases(specs["divide"], "float32", count=1, seed=0)]
    assert "divide.float32.edge0" not in float_ids   # int_min has no float meaning


def test_edge_values_resolve_names_per_dtype(specs):
    values = edge_values(specs["add"], "float16")
    assert np.float16(65504) in values and np.isnan(values).any()
    assert np.float16(2.0 ** -24) in values
    ints = edge_values(specs["add"], "int32")
    assert np.iinfo(np.int32).min in ints and np.iinfo(np.int32).max in ints


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64"])
def test_wide_plan_spans_the_dtype(dtype):
    values = fill(np.random.default_rng(0), shape=(4000,), dtype=dtype, plan="wide", low=-1, high=1,
                  edges=np.array([], dtype))
    assert values.dtype == np.dtype(dtype)
    magnitudes = np.abs(values[values != 0].astype(np.float64))
    assert math.log2(magnitudes.max()) - math.log2(magnitudes.min()) > 20


def test_convert_labels_are_ordered_pairs(specs):
    labels = dtype_labels(specs["convert_element_type"])
    assert "float32->int32" in labels and "int32->float32" in labels
    assert "float32->float32" not in labels


DIGEST_SCRIPT = """
import sys, hashlib
for name in sys.argv[1:]:
    __import__(name)
from conform.spec import load_specs
from conform.generators import generate_cases, case_digest
specs = load_specs()
h = hashlib.sha256()
for op in ("conv", "add", "pad", "reshape"):
    for case in generate_cases(specs[op], "float32", count=15, seed=11):
        h.update(case_digest(case).encode())
print(h.hexdigest())
"""


def test_cases_do_not_depend_on_what_the_process_imported():
    import subprocess
    import sys

    def digest(*modules):
        return subprocess.run([sys.executable, "-c", DIGEST_SCRIPT, *modules], check=True,
                              capture_output=True, text=True).stdout.strip()

    assert digest() == digest("conform.harness.cli.main", "conform.harness.run.runner", "conform.reports")


def test_every_elementwise_suite_contains_every_edge_value_against_every_other(specs):
    from conform.generators import edge_sweep_case

    for spec in specs.values():
        if not spec.elementwise or len(spec.inputs) > 2:   # (a ternary op has no sweep)
            continue
        for dtype in spec.dtypes:
            edges = edge_values(spec, dtype)
            cases = generate_cases(spec, dtype, count=1, seed=0)
            if cases[0].plan == "every_value":   # float8, float4: every value, each edge too
                held = {np.asarray(x).tobytes() for x in cases[0].inputs[0]}
                assert {np.asarray(e).tobytes() for e in edges} <= held, (spec.op, dtype)
                continue
            sweep = next(c for c in cases if c.id.endswith(".sweep"))
            # on a drawn shape (issue 38), the sweep's run repeated from its start to fill it
            assert sweep.inputs[0].size >= len(edges) ** len(spec.inputs), (spec.op, dtype)
            flat = [np.asarray(x).reshape(-1) for x in sweep.inputs]
            pairs = {tuple(np.asarray(x[i]).tobytes() for x in flat)
                     for i in range(sweep.inputs[0].size)}
            assert len(pairs) == len({np.asarray(e).tobytes() for e in edges}) ** len(spec.inputs)
            assert edge_sweep_case(spec, dtype, seed=0).id == sweep.id


def test_default_float_edges_include_the_named_specials(specs):
    values = edge_values(specs["add"], "float32").astype(np.float64)
    for wanted in (0.0, np.inf, -np.inf, 2.0 ** -149, 2.0 ** -126, np.float32(3.4028235e38)):
        assert wanted in values
    assert np.isnan(values).any() and (np.signbit(values) & (values == 0)).any()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_exhaustive_case_holds_every_bit_pattern_once(specs, dtype):
    from conform.generators import exhaustive_case

    case = exhaustive_case(specs["exp"], dtype)
    bits = case.inputs[0].view(np.uint16)
    assert bits.size == 65536 and np.unique(bits).size == 65536
    assert exhaustive_case(specs["add"], dtype) is None          # binary: not exhaustive
    assert exhaustive_case(specs["exp"], "float32") is None


def test_float32_sweep_is_1024_lazy_chunks_covering_every_bit_pattern(specs):
    from conform.generators import exhaustive_cases

    chunks = exhaustive_cases(specs["tanh"], "float32")
    assert len(chunks) == 1024
    first = next(iter(chunks))
    bits = first.inputs[0].view(np.uint32)
    assert bits.size == 1 << 22 and bits[0] == 0 and np.all(np.diff(bits.astype(np.int64)) == 1)
    assert first.id == "tanh.float32.exhaustive0000"
    assert chunks[1023].inputs[0].view(np.uint32)[-1] == 0xFFFFFFFF   # as the 1024th iterated


def test_one_float32_chunk_is_made_on_its_own_as_the_sweep_makes_it(specs):
    """What `conform repro` regenerates for a chunk's record."""
    from conform.generators import exhaustive_case, exhaustive_cases

    first = exhaustive_case(specs["tanh"], "float32", 0)
    swept = next(iter(exhaustive_cases(specs["tanh"], "float32")))
    assert first.id == swept.id and first.seed == swept.seed == 0
    assert first.inputs[0].tobytes() == swept.inputs[0].tobytes()
    last = exhaustive_case(specs["tanh"], "float32", 1023)
    assert last.id == "tanh.float32.exhaustive1023" and last.seed == 1023
    assert last.inputs[0].view(np.uint32)[0] == 1023 << 22
    assert exhaustive_case(specs["tanh"], "float32", 1024) is None
    assert exhaustive_case(specs["tanh"], "float16", 0) is None   # 16-bit types have no chunks


@pytest.mark.parametrize("op", ["reduce_window_max", "pad", "clamp"])
def test_suites_hold_signatures_the_partial_onnx_operator_can_express(specs, op):
    """MaxPool windows only the spatial dimensions of an N, C, ... tensor, Pad has no interior
    padding, Clip takes only scalar bounds: signatures drawn freely rarely fit them (MaxPool:
    none of 64), which left those onnxruntime kernels almost untested."""
    from conform.harness.backends import onnx_models
    from conform.model_formats import Unsupported

    def expressible(case):
        try:
            onnx_models.build_model(specs[op], case)
        except Unsupported:
            return False
        return True

    cases = generate_cases(specs[op], "float32", count=64, seed=0)
    fitting = sum(map(expressible, cases))
    assert len(cases) // 3 <= fitting < len(cases)   # and the rest of the semantics stays tested


def test_large_budgets_add_cases_to_at_most_max_signatures(specs):
    from conform.generators._drawing import CASES_PER_SIGNATURE, MAX_SIGNATURES, draw_plans

    spec = specs["add"]
    small = draw_plans(spec, "float32", count=CASES_PER_SIGNATURE * MAX_SIGNATURES, seed=0)
    assert len({repr(plan[0]) for plan in small}) <= MAX_SIGNATURES   # draws may repeat
    assert draw_plans(spec, "float32", count=10, seed=0) == small[:10]   # small budgets: a prefix
    large = draw_plans(spec, "float32", count=300, seed=0)
    assert len(large) == 300 and len({repr(plan[0]) for plan in large}) <= MAX_SIGNATURES
    assert len({plan[2] for plan in large}) == 300   # every case its own fill seed


def test_a_corpus_file_gives_back_the_cases_it_was_written_from(tmp_path):
    import ml_dtypes

    from conform.generators import Case
    from conform.generators._corpus_format import read, write
    from conform.oracles.expectations import Expectation

    def case(i, inputs, expectation):
        return Case(id=f"x.{i}", op="x", dtype=str(inputs[0].dtype), input_dtypes=("a",),
                    out_dtype="b", inputs=inputs, attrs={"axes": [i]}, plan="edge", seed=i,
                    expectation=expectation)

    cases = [
        case(0, [np.arange(5).astype(ml_dtypes.bfloat16)], (Expectation(np.float64(2.5), None, None),)),
        case(1, [np.zeros((0, 3), np.float32), np.full((), 7, np.float32)],
             (Expectation(np.zeros((0, 3)), np.zeros((0, 3), bool), (np.ones((0, 3)), 7)),)),
        case(2, [np.arange(7, dtype=np.int8)[::2], np.arange(6.0).reshape(2, 3).T], None),
        # arrays of one dtype and shape share a block: each still starts 16-byte aligned
        *(case(3 + k, [np.arange(3, dtype=np.float32) + k, np.full((), k, np.float32)],
               (Expectation(np.arange(3.0) * k, None, None),)) for k in range(3)),
        # several outputs: each keeps its own parts
        case(6, [np.arange(4, dtype=np.float32)],
             (Expectation(np.arange(2.0), None, None),
              Expectation(np.arange(2, dtype=np.int64), np.array([True, False]), (np.ones(2), 3)))),
    ]
    write(tmp_path / "corpus", cases)
    loaded = read(tmp_path / "corpus")
    for before, after in zip(cases, loaded, strict=True):
        assert (after.id, after.attrs, after.seed, after.plan) == (before.id, before.attrs,
                                                                  before.seed, before.plan)
        for x, y in zip(before.inputs, after.inputs, strict=True):
            assert (x.dtype, x.shape) == (y.dtype, y.shape) and np.array_equal(x, y)
            assert y.flags.writeable and y.ctypes.data % 16 == 0
        if before.expectation is None:
            assert after.expectation is None
            continue
        assert len(after.expectation) == len(before.expectation)
        for x, y in zip(before.expectation, after.expectation):
            assert type(y.expected) is type(x.expected) and np.array_equal(y.expected, x.expected)
            assert (x.impl_mask is None) == (y.impl_mask is None)
            assert (x.accumulation is None) == (y.accumulation is None)
    assert loaded[1].expectation[0].impl_mask.dtype == bool
    assert loaded[1].expectation[0].accumulation[1] == 7
    assert loaded[0].expectation[0].impl_mask is None
    assert loaded[6].expectation[1].accumulation[1] == 3
    assert loaded[6].expectation[1].impl_mask.tolist() == [True, False]


def test_the_corpus_cache_keeps_under_its_cap_dropping_the_least_recently_used(specs, tmp_path,
                                                                                monkeypatch):
    import os

    import conform.generators._corpus as corpus

    monkeypatch.setenv("CONFORM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(corpus, "_used", set())
    monkeypatch.setattr(corpus, "_wrote", [])
    folder = tmp_path / "corpus"
    folder.mkdir()
    legacy = folder / "add.float32.0123.pkl"   # the former, pickled format: never read again
    legacy.write_bytes(b"\x80\x05.")
    old = []
    for age in range(4):   # four stale 1 MiB files, the oldest first
        path = folder / f"stale{age}.corpus"
        path.write_bytes(bytes(1 << 20))
        os.utime(path, (1_000_000 + age, 1_000_000 + age))
        old.append(path)
    assert corpus.prune_corpus(max_mb=0) == []   # this process wrote nothing: nothing is pruned
    generate_cases(specs["add"], "float32", count=3, seed=0, use_cache=True)   # writes one file
    [written] = corpus._wrote
    corpus._used.add(old[0])   # a file this run read is spared, however old
    os.utime(old[0], (1, 1))
    assert corpus.prune_corpus(max_mb=2.5) == old[1:3]
    assert sorted(folder.iterdir()) == sorted([written, old[0], old[3]])   # legacy deleted
    # a cache hit marks its file as recently used
    os.utime(written, (5, 5))
    generate_cases(specs["add"], "float32", count=3, seed=0, use_cache=True)
    assert written.stat().st_mtime > 1_000_000 and len(corpus._wrote) == 1


_SLICES = r"""
import multiprocessing, sys
from pathlib import Path
import conform.generators._corpus as corpus
import conform.generators._suite as suite
from conform.generators import dtype_labels, fill_corpus, generate_cases
from conform.spec import load_specs

specs = load_specs()
pairs = [(specs[op], label) for op in ("add", "abs", "conv", "reduce_sum")
         for label in ("float32", "int32") if label in dtype_labels(specs[op])]
"""

# abs fails to generate in the children: left to the process that asks for its cases
_FILL_IN_CHILDREN = _SLICES + r"""
drawn = suite._generate
def failing_abs(spec, dtype, **kw):
    if spec.op == "abs":
        raise RuntimeError("a broken generator")
    return drawn(spec, dtype, **kw)
suite._generate = failing_abs
fork = multiprocessing.get_context("fork")
written = fill_corpus(pairs, count=5, seed=3, processes=2, context=fork)
suite._generate = drawn
files = sorted(Path(sys.argv[1], "corpus").glob("*.corpus"))
broken = sum(spec.op == "abs" for spec, _ in pairs)
assert written == len(pairs) - broken == len(files) == len(corpus._wrote), (written, files)
assert not any(f.name.startswith("abs.") for f in files)
"""

_FILL_HERE = _SLICES + r"""
for spec, label in pairs:
    generate_cases(spec, label, count=5, seed=3, use_cache=True)
print(len(pairs))
"""


def test_filling_the_corpus_in_child_processes_writes_the_files_one_process_would(tmp_path):
    import os
    import subprocess
    import sys

    def run(code, cache):
        env = {**os.environ, "CONFORM_CACHE_DIR": str(cache)}
        proc = subprocess.run([sys.executable, "-c", code, str(cache)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    parallel, serial = tmp_path / "parallel", tmp_path / "serial"
    run(_FILL_IN_CHILDREN, parallel)
    count = int(run(_FILL_HERE, parallel))   # draws abs
    run(_FILL_HERE, serial)
    files = sorted((parallel / "corpus").glob("*.corpus"))
    assert len(files) == count == 8   # add, abs, conv, reduce_sum x float32, int32
    for path in files:
        assert path.read_bytes() == (serial / "corpus" / path.name).read_bytes(), path.name


class _Forgetful(dict):
    def __setitem__(self, key, value):   # keeps nothing: every strategy is made anew
        pass


@pytest.mark.parametrize("op", ["add", "conv", "slice", "convert_element_type", "onnx_pad", "top_k"])
def test_strategies_made_once_draw_the_cases_new_ones_would(specs, op, monkeypatch):
    from conform.generators import kit

    label = dtype_labels(specs[op])[0]
    kept = [case_digest(c) for c in generate_cases(specs[op], label, count=12, seed=4, use_cache=False)]
    monkeypatch.setattr(kit.st, "_made", _Forgetful())
    monkeypatch.setattr(kit, "_shapes", kit._shapes.__wrapped__)
    for name in [n for n in vars(kit.st) if not n.startswith("_")]:
        monkeypatch.delattr(kit.st, name)   # the wrappers close over the old store
    new = [case_digest(c) for c in generate_cases(specs[op], label, count=12, seed=4, use_cache=False)]
    assert kept == new


def test_a_strategy_made_once_keeps_its_arguments_types_inside_tuples():
    """(None, 0, 1) and (None, 0.0, 1.0) are equal and hash alike: a strategy kept for one
    must not serve the other (Resize's bool extrapolation_value drew ints after an
    exclude_outside choice had made the int one)."""
    from conform.generators import kit

    ints, floats = kit.st.sampled_from((None, 0, 1)), kit.st.sampled_from((None, 0.0, 1.0))
    assert ints is not floats and ints is kit.st.sampled_from((None, 0, 1))
    assert [type(v) for v in floats.elements] == [type(None), float, float]


def test_draws_do_not_depend_on_what_was_drawn_before(specs):
    """Hypothesis's cache of permitted constants is kept from one op x dtype to the next: the
    plans of a slice are the same drawn first, after others, or after that cache is emptied."""
    from hypothesis.internal.conjecture import providers

    from conform.generators import _drawing

    def plans(op, label):
        return repr(_drawing.draw_plans(specs[op], label, count=12, seed=5))

    first = plans("conv", "float32")
    for op, label in (("add", "int8"), ("onnx_pad", "float16"), ("top_k", "float64")):
        plans(op, label)
    again = plans("conv", "float32")
    _drawing._CONSTANTS.clear()
    providers.CONSTANTS_CACHE.cache.clear()
    assert first == again == plans("conv", "float32")


def test_an_ops_values_hook_fills_the_inputs_its_drawn_shapes_constrain(specs):
    """The hook runs after the value plan, from the case's seeded generator: the same plan
    gives the same values, and the values it writes (indices in range) are the case's."""
    from conform.generators._drawing import draw_plans
    from conform.generators._suite import materialize

    spec = specs["onnx_gather"]
    for k, plan in enumerate(draw_plans(spec, "float32", count=8, seed=5)):
        case, again = materialize(spec, "float32", k, plan), materialize(spec, "float32", k, plan)
        data, indices = case.inputs
        size = data.shape[case.attrs["axis"]]
        assert ((indices >= -size) & (indices < size)).all()
        assert all(a.tobytes() == b.tobytes() for a, b in zip(case.inputs, again.inputs))


def test_default_bool_edges_are_both_truth_values(specs):
    values = edge_values(specs["nnef_and"], "bool")
    assert values.dtype == np.bool_ and values.tolist() == [False, True]
