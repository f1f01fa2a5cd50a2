"""The numpy backend computes every op with NumPy itself, in the target dtype, and never calls an
oracle: run in-process on generated cases of every op and dtype label with every oracle made to
raise (and every call of an oracle's code watched), each case is computed in its output dtypes
or unsupported with a reason."""
from __future__ import annotations

import re
import sys

import ml_dtypes
import numpy as np
import pytest

from conform.generators import dtype_labels, generate_cases
from conform.harness.backends.base import Unsupported
from conform.harness.backends.models import declared_inputs
from conform.harness.backends.numpy_backend import NumpyBackend
from conform.harness.backends.program import Program
from conform.ops import definitions
from conform.dtypes import np_dtype
from conform.spec.programs import chain_names


class OracleCalled(AssertionError):
    pass


def _labels(spec) -> list:
    """Every dtype label of an op with few; every 9th of one with many (conversions)."""
    labels = dtype_labels(spec)
    return labels if len(labels) <= 12 else labels[::9]


@pytest.fixture(scope="module")
def sample(specs, tmp_path_factory) -> list:
    """Two cases of each op and dtype label, and of four chains, drawn before any oracle is
    disabled (drawing may evaluate oracles: traced feeding)."""
    cases = []
    for spec in specs.values():
        for label in _labels(spec):
            cases += [(spec, case) for case in generate_cases(spec, label, count=2, seed=11)
                      if case.plan != "must_reject"]   # (tested in test_shape_edges.py)
    for fmt in ("xla", "onnx"):
        for name in chain_names(specs, fmt, count=2, seed=3):
            spec = specs[name]
            cases += [(spec, case) for case in generate_cases(spec, dtype_labels(spec)[0],
                                                              count=2, seed=11)]
    return cases


def _oracle_codes() -> set:
    """The code of every oracle and of the functions its closure holds (a wrapper such as
    XLA's broadcasting binary ops keeps the op's own oracle there)."""
    codes = set()
    for definition in definitions().values():
        fn = definition.oracle
        codes.add(fn.__code__)
        for cell in fn.__closure__ or ():
            inner = cell.cell_contents
            if callable(inner) and hasattr(inner, "__code__"):
                codes.add(inner.__code__)
    return codes


@pytest.fixture()
def oracles_disabled():
    """Every registered op's oracle raises, and a profiler fails any call of an oracle's code
    under another name. Yields the list of oracle calls seen."""
    codes, seen = _oracle_codes(), []
    originals = {name: d.oracle for name, d in definitions().items()}

    def raiser(name):
        def oracle(*args, **kwargs):
            seen.append(name)
            raise OracleCalled(f"the numpy backend called the oracle of {name}")
        return oracle

    def watch(frame, event, arg):
        if event == "call" and frame.f_code in codes:
            seen.append(frame.f_code.co_qualname)
            raise OracleCalled(f"the numpy backend called oracle code {frame.f_code.co_qualname}")

    for name, definition in definitions().items():
        object.__setattr__(definition, "oracle", raiser(name))
    sys.setprofile(watch)
    try:
        yield seen
    finally:
        sys.setprofile(None)
        for name, definition in definitions().items():
            object.__setattr__(definition, "oracle", originals[name])


def test_the_numpy_backend_never_calls_an_oracle(sample, oracles_disabled):
    backend = NumpyBackend()
    computed, unsupported, wrong = 0, 0, []
    for spec, case in sample:
        program = Program(spec, case)
        try:
            outputs = backend.run(program=program, inputs=declared_inputs(case))
        except Unsupported as exc:
            assert str(exc), f"{case.id}: unsupported without a reason"
            # an op whose binding says why NumPy cannot express it is not counted against it
            unsupported += "unsupported" not in spec.bindings.get("numpy", {})
            continue
        except OracleCalled:
            raise
        except Exception as exc:   # noqa: BLE001 - every other outcome is a finding
            wrong.append(f"{case.id}: raised {type(exc).__name__}: {exc}")
            continue
        dtypes = [np_dtype(d) for d in program.out_dtypes]
        got = [np.asarray(o).dtype for o in outputs]
        if got != dtypes:
            wrong.append(f"{case.id}: outputs in {got}, not {dtypes}")
        computed += 1
    assert oracles_disabled == [], f"oracle calls: {sorted(set(oracles_disabled))}"
    assert wrong == [], "\n".join(wrong[:20])
    assert computed > 4 * unsupported, (computed, unsupported)
    assert len({spec.op for spec, _ in sample}) >= 190


@pytest.fixture()
def add_oracle(specs):
    """XLA add's oracle as registered (a wrapper whose closure holds the op's own oracle)."""
    return specs["add"].definition.oracle


def test_a_disabled_oracle_is_noticed(specs, add_oracle, oracles_disabled):
    """The harness of the test above catches a backend that reaches an oracle, by its registry
    name or by its code under another name."""
    with pytest.raises(OracleCalled):
        specs["exp"].definition(np.float64([1.0]))
    raw = next(cell.cell_contents for cell in add_oracle.__closure__
               if getattr(cell.cell_contents, "__name__", "") == "oracle_add")
    with pytest.raises(OracleCalled):
        raw(np.float64([1.0]), np.float64([2.0]))
    assert oracles_disabled == ["exp", "oracle_add"]


def _run(specs, op, *arrays, **attrs):
    from conform.generators import Case

    spec = specs[op]
    dtype = arrays[0].dtype.name
    case = Case(id=f"{op}.{dtype}.t", op=op, dtype=dtype,
                input_dtypes=tuple(a.dtype.name for a in arrays), out_dtype=dtype,
                inputs=list(arrays), attrs=attrs, plan="normal", seed=0)
    return NumpyBackend().run(program=Program(spec, case), inputs=list(arrays))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, ml_dtypes.bfloat16])
def test_exp_is_computed_in_the_target_dtype(specs, dtype):
    x = np.linspace(-10, 10, 4001).astype(dtype)
    (got,) = _run(specs, "exp", x)
    assert got.dtype == np.dtype(dtype)
    assert np.array_equal(got, np.exp(x), equal_nan=True)
    # not the float64 value rounded: NumPy's own float32 kernel differs from it somewhere
    # (float16 and bfloat16 loops go through float32 and round once, so there they agree)
    if dtype is np.float32:
        assert not np.array_equal(got, np.exp(x.astype(np.float64)).astype(dtype))


def test_integer_ops_stay_in_the_integer_type(specs):
    big = np.int32([2**31 - 1, -2**31])
    (got,) = _run(specs, "add", big, np.int32([1, -1]))
    assert got.dtype == np.int32 and got.tolist() == [-2**31, 2**31 - 1]   # NumPy wraps


def test_every_op_declares_its_numpy_computation(specs):
    """A numpy hook in its op module, or a spec binding naming a NumPy function or why NumPy
    cannot express the op: no op is left to a silent default."""
    missing = [name for name, spec in specs.items()
               if spec.definition.numpy is None and "numpy" not in spec.bindings]
    assert missing == []


def test_every_numpy_binding_names_a_numpy_function(specs):
    from conform.ops.numpy_computation import numpy_function

    named = {spec.op: spec.bindings["numpy"]["fn"] for spec in specs.values()
             if "fn" in spec.bindings.get("numpy", {})}
    assert len(named) >= 100
    assert all(callable(numpy_function(fn)) for fn in named.values())
    with pytest.raises(ValueError, match=re.escape("numpy binding fn='no_such': NumPy has no")):
        numpy_function("no_such")


def test_a_result_in_another_type_is_unsupported_never_cast(specs):
    with pytest.raises(Unsupported, match=re.escape(
            "divide: NumPy computes output 0 in float64, not int32")):
        _run(specs, "divide", np.int32([7]), np.int32([2]))


def test_an_op_numpy_cannot_express_is_unsupported_with_its_reason(specs):
    with pytest.raises(Unsupported, match=re.escape("erf: NumPy has no error function")):
        _run(specs, "erf", np.float32([0.5]))
