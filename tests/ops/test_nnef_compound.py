"""NNEF rsqr, clamp, add_n and copy_n: the oracles on hand-worked examples of the fragments'
bodies, numpy, and the nnef executor, whose deviations (a wrong rsqr kernel, two crashes) are
pinned here with their repro commands."""
from __future__ import annotations

import signal
import subprocess
import sys

import numpy as np
import pytest

from conform.generators import Case
from conform.harness.judge.judging import judge_outputs
from conform.oracles._registry import evaluate
from backend_verdicts import verdicts

OPS = ["nnef_rsqr", "nnef_clamp", "nnef_add_n", "nnef_copy_n"]


def run(name, *inputs, **attrs):
    return evaluate(name, [np.asarray(x) for x in inputs], attrs)


def test_rsqr_is_x_to_the_minus_two():
    (out,) = run("nnef_rsqr", np.array([2.0, -0.5, 0.0, -0.0, np.inf, -np.inf, np.nan]))
    assert out[:6].tolist() == [0.25, 4.0, np.inf, np.inf, 0.0, 0.0] and np.isnan(out[6])
    assert not np.signbit(out[4:6]).any()


def test_clamp_gives_the_lower_bound_where_the_bounds_cross():
    x = np.array([[-5.0, 0.0, 5.0], [1.0, 2.0, 3.0]])
    a, b = np.array([[-1.0], [2.5]]), np.array([[1.0], [1.5]])   # row 1: a > b
    (out,) = run("nnef_clamp", x, a, b)
    assert out.tolist() == [[-1.0, 0.0, 1.0], [2.5, 2.5, 2.5]]
    (xla,) = run("clamp", np.full((3,), 2.5), np.full((3,), 2.0), np.full((3,), 1.5))
    assert xla.tolist() == [1.5] * 3                             # XLA's Clamp: the upper one


def test_add_n_and_copy_n():
    (total,) = run("nnef_add_n", [1e16, 2.0], [1.0, 3.0], [-1e16, 4.0])
    assert total.tolist() == [1.0, 9.0]
    copies = run("nnef_copy_n", np.array([1.0, -0.0]), times=3)
    assert len(copies) == 3 and all(np.signbit(c[1]) for c in copies)


def _case(op, inputs, attrs=None):
    inputs = [np.asarray(x) for x in inputs]
    dtype = inputs[0].dtype.name
    return Case(id=f"{op}.{dtype}.hand", op=op, dtype=dtype,
                input_dtypes=tuple(x.dtype.name for x in inputs), out_dtype=dtype,
                inputs=inputs, attrs=attrs or {}, plan="hand", seed=0)


@pytest.mark.parametrize("name", OPS)
def test_numpy_passes(specs, name):
    from conform.harness.backends.numpy_backend import NumpyBackend

    found = verdicts(specs[name], NumpyBackend(), "float16", count=8, seed=5)
    assert found <= {"pass", "impl_defined"} and "pass" in found


# -- the nnef executor ---------------------------------------------------------------------------

def test_the_executor_rsqr_kernel_overflows_the_square(specs):
    """A deviation of the nnef package's executor (1.0.10, runtime/execution.h): its rsqr
    kernel is ``1.f / (x * x)``, not the body's x ^ -2.0: x * x overflows for |x| above
    1.8e19, so results down to the subnormals (|x| < 2.7e22) come out 0.
    Repro: conform run --backend nnef --ops nnef_rsqr --out /tmp/r &&
    conform repro nnef_rsqr.float32.7 --from /tmp/r"""
    from conform.harness.backends.models import run_case
    from conform.harness.backends.nnef_backend import NnefBackend

    spec = specs["nnef_rsqr"]
    case = _case("nnef_rsqr", [np.array([2.0, 1e20], np.float32)])
    (out,) = run_case(NnefBackend(), spec, case)
    assert out.tolist() == [0.25, 0.0]                 # x ^ -2.0: 1e-40, a subnormal
    assert judge_outputs(spec, case, [out]).verdict == "fail"


_CLAMP_EMPTY = """version 1.0;
graph g( in0, in1, in2 ) -> ( out0 )
{
    in0 = external<scalar>(shape = [2, 0, 4]);
    in1 = external<scalar>(shape = [2, 0]);
    in2 = external<scalar>(shape = [2, 1]);
    out0 = clamp(in0, in1, in2);
}
"""
_COPY_N_LOGICAL = """version 1.0;
graph g( in0 ) -> ( out0, out1, out2 )
{
    in0 = external<logical>(shape = [3, 6, 5]);
    [ out0, out1, out2 ] = copy_n<logical>(in0, times = 3);
}
"""


@pytest.mark.parametrize("document, op, feeds, signal_number", [
    (_CLAMP_EMPTY, "clamp", "[np.zeros((2, 0, 4), 'f4'), np.zeros((2, 0), 'f4'), "
                            "np.zeros((2, 1), 'f4')]", signal.SIGFPE),
    (_COPY_N_LOGICAL, "copy_n", "[np.zeros((3, 6, 5), bool)]", signal.SIGABRT),
])
def test_the_executor_crashes(tmp_path, document, op, feeds, signal_number):
    """Crashes of the nnef package's executor (1.0.10) on valid documents: clamp, lowered to
    min and max, dies of SIGFPE broadcasting an empty tensor (as the binary kernels do); copy_n
    on a logical tensor, lowered to copy, whose kernel is the float one, writes 4 bytes per
    1-byte element and corrupts the heap (SIGABRT).
    Repro: conform run --backend nnef --ops nnef_clamp,nnef_copy_n --out /tmp/c &&
    conform repro nnef_clamp.float32.0 --from /tmp/c (and nnef_copy_n.bool.8)"""
    path = tmp_path / "graph.nnef"
    path.write_text(document)
    script = (f"import nnef, numpy as np; s = nnef.Session({str(path)!r}, lowered=[{op!r}]); "
              f"s(*{feeds})")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert proc.returncode == -signal_number
