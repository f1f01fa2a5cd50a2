"""NNEF debox, argmax_pool, sample, desample, max_pool_with_index and rms_pool: the oracles on
hand-worked examples of the fragments' definitions (debox and desample as the adjoints of box and
sample: <box(u), v> = <u, debox(v)>), the regions, numpy, and the nnef executor, whose deviations
are pinned here with their repro commands."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conform.generators import Case
from conform.model_formats import Refused
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from backend_verdicts import verdicts

WINDOW_OPS = ["nnef_debox", "nnef_rms_pool", "nnef_argmax_pool", "nnef_sample", "nnef_desample",
              "nnef_max_pool_with_index"]


def run(name, *inputs, **attrs):
    return evaluate(name, [np.asarray(x) for x in inputs], attrs)


def geometry(size, padding, stride=None, dilation=None, border="constant"):
    rank = len(size)
    return dict(size=size, border=border, padding=padding, stride=stride or [1] * rank,
                dilation=dilation or [1] * rank)


def test_debox_spreads_each_element_over_its_window():
    x = np.array([1.0, 2.0])
    (out,) = run("nnef_debox", x, **geometry([2], [[0, 0]]), output_shape=[], normalize=False)
    assert out.tolist() == [1.0, 3.0, 2.0]
    (out,) = run("nnef_debox", x, **geometry([2], [[0, 0]]), output_shape=[], normalize=True)
    assert out.tolist() == [0.5, 1.5, 1.0]
    # stride 2, padding (1, 0): window o reads 2o - 1 and 2o; output (2 - 1) * 2 + 2 - 1 = 3
    (out,) = run("nnef_debox", x, **geometry([2], [[1, 0]], [2]), output_shape=[],
                 normalize=False)
    assert out.tolist() == [1.0, 2.0, 2.0]
    (out,) = run("nnef_debox", x, **geometry([2], [[1, 0]], [2]), output_shape=[5],
                 normalize=False)
    assert out.tolist() == [1.0, 2.0, 2.0, 0.0, 0.0]


@pytest.mark.parametrize("seed", range(4))
def test_debox_and_desample_are_the_adjoints_of_box_and_sample(seed):
    rng = np.random.default_rng(seed)
    rank = 1 + seed % 3
    shape = tuple(int(n) for n in rng.integers(5, 8, rank))   # every window fits
    attrs = geometry([int(k) for k in rng.integers(1, 4, rank)],
                     [[int(a), int(b)] for a, b in rng.integers(0, 3, (rank, 2))],
                     [int(s) for s in rng.integers(1, 3, rank)],
                     [int(d) for d in rng.integers(1, 3, rank)])
    u = rng.standard_normal(shape)
    (boxed,) = run("nnef_box", u, **attrs, normalize=False)
    v = rng.standard_normal(boxed.shape)
    (unboxed,) = run("nnef_debox", v, **attrs, output_shape=list(shape), normalize=False)
    assert math.isclose(np.sum(boxed * v), np.sum(u * unboxed), rel_tol=1e-12, abs_tol=1e-12)
    index = rng.integers(0, math.prod(attrs["size"]), boxed.shape)
    (sampled,) = run("nnef_sample", u, index, **attrs)
    (desampled,) = run("nnef_desample", v, index, **attrs, output_shape=list(shape))
    assert math.isclose(np.sum(sampled * v), np.sum(u * desampled), rel_tol=1e-12,
                        abs_tol=1e-12)


def test_argmax_pool_names_the_tap_row_major_over_size():
    x = np.array([[1.0, 5.0, 2.0], [7.0, 3.0, 4.0]])
    attrs = geometry([2, 2], [[0, 0], [0, 0]])
    (index,) = run("nnef_argmax_pool", x, **attrs)
    assert index.tolist() == [[2, 0]]             # 7 at tap (1, 0) of [[1, 5], [7, 3]]
    output, same = run("nnef_max_pool_with_index", x, **attrs)
    assert output.tolist() == [[7.0, 5.0]] and same.tolist() == [[2, 0]]
    (sampled,) = run("nnef_sample", x, index, **attrs)
    assert sampled.tolist() == [[7.0, 5.0]]


def test_a_padded_zero_is_a_maximum_under_constant_and_nothing_under_ignore():
    x = np.array([-3.0, -1.0])
    (index,) = run("nnef_argmax_pool", x, **geometry([2], [[1, 0]]))
    assert index.tolist() == [0, 1]               # the padded 0 beats -3
    (index,) = run("nnef_argmax_pool", x, **geometry([2], [[1, 0]], border="ignore"))
    assert index.tolist() == [1, 1]
    (out,) = run("nnef_sample", x, np.array([0, 0]), **geometry([2], [[1, 0]]))
    assert out.tolist() == [0.0, -3.0]


def _moving(name, x, attrs, i):
    """The elements of ``x`` whose change to +-1e9 moves out[i]."""
    (base,) = run(name, x, **attrs)
    moved = set()
    for j in range(x.size):
        for extreme in (1e9, -1e9):
            changed = x.copy()
            changed.flat[j] = extreme
            if run(name, changed, **attrs)[0][i] != base[i]:
                moved.add(float(x.flat[j]))
    return moved


@pytest.mark.parametrize("border", ["ignore", "constant"])
def test_argmax_pool_is_fed_by_the_input_elements_of_its_window(border):
    """The tap of the maximum compares every input element of its window (padding left out), and
    each moves it, but for a window of one input element under 'ignore': it is that tap whatever
    the element is (why the feeding test leaves argmax_pool out)."""
    from conform.oracles.feeding import feeding_elements

    x = np.arange(1.0, 7.0)   # windows read o - 2 and o: the first two hold padding
    attrs = geometry([2], [[2, 0]], dilation=[2], border=border)
    fed = [set(feeding_elements("nnef_argmax_pool", [x], attrs, [i])[0].tolist())
           for i in range(6)]
    assert fed == [{1.0}, {2.0}, {1.0, 3.0}, {2.0, 4.0}, {3.0, 5.0}, {4.0, 6.0}]
    alone = [set(), set()] if border == "ignore" else fed[:2]   # a padded 0 beats -1e9
    assert [_moving("nnef_argmax_pool", x, attrs, i) for i in range(6)] == alone + fed[2:]


def test_sample_and_desample_are_fed_by_the_taps_their_indices_name():
    """sample reads one element (none on a padded tap); desample sums the elements whose index
    names the output's position, not every window covering it; the indices are no terms."""
    from conform.oracles.feeding import feeding_elements

    x, index = np.array([1.0, 2.0, 3.0]), np.array([0, 1, 0])
    attrs = geometry([2], [[1, 0]])   # window o reads o - 1 and o
    fed = [feeding_elements("nnef_sample", [x, index], attrs, [i]) for i in range(3)]
    assert [f[0].tolist() for f in fed] == [[], [2.0], [2.0]] and fed[0][1] is None
    (out,) = run("nnef_desample", x, index, **attrs, output_shape=[])
    assert out.tolist() == [0.0, 5.0, 0.0]   # window 0's tap 0 is padding
    fed = [feeding_elements("nnef_desample", [x, index], {**attrs, "output_shape": []}, [i])
           for i in range(3)]
    assert [f[0].tolist() for f in fed] == [[], [2.0, 3.0], []] and fed[1][1] is None


def test_rms_pool_is_the_root_of_the_mean_square():
    (out,) = run("nnef_rms_pool", np.array([3.0, 4.0, 0.0]), **geometry([2], [[0, 0]]))
    assert out.tolist() == [math.sqrt(12.5), math.sqrt(8.0)]
    (out,) = run("nnef_rms_pool", np.array([3.0, 4.0]), **geometry([2], [[1, 0]],
                                                                   border="ignore"))
    assert out.tolist() == [3.0, math.sqrt(12.5)]


def _case(op, inputs, attrs, dtype="float32"):
    inputs = [np.asarray(x) for x in inputs]
    return Case(id=f"{op}.{dtype}.hand", op=op, dtype=dtype,
                input_dtypes=tuple(x.dtype.name for x in inputs), out_dtype=dtype,
                inputs=inputs, attrs=attrs, plan="hand", seed=0)


def test_the_regions_cover_ties_and_nothing_else(specs):
    from conform.ops.nnef_windows import window_maximum_not_unique
    from conform.ops.regions import RegionContext

    x = np.array([2.0, 2.0, 1.0, np.nan, 0.5], np.float32)
    attrs = geometry([2], [[0, 0]])
    ctx = RegionContext(inputs=[x], expected=np.zeros(4), out_dtype="int32",
                        float_oracle=None, attrs=attrs)
    assert window_maximum_not_unique(ctx).tolist() == [True, False, True, True]


def test_a_wrong_tap_and_a_tie_in_the_judge(specs):
    spec = specs["nnef_argmax_pool"]
    x = np.array([1.0, 5.0, 2.0, 2.0], np.float32)
    case = _case("nnef_argmax_pool", [x], geometry([2], [[0, 0]]))
    right = np.array([1, 0, 0], np.int32)
    judged = judge_outputs(spec, case, [right])   # the last is a tie: open
    assert (judged.verdict, judged.impl_defined, judged.checked) == ("pass", 1, 2)
    assert judge_outputs(spec, case, [np.array([0, 0, 1], np.int32)]).verdict == "fail"


@pytest.mark.parametrize("name", WINDOW_OPS)
def test_numpy_passes(specs, name):
    from conform.harness.backends.numpy_backend import NumpyBackend

    found = verdicts(specs[name], NumpyBackend(), "float32", count=8, seed=3)
    assert found <= {"pass", "impl_defined"} and "pass" in found


# -- the nnef executor ---------------------------------------------------------------------------

def _run(backend, spec, case):
    from conform.harness.backends.models import run_case

    return run_case(backend, spec, case)


def test_the_executor_passes_rms_pool_lowered_and_debox_unnormalized(specs, nnef_backend):
    x = np.random.default_rng(0).uniform(-10, 10, (2, 3, 5)).astype(np.float32)
    attrs = geometry([1, 2, 3], [[0, 0], [1, 0], [2, 1]], [1, 2, 1], [1, 1, 2])
    spec = specs["nnef_rms_pool"]
    case = _case("nnef_rms_pool", [x], attrs)
    assert judge_outputs(spec, case, _run(nnef_backend, spec, case)).verdict == "pass"
    spec = specs["nnef_debox"]
    case = _case("nnef_debox", [x], {**attrs, "output_shape": [], "normalize": False})
    assert judge_outputs(spec, case, _run(nnef_backend, spec, case)).verdict == "pass"


def test_the_executor_does_not_normalize_debox(specs, nnef_backend):
    """A deviation of the nnef package's executor (1.0.10, runtime/execution.h
    make_pool_executor): for a transposed pool it divides its *input* view (the debox input)
    by the window's size after pooling, so debox(normalize = true) returns the plain sum.
    Repro: conform run --backend nnef --ops nnef_debox --out /tmp/d &&
    conform repro nnef_debox.float32.4 --from /tmp/d"""
    spec = specs["nnef_debox"]
    x = np.array([[1.0, 1.0]], np.float32)
    case = _case("nnef_debox", [x], {**geometry([1, 2], [[0, 0], [0, 0]]),
                                     "output_shape": [], "normalize": True})
    (out,) = _run(nnef_backend, spec, case)
    assert out.tolist() == [[1.0, 2.0, 1.0]]          # the text: [[0.5, 1.0, 0.5]]
    assert judge_outputs(spec, case, [out]).verdict == "fail"


def test_the_nnef_parser_refuses_sample_with_an_index_of_the_windows_shape(specs,
                                                                             nnef_backend):
    """The nnef package's shape check for sample (shapes.h sample_like_shape) demands index
    shaped like input, which its own max_pool_with_index body contradicts (argmax_pool's index
    has the windows' shape): a valid document is refused.
    Repro: conform run --backend nnef --ops nnef_sample,nnef_max_pool_with_index --out /tmp/s
    && conform repro nnef_sample.float32.4 --from /tmp/s (and nnef_max_pool_with_index.float32.0,
    whose body samples argmax_pool's index)"""
    spec = specs["nnef_sample"]
    x = np.array([1.0, 5.0, 2.0], np.float32)
    case = _case("nnef_sample", [x, np.array([1, 0], np.int32)], geometry([2], [[0, 0]]))
    with pytest.raises(Refused, match="index shape incompatible with input shape"):
        _run(nnef_backend, spec, case)
