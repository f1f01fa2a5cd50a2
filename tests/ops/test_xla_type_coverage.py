"""Every (op, element type) pair the XLA text allows is drawn on XLA (issue 36 item 7), but for the
exceptions below, each with its reason.

The table is conform.ops.xla_types (each XLA-bound spec's operand class in StableHLO's
docs/spec.md, or ChloOps.td for the CHLO ops); the comparison is bench/xla_type_coverage.py's: the
types a run on an XLA backend draws (the spec's labels that ``xla_allows`` keeps) against those
the table allows. No backend runs. A pair jax refuses is still drawn: it is reported
``unsupported`` there (bench/xla_type_coverage.py --results gives the counts).
"""
from __future__ import annotations

import dataclasses
import importlib.machinery
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

NARROW_FLOATS = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                 "float8_e8m0fnu", "float4_e2m1fn", "float8_e4m3", "float8_e3m4",
                 "float8_e4m3b11fnuz", "float6_e2m3fn", "float6_e3m2fn")
#: the float types without infinities and NaN (OCP MX's FP4 and FP6 element formats)
NO_SPECIALS = ("float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")
COMPLEX = ("complex64", "complex128")
NARROW_INTS = ("int2", "int4", "uint2", "uint4")

#: (ops, types, reason): the allowed pairs not drawn. ``"*"`` is every op.
EXCEPTIONS = [
    (("negate", "abs", "sign"), ("float8_e8m0fnu",),
     "float8_e8m0fnu has no sign bit and no zero: -x, sign's -1 and 0 do not exist in it, and "
     "the text gives no rule"),
    (("bessel_i1e",), COMPLEX,
     "CHLO's bessel_i1e says only 'Returns bessel_i1e(operand)': for a complex operand the "
     "scaling e**-|x| (the modulus, or the real part as in DLMF 10.25's I_nu?) is not given, "
     "so there is no value to judge; jax refuses complex too"),
    (("fft",), ("float32", "float64"),
     "drawn, under another label: RFFT's float32 and float64 operands are cases of the "
     "complex64 and complex128 labels (the spec's label is the transform's complex type)"),
    (("bitcast_convert_type",), ("bool",) + COMPLEX + NO_SPECIALS + NARROW_INTS,
     "StableHLO leaves the representation of booleans and of complex numbers (which part "
     "first) implementation-defined, and a 2-, 4- or 6-bit type's bits are no whole bytes: the "
     "text's width ratio and the order of packed elements are not given for them"),
]


@pytest.fixture(scope="module")
def coverage():
    """bench/xla_type_coverage.py (a script, not a package module) and its comparison."""
    loader = importlib.machinery.SourceFileLoader(
        "xla_type_coverage", str(ROOT / "bench" / "xla_type_coverage.py"))
    module = types.ModuleType(loader.name)
    loader.exec_module(module)
    return module, module.coverage()


def test_every_type_the_text_allows_is_drawn_on_xla(coverage):
    module, found = coverage
    reasons = {pair: {k for k, (ops, kinds, _) in enumerate(EXCEPTIONS)
                      if pair[1] in kinds and (ops == "*" or pair[0] in ops)}
               for pair in module.misses(found)}
    unexcused = sorted(pair for pair, why in reasons.items() if not why)
    assert not unexcused, f"{len(unexcused)} allowed (op, type) pairs not drawn on XLA, " \
                          f"e.g. {unexcused[:10]}"
    used = set().union(*reasons.values())
    stale = [EXCEPTIONS[k][:2] for k in range(len(EXCEPTIONS)) if k not in used]
    assert not stale, f"exceptions that excuse nothing (remove them): {stale}"
    totals = module.totals(found)
    assert totals["ops"] >= 130 and 1300 <= totals["pairs_drawn"] <= totals["pairs"]


def test_the_comparison_sees_a_missing_type(coverage, monkeypatch):
    """The measurement can fail: a spec that stops drawing a type its text allows shows it."""
    module, _ = coverage
    from conform.spec import load_specs

    spec = load_specs()["add"]
    narrowed = dataclasses.replace(spec, dtypes=tuple(d for d in spec.dtypes if d != "uint16"))
    monkeypatch.setattr(module, "load_specs", lambda: {"add": narrowed})
    missed = module.misses(module.coverage({"add"}))
    assert ("add", "uint16") in missed and ("add", "uint8") not in missed


def test_a_run_on_xla_draws_what_the_table_allows_only():
    """The xla filter of a run keeps a type another format forbids (uint16 Abs is ONNX's, not
    XLA's: jax never sees it) and drops what XLA forbids."""
    from conform.harness.run.runner import by_format
    from conform.spec import load_specs

    specs = load_specs()
    pairs = [(specs["abs"], "uint16"), (specs["abs"], "int4"), (specs["add"], "bool"),
             (specs["subtract"], "bool"), (specs["eq"], "uint64")]
    kept = [(spec.op, label) for spec, label in by_format(pairs, "jax", "xla")]
    assert kept == [("abs", "int4"), ("add", "bool"), ("eq", "uint64")]
