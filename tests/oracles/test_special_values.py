"""Special values from the standard's tables (ops/special_values.py and each spec's
``special_values``): every row of every table is reached and applied through the oracle path,
rows are checked against the library's own answers (only the known NumPy quirk differs), the
table fixes that quirk, and malformed rows are rejected when a spec loads."""
from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import numpy as np
import pytest

from conform.ops.special_values import apply_table, matcher, output_value
from conform.oracles import evaluate
from conform.oracles.expectations import oracle_of
from conform.spec import SpecError, load_spec, load_specs

SPECS = load_specs()
TABLES = {op: spec for op, spec in SPECS.items() if spec.special_values}
#: Values tried for every matcher: each special value, both zero signs, integers odd and even,
#: non-integers, |x| below and above 1, subnormal and huge.
POOL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0,
                 1.5, -1.5, 5e-324, -5e-324, 1e308, -1e308, 0.25, -7.0])


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


def _grid(spec, row):
    """Per input, the pool values its matcher in ``row`` accepts, as the columns of every
    combination (at most 8 values per input)."""
    columns = [POOL[matcher(token)(POOL)][:8] for token in row["inputs"]]
    assert all(c.size for c in columns), f"{spec.op}: row {row} matches no value of the pool"
    return [np.array(c) for c in zip(*itertools.product(*columns))]


def _first_row(spec, values):
    for row in spec.special_values:
        if all(bool(matcher(t)(np.array(v))) for t, v in zip(row["inputs"], values)):
            return row
    return None


def _want(row, values) -> float:
    """The value ``row`` gives for the inputs ``values``."""
    token = row["output"]
    if isinstance(token, str) and token.startswith("=in"):
        return float(values[int(token[3:])])
    return output_value(token)[0]


def test_every_elementwise_math_op_has_a_table():
    wanted = {"ceil", "floor", "round", "round_nearest_even", "remainder", "onnx_mod_fmod", "sign","exp", "log", "log2", "log1p", "expm1", "sin", "cos", "tan", "atan", "asin", "acos",
              "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "cbrt", "erf", "rsqrt",
              "logistic", "softplus", "elu", "atan2", "power", "onnx_pow", "nnef_pow"}
    assert wanted <= set(TABLES), sorted(wanted - set(TABLES))
    for op, spec in TABLES.items():
        for row in spec.special_values:
            assert re.search(r"C11|IEEE 754|ONNX|NNEF|XLA|DLMF", row["source"]), (op, row)


@pytest.mark.parametrize("op", sorted(TABLES))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_every_row_is_reached_and_applied(op, dtype):
    spec = TABLES[op]
    run = oracle_of(spec)
    for k, row in enumerate(spec.special_values):
        columns = [c.astype(dtype) for c in _grid(spec, row)]   # (subnormals flush in float32)
        (out,) = run(columns, {})
        firsts = [_first_row(spec, values) for values in zip(*columns)]
        assert dtype != "float64" or any(first is row for first in firsts), \
            f"{op}: row {k} {row} is shadowed by earlier rows"
        for values, first, got in zip(zip(*columns), firsts, out.tolist()):
            if first is None and dtype == "float32":   # the cast left every row's domain
                continue                                # (a finite 1e300 is inf in float32)
            want = _want(first, values)
            if dtype == "float32" and math.isfinite(want):
                want = float(np.float32(want))
                got = float(np.float32(got))
            assert _same(got, want), (f"{op}{values}: oracle gives {got!r}, the table row "
                                      f"{first} says {want!r}")


#: The rows where NumPy's own answer differs from the standard's, with the operands' shapes:
#: np.power with a 0-d exponent 0.5 takes a sqrt fast path (pow(-0, 0.5) = -0 and
#: pow(-inf, 0.5) = NaN, where C11 F.10.4.4 gives +0 and +inf).
KNOWN_QUIRKS = {("power", -0.0, 0.5), ("power", -np.inf, 0.5), ("onnx_pow", -0.0, 0.5),
                ("onnx_pow", -np.inf, 0.5), ("nnef_pow", -0.0, 0.5), ("nnef_pow", -np.inf, 0.5)}


#: Where the fast paths of the CHLO functions' oracles (SciPy's functions in float64) differ
#: from the tables, which the oracle applies over them (the judged answer is the table's):
#: SciPy's i1e and erfinv lose the sign of -0 (both functions are odd), its gammaln(-inf) is
#: -inf (C11 F.10.5.3: lgamma(-inf) = +inf), and its zeta ignores a NaN beside an infinity or 1.
CORRECTED_BY_TABLES = {("bessel_i1e", -0.0), ("erf_inv", -0.0), ("lgamma", -np.inf),
                       ("zeta", np.nan, np.inf), ("zeta", np.inf, np.nan), ("zeta", 1.0, np.nan)}


def test_the_library_agrees_with_the_tables_on_arrays():
    differ = []
    for op, spec in TABLES.items():
        for row in spec.special_values:
            columns = _grid(spec, row)
            (raw,) = evaluate(op, columns, {})
            for values, got in zip(zip(*columns), raw.tolist()):
                want = _want(_first_row(spec, values), values)
                if not _same(got, want):
                    differ.append((op, *values))
    key = lambda item: repr(tuple(float(v) for v in item[1:])) + item[0]   # NaN == NaN
    assert sorted(map(key, differ)) == sorted(map(key, CORRECTED_BY_TABLES))


@pytest.mark.parametrize("op", ["power", "onnx_pow", "nnef_pow"])
def test_the_table_fixes_numpys_scalar_power_fast_path(op):
    for base, exponent in [(-0.0, 0.5), (-np.inf, 0.5)]:
        assert (op, base, exponent) in KNOWN_QUIRKS
        operands = [np.array(base), np.array(exponent)]           # 0-d: NumPy's scalar path
        (raw,) = evaluate(op, operands, {})
        (fixed,) = oracle_of(SPECS[op])(operands, {})
        want = 0.0 if base == 0 else np.inf
        assert not _same(float(raw), want), f"NumPy's {op}({base}, 0.5) is now {float(raw)}"
        assert _same(float(fixed), want)
        # an array base with the 0-d exponent (ONNX / NNEF broadcasting) takes the same path
        if op != "power":
            (fixed,) = oracle_of(SPECS[op])([np.full(9, base), np.array(exponent)], {})
            assert all(_same(v, want) for v in fixed.tolist())


def test_a_table_value_keeps_a_residual_for_float64():
    (hi,), (lo,) = oracle_of(SPECS["atan2"])([np.array([np.inf]), np.array([-np.inf])], {},
                                             refined=True)
    with np.errstate(all="ignore"):
        import mpmath
        with mpmath.workdps(60):
            exact = 3 * mpmath.pi / 4
            assert abs(mpmath.mpf(float(hi[0])) + mpmath.mpf(float(lo[0])) - exact) < 2.0 ** -100


def test_apply_table_broadcasts_inputs_by_the_shape_relation():
    rows = [{"inputs": ["-0", 0.5], "output": "+0", "source": "C11 F.10.4.4"}]
    base = np.array([-0.0, 1.0])       # NNEF: leading dimensions aligned, base[i] feeds row i
    out = apply_table(rows, [base, np.full((2, 3), 0.5)], np.full((2, 3), -0.0),
                      shapes="nnef_broadcast")
    assert np.signbit(out[1]).all() and not np.signbit(out[0]).any()


# --- malformed tables ---------------------------------------------------------------------------

@pytest.mark.parametrize("row, message", [
    ('{inputs: ["wat"], output: "nan", source: "C11 F.10.3.1"}', "input matcher 'wat' is unknown"),
    ('{inputs: [0], output: 1, source: "C11 F.10.3.1"}', "must be written with its sign"),
    ('{inputs: ["nan", "nan"], output: "nan", source: "C11 F.10.3.1"}', "has 2 matchers"),
    ('{inputs: ["nan"], output: "tau", source: "C11 F.10.3.1"}', "output 'tau'"),
    ('{inputs: ["nan"], output: "=in1", source: "C11 F.10.3.1"}', "names input 1"),
])
def test_a_malformed_row_is_rejected_when_the_spec_loads(tmp_path, row, message):
    text = Path(SPECS["exp"].path).read_text(encoding="utf-8")
    text = text.replace("special_values:\n", f"special_values:\n  - {row}\n", 1)
    path = tmp_path / "exp.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError, match=re.escape(message)) as info:
        load_spec(path)
    assert "special_values.0" in str(info.value)
