"""XLA Gather and Scatter with general dimension numbers: the oracles on the text's worked
examples, against a literal element-by-element reading of the text's formal index arithmetic,
the drawn dimension numbers and start indices, and the judge catching injected bugs run through
the real jax backend."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from conform.generators import Case
from conform.generators._suite import generate_cases
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from conform.oracles.expectations import expect


def run(name, *inputs, **attrs):
    (out,) = evaluate(name, [np.asarray(x) for x in inputs], attrs)
    return out


def gather_attrs(offset_dims, collapsed, start_map, vector_dim, sizes):
    return {"offset_dims": offset_dims, "collapsed_slice_dims": collapsed,
            "start_index_map": start_map, "index_vector_dim": vector_dim, "slice_sizes": sizes,
            "indices_are_sorted": False}


# -- Gather: the text's worked examples -------------------------------------------------------

def test_gather_batched_dynamic_slices_example():
    """[16, 11] operand, five [8, 6] slices at (X, Y) start vectors: out[G, O0, O1] =
    operand[X + O0, Y + O1]."""
    operand = np.arange(16 * 11.0).reshape(16, 11)
    starts = np.array([[0, 0], [8, 5], [3, 2], [1, 4], [7, 0]], np.int64)
    out = run("gather", operand, starts, **gather_attrs([1, 2], [], [0, 1], 1, [8, 6]))
    assert out.shape == (5, 8, 6)
    for g, (x, y) in enumerate(starts):
        assert np.array_equal(out[g], operand[x:x + 8, y:y + 6])


def test_gather_multidimensional_indices_example():
    """A [4, 5, 2] index array: G0, G1 are batch dimensions of the same batched slice."""
    operand = np.arange(16 * 11.0).reshape(16, 11)
    starts = np.random.default_rng(0).integers(0, 4, size=(4, 5, 2))
    out = run("gather", operand, starts, **gather_attrs([2, 3], [], [0, 1], 2, [8, 6]))
    assert out.shape == (4, 5, 8, 6)
    assert np.array_equal(out[3, 2], operand[starts[3, 2, 0]:][:8, starts[3, 2, 1]:][:, :6])


def test_gather_nd_example():
    """tf.gather_nd: start vectors of one element X, slice_sizes [1, 11] with dimension 0
    collapsed: out[G0, G1, O0] = operand[GatherIndices[G0, G1, 0], O0]."""
    operand = np.arange(16 * 11.0).reshape(16, 11)
    starts = np.array([[[3], [15]], [[0], [7]]], np.int32)
    out = run("gather", operand, starts, **gather_attrs([2], [0], [0], 2, [1, 11]))
    assert out.shape == (2, 2, 11)
    assert np.array_equal(out, operand[starts[..., 0]])


def test_gather_starts_are_clamped_as_dynamic_slice_clamps_them():
    operand = np.arange(12.0).reshape(4, 3)
    attrs = gather_attrs([1], [0], [0, 1], 1, [1, 2])
    top = np.iinfo(np.int32).max
    starts = np.array([[1, -5], [2, 7], [3, top]], np.int32)
    assert run("gather", operand, starts, **attrs).tolist() == [[3, 4], [7, 8], [10, 11]]


def test_gather_implicit_trailing_index_dimension_and_take():
    operand = np.arange(24).reshape(2, 3, 4)
    indices = np.array([[2, 0], [1, 1]], np.int64)
    attrs = gather_attrs([0, 3], [1], [1], 2, [2, 1, 4])   # jnp.take(operand, indices, axis=1)
    assert np.array_equal(run("gather", operand, indices, **attrs),
                          np.take(operand, indices, axis=1))


# -- Gather: against the text's arithmetic, one output index at a time ------------------------

def literal_gather(operand, indices, attrs):
    """The text's formal part, one output index Out at a time (steps 1 to 4)."""
    offset_dims, collapsed = attrs["offset_dims"], attrs["collapsed_slice_dims"]
    start_map, vector_dim, sizes = (attrs["start_index_map"], attrs["index_vector_dim"],
                                    attrs["slice_sizes"])
    if vector_dim == indices.ndim:
        indices = indices[..., None]
    batch_shape = [s for d, s in enumerate(indices.shape) if d != vector_dim]
    kept = [d for d in range(operand.ndim) if d not in collapsed]
    rank = len(batch_shape) + len(offset_dims)
    batch_dims = [d for d in range(rank) if d not in offset_dims]
    shape = [0] * rank
    for k, d in enumerate(batch_dims):
        shape[d] = batch_shape[k]
    for k, d in enumerate(offset_dims):
        shape[d] = sizes[kept[k]]
    out = np.zeros(shape, operand.dtype)
    for position in itertools.product(*map(range, shape)):
        g = [position[d] for d in batch_dims]
        s = [int(indices[tuple(g[:vector_dim] + [i] + g[vector_dim:])])
             for i in range(indices.shape[vector_dim])]
        s_in = [0] * operand.ndim
        for k, d in enumerate(start_map):
            s_in[d] = min(max(s[k], 0), operand.shape[d] - sizes[d])
        o_in = [0] * operand.ndim
        for k, d in enumerate(offset_dims):
            o_in[kept[k]] = position[d]
        out[position] = operand[tuple(a + b for a, b in zip(s_in, o_in))]
    return out


def test_gather_oracle_matches_the_texts_arithmetic_on_drawn_cases(specs):
    templates = set()
    for case in generate_cases(specs["gather"], "int32", count=150, seed=3, answer=expect):
        operand, indices = case.inputs
        expected = literal_gather(operand, indices, case.attrs)
        assert np.array_equal(run("gather", *case.inputs, **case.attrs), expected), case.id
        templates.add((len(case.attrs["start_index_map"]), len(case.attrs["collapsed_slice_dims"]),
                       case.attrs["index_vector_dim"] == indices.ndim))
    assert len(templates) >= 4


def test_gather_drawn_starts_need_the_clamp_but_never_in_dimension_zero(specs):
    clamped, types = 0, set()
    for case in generate_cases(specs["gather"], "float32", count=120, seed=5, answer=expect):
        operand, indices = case.inputs
        types.add(str(indices.dtype))
        attrs = case.attrs
        vectors = indices[..., None] if attrs["index_vector_dim"] == indices.ndim else \
            np.moveaxis(indices, attrs["index_vector_dim"], -1)
        for k, d in enumerate(attrs["start_index_map"]):
            top = operand.shape[d] - attrs["slice_sizes"][d]
            outside = (vectors[..., k] < 0) | (vectors[..., k] > top)
            assert d > 0 or not outside.any(), case.id
            clamped += int(outside.sum())
    assert clamped and types == {"int32", "int64"}


@pytest.mark.parametrize("name", ["gather", "scatter", "scatter_add"])
def test_indices_are_sorted_only_where_they_are(specs, name):
    """Drawn true only with one-element index vectors, which then ascend over the batch."""
    drawn = 0
    for case in generate_cases(specs[name], "int32", count=120, seed=6, answer=expect):
        indices = case.inputs[1]
        if case.attrs["indices_are_sorted"]:
            vector_dim = case.attrs["index_vector_dim"]
            assert vector_dim == indices.ndim or indices.shape[vector_dim] == 1, case.id
            flat = indices.ravel()   # a one-element vector dimension does not change the order
            assert np.all(flat[:-1] <= flat[1:]), case.id
            drawn += 1
    assert drawn


# -- Gather: the judge catches injected bugs on jax --------------------------------------------

@pytest.fixture(scope="module")
def jax_backend():
    from conform.harness.backends.jax_backend import JaxBackend

    return JaxBackend()


def test_judge_catches_gather_reading_negative_starts_from_the_end_on_jax(specs, jax_backend):
    """A kernel counting a negative start from the end (NumPy's reading) instead of clamping
    it to 0 fails; the true lowering passes."""
    from conform.harness.backends.models import run_case

    spec = specs["gather"]
    caught = 0
    for case in generate_cases(spec, "int32", count=60, seed=8, answer=expect):
        good = judge_outputs(spec, case, run_case(jax_backend, spec, case))
        assert good.verdict == "pass", good.message
        operand, indices = case.inputs
        attrs = case.attrs
        moved = indices[..., None] if attrs["index_vector_dim"] == indices.ndim else \
            np.moveaxis(indices, attrs["index_vector_dim"], -1)
        dims = np.array([operand.shape[d] for d in attrs["start_index_map"]])
        wrapped = np.where((moved < 0) & (moved >= -dims), moved + dims, moved).astype(indices.dtype)
        wrapped = wrapped[..., 0] if attrs["index_vector_dim"] == indices.ndim else \
            np.moveaxis(wrapped, -1, attrs["index_vector_dim"])
        buggy = Case(**{**case.__dict__, "inputs": [operand, wrapped]})
        buggy.expectation = None
        outputs = run_case(jax_backend, spec, buggy)
        if not np.array_equal(outputs[0], run("gather", *case.inputs, **attrs)):
            assert judge_outputs(spec, case, outputs).verdict == "fail"
            caught += 1
    assert caught


# -- Scatter -----------------------------------------------------------------------------------

SCATTERS = ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"]
COMBINE = {"scatter": lambda a, b: b, "scatter_add": lambda a, b: a + b,
           "scatter_mul": lambda a, b: a * b, "scatter_min": np.minimum, "scatter_max": np.maximum}


def scatter_attrs(window, inserted, to_operand, vector_dim, unique=False):
    return {"update_window_dims": window, "inserted_window_dims": inserted,
            "scatter_dims_to_operand_dims": to_operand, "index_vector_dim": vector_dim,
            "unique_indices": unique, "indices_are_sorted": False}


def update_index(operand_shape, indices, update_shape, attrs, u):
    """The text's steps 1 to 4 for one update index U: the operand index I."""
    window, inserted = attrs["update_window_dims"], attrs["inserted_window_dims"]
    vector_dim = attrs["index_vector_dim"]
    if vector_dim == indices.ndim:
        indices = indices[..., None]
    g = [u[d] for d in range(len(update_shape)) if d not in window]
    s = [int(indices[tuple(g[:vector_dim] + [i] + g[vector_dim:])])
         for i in range(indices.shape[vector_dim])]
    s_in = [0] * len(operand_shape)
    for k, d in enumerate(attrs["scatter_dims_to_operand_dims"]):
        s_in[d] = s[k]
    w_in = [0] * len(operand_shape)
    for k, d in enumerate(d for d in range(len(operand_shape)) if d not in inserted):
        w_in[d] = u[window[k]]
    return tuple(a + b for a, b in zip(s_in, w_in))


@np.errstate(all="ignore")
def literal_scatter(name, operand, indices, updates, attrs):
    """The text, one update index at a time in row-major order, skipping an update whose index
    is not valid for the output; exact (int64 or float64) arithmetic."""
    out = operand.astype(np.float64 if operand.dtype.kind == "f" else np.int64)
    for u in itertools.product(*map(range, updates.shape)):
        i = update_index(operand.shape, indices, updates.shape, attrs, u)
        if all(0 <= x < n for x, n in zip(i, operand.shape)):
            out[i] = COMBINE[name](out[i], updates[u].item())
    return out


def test_scatter_add_of_rows_and_skipped_updates():
    """The inverse of the tf.gather_nd example: rows added at X, a row at X = 4 (outside a
    4-row operand) skipped, a repeated X added twice."""
    operand = np.zeros((4, 3), np.int32)
    indices = np.array([[1], [4], [1], [-1]], np.int64)
    updates = np.arange(12, dtype=np.int32).reshape(4, 3)
    out = run("scatter_add", operand, indices, updates, **scatter_attrs([1], [0], [0], 1))
    assert out.tolist() == [[0, 0, 0], [6, 8, 10], [0, 0, 0], [0, 0, 0]]


def test_scatter_skips_out_of_range_update_elements_one_by_one():
    """A [2, 2] window at (2, -1) of a [3, 3] operand: only its element (2, 0) is in range."""
    operand = np.zeros((3, 3))
    updates = np.array([[[1.0, 2.0], [3.0, 4.0]]])
    out = run("scatter", operand, np.array([[2, -1]], np.int32), updates,
              **scatter_attrs([1, 2], [], [0, 1], 1))
    assert out.tolist() == [[0, 0, 0], [0, 0, 0], [2.0, 0, 0]]


@pytest.mark.parametrize("name", SCATTERS)
def test_scatter_oracles_match_the_text_one_update_at_a_time(specs, name):
    for dtype in ("int32", "float32"):
        for case in generate_cases(specs[name], dtype, count=60, seed=11, answer=expect):
            expected = literal_scatter(name, *case.inputs, case.attrs)
            got = run(name, *case.inputs, **case.attrs)
            assert np.array_equal(got, expected, equal_nan=dtype == "float32"), case.id


@pytest.mark.parametrize("name", SCATTERS)
def test_scatter_targets_repeat_only_where_order_free(specs, name):
    from conform.ops.xla_scatter import repeats_allowed, update_targets

    for dtype in ("int32", "float32"):
        repeated = outside = 0
        for case in generate_cases(specs[name], dtype, count=80, seed=2, answer=expect):
            operand, indices, updates = case.inputs
            valid, flat = update_targets(operand.shape, indices, updates.shape, case.attrs)
            outside += int((~valid).sum())
            if np.unique(flat).size < flat.size:
                assert repeats_allowed(name, dtype) and not case.attrs["unique_indices"], case.id
                repeated += 1
        assert outside
        assert bool(repeated) == repeats_allowed(name, dtype)


def test_judge_catches_scatter_clamping_out_of_range_indices_on_jax(specs, jax_backend):
    """A kernel clamping out-of-range start indices into the operand (as Gather does, and
    jax's CLIP mode) instead of skipping the updates fails; the true lowering passes where
    every window is wholly inside or outside."""
    from conform.harness.backends.models import run_case
    from conform.ops.xla_gather import full_starts, index_vectors

    spec = specs["scatter"]
    caught = 0
    for case in generate_cases(spec, "float32", count=60, seed=8, answer=expect):
        good = judge_outputs(spec, case, run_case(jax_backend, spec, case))
        assert good.verdict == "pass", good.message
        operand, indices, updates = case.inputs
        attrs = case.attrs
        vectors = index_vectors(indices, attrs["index_vector_dim"])
        to_operand = attrs["scatter_dims_to_operand_dims"]
        sizes = [1] * operand.ndim
        kept = [d for d in range(operand.ndim) if d not in attrs["inserted_window_dims"]]
        for k, d in enumerate(kept):
            sizes[d] = updates.shape[attrs["update_window_dims"][k]]
        clamped = full_starts(vectors, to_operand, operand.shape, sizes)[..., to_operand]
        clamped = clamped.astype(indices.dtype)
        clamped = clamped[..., 0] if attrs["index_vector_dim"] == indices.ndim else \
            np.moveaxis(clamped, -1, attrs["index_vector_dim"])
        buggy = Case(**{**case.__dict__, "inputs": [operand, clamped, updates]})
        buggy.expectation = None
        outputs = run_case(jax_backend, spec, buggy)
        if not np.array_equal(outputs[0], run("scatter", *case.inputs, **attrs), equal_nan=True):
            assert judge_outputs(spec, case, outputs).verdict == "fail"
            caught += 1
    assert caught


def test_jax_drops_a_partly_outside_window_whole_where_the_text_skips_elements(specs,
                                                                                jax_backend):
    """A known deviation, kept failing: XLA (jax CPU) discards a whole update window when any
    of its elements falls outside the operand; the text skips only those elements."""
    from conform.harness.backends.models import run_case

    spec = specs["scatter_add"]
    operand = np.zeros((3, 3), np.int32)
    case = Case(id="scatter_add.int32.partial", op="scatter_add", dtype="int32",
                input_dtypes=("int32", "int32", "int32"), out_dtype="int32",
                inputs=[operand, np.array([[2, -1]], np.int32), np.ones((1, 2, 2), np.int32)],
                attrs=scatter_attrs([1, 2], [], [0, 1], 1), plan="normal", seed=0)
    outputs = run_case(jax_backend, spec, case)
    assert outputs[0].tolist() == operand.tolist()   # the whole window dropped
    assert judge_outputs(spec, case, outputs).verdict == "fail"


def test_bool_and_complex_update_computations_are_stablehlos():
    """On bool, + and max are OR and * and min AND (StableHLO add, maximum, multiply,
    minimum); complex max and min are lexicographic, and an element meeting a NaN part is
    marked open."""
    from conform.ops.xla_scatter import oracle_scatter_max

    indices, attrs = np.array([[0], [1], [1]], np.int64), scatter_attrs([], [0], [0], 1)
    operand, updates = np.array([False, True, False]), np.array([True, False, True])
    expected = {"scatter_add": [True, True, False], "scatter_max": [True, True, False],
                "scatter_mul": [False, False, False], "scatter_min": [False, False, False]}
    for name, want in expected.items():
        out = run(name, operand, indices[:2], updates[:2], **attrs)
        assert out.dtype == np.bool_ and out.tolist() == want, name
    operand = np.array([1 + 5j, 2 - 3j, 0j])
    updates = np.array([2 - 9j, 2 - 1j, complex(0, np.nan)])
    assert run("scatter_max", operand, indices[:2], updates[:2], **attrs).tolist() == \
        [2 - 9j, 2 - 1j, 0j]
    assert run("scatter_min", operand[:2], indices[:2], updates[:2], **attrs).tolist() == \
        [1 + 5j, 2 - 3j]
    (held,) = oracle_scatter_max(operand, indices, updates, open_elements=True, **attrs)
    assert held.tolist() == [False, True, False]


def test_complex_scatter_mul_is_judged_by_the_complex_product_bound(specs):
    """An updated element within multiply's sqrt(5) u |x| |y| passes; one off by 1e-5 of
    itself (about 80 float32 ULPs) fails; so does a copied element (no slack)."""
    spec = specs["scatter_mul"]
    operand = np.array([1.5 - 2j, 0.25 + 3j, -7 + 1j], np.complex64)
    indices, updates = np.array([[0], [2]], np.int64), np.array([3 + 0.5j, -2 - 2j], np.complex64)
    case = Case(id="scatter_mul.complex64.0", op="scatter_mul", dtype="complex64",
                input_dtypes=("complex64", "int64", "complex64"), out_dtype="complex64",
                inputs=[operand, indices, updates], attrs=scatter_attrs([], [0], [0], 1),
                plan="normal", seed=1)
    case.expectation = expect(spec, case)
    right = (operand * np.array([3 + 0.5j, 1, -2 - 2j])).astype(np.complex64)
    assert judge_outputs(spec, case, [right]).verdict == "pass"
    for at in (0, 1):   # updated, copied
        wrong = right.copy()
        wrong[at] *= np.complex64(1 + 1e-5)
        assert judge_outputs(spec, case, [wrong]).verdict == "fail", at
