"""ConvertElementType in the integer widths, the narrow floats and complex types outside the
pairwise thirteen (issue 36): the labels drawn per kind, the oracle by StableHLO convert's
rules, the regions where the text leaves a result open, narrowings judged in range, and jax."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from conform.dtypes import np_dtype
from conform.generators import dtype_labels, generate_cases
from conform.oracles import evaluate
from conform.oracles.expectations import expect
from conform.ops.selection import PAIRWISE


def _convert(values, source, target):
    (out,) = evaluate("convert_element_type", [np.array(values, np_dtype(source))],
                      {"new_dtype": target, "dtypes": (source,)})
    return out


def _open(spec, label, values):
    """The implementation-defined mask of ``label``'s first case with ``values`` as operand."""
    source = label.split("->")[0]
    case = generate_cases(spec, label, count=1, seed=0)[0]
    case = dataclasses.replace(case, inputs=[np.array(values, np_dtype(source))],
                               expectation=None)
    (answer,) = expect(spec, case)
    return [False] * len(values) if answer.impl_mask is None else answer.impl_mask.tolist()


def test_each_type_outside_the_pairwise_ones_converts_within_its_kind(specs):
    labels = dtype_labels(specs["convert_element_type"])
    assert len(labels) == len(set(labels)) <= 13 * 12 + 52   # the cost of the cold jax run
    for width in ("int2", "int8", "int16"):
        assert {f"{width}->int64", f"int64->{width}", f"{width}->float32",
                f"float32->{width}"} <= set(labels)
    assert {"uint8->uint64", "uint64->uint8", "uint64->uint32", "uint32->uint64"} <= set(labels)
    assert {"float32->float4_e2m1fn", "float8_e8m0fnu->float32", "complex128->complex64",
            "complex64->float32", "float64->complex128"} <= set(labels)
    sources = {label.split("->")[0] for label in labels}
    assert set(specs["convert_element_type"].dtypes) <= sources
    assert not [x for x in labels if x.startswith("int8->") and x.split("->")[1] in PAIRWISE
                and x != "int8->int64" and x != "int8->float32"]


def test_complex_conversions_by_stablehlo_converts_rules():
    """'complex-to-complex follow ... floating-point-to-floating-point conversions for ... real
    and imaginary parts'; to another type 'the source imaginary value is ignored', from one
    'the destination imaginary value is zeroed'."""
    z = _convert([complex(1 + 2.0 ** -30, -0.0), complex(np.inf, np.nan)], "complex128",
                 "complex64")
    assert z.dtype == np.complex128 and z[0] == complex(1 + 2.0 ** -30, 0.0)   # judge rounds
    assert np.signbit(z[0].imag) and np.isinf(z[1].real) and np.isnan(z[1].imag)
    assert _convert([complex(-3.5, 7)], "complex64", "float32").tolist() == [-3.5]
    real = _convert([-0.0, 2.5], "float64", "complex128")
    assert real.tolist() == [complex(-0.0, 0), complex(2.5, 0)] and np.signbit(real[0].real)


@pytest.mark.parametrize("label, values, open_elements", [
    ("int64->int8", [127, 128, -128, -129], [False, True, False, True]),
    ("uint64->uint32", [2**32 - 1, 2**32, 2**63 + 5], [False, True, True]),
    ("uint32->uint64", [2**32 - 1, 0], [False, False]),
    ("float32->uint2", [3.9, 4.0, -0.5, -1.0], [False, True, False, True]),
    ("float32->float4_e2m1fn", [2.5, 6.5, 7.0, np.nan], [False, False, True, True]),
    ("float32->float8_e8m0fnu", [0.3, 1.5, -1.0, 0.0], [False, True, True, True]),
    ("float32->float8_e4m3b11fnuz", [30.0, 31.0, 1e9], [False, False, False]),   # NaN: held
])
def test_conversions_the_text_leaves_open(specs, label, values, open_elements):
    """StableHLO convert: a value the destination cannot represent is 'TBD'; XLA rounds to
    nearest even where it can: 6.5 rounds to 6 in float4, 7 has no float4 value, E8M0 no
    negative, no zero and no tie 1.5 it could break."""
    assert _open(specs["convert_element_type"], label, values) == open_elements


def test_half_of_a_narrowing_is_drawn_in_range(specs):
    """in_range_half: a narrowing's operand brought into the target's range (modulo its size)
    in about half the elements, so that the conversion is judged and not only open."""
    spec = specs["convert_element_type"]
    for label in ("int64->int8", "float32->uint2", "uint64->uint8"):
        target = np_dtype(label.split("->")[1])
        cases = [c for c in generate_cases(spec, label, count=4, seed=3) if c.plan == "normal"]
        values = np.concatenate([c.inputs[0].astype(np.float64).ravel() for c in cases])
        low, high = (0, 4) if label.endswith("uint2") else (np.iinfo(target).min,
                                                             np.iinfo(target).max + 1)
        inside = (values >= low) & (values < high)
        assert 0.2 < inside.mean() < 1, label


def test_jax_converts_the_widths_and_a_wrong_narrowing_fails(specs, jax_backend):
    from tests.ops.xla_judging import jax_verdicts
    spec = specs["convert_element_type"]
    for label in ("int64->int8", "complex128->complex64", "float32->float4_e2m1fn"):
        verdicts = jax_verdicts(spec, jax_backend, label, 2)
        assert "pass" in verdicts and "fail" not in verdicts, label

    def one_more(outputs, case):
        return [np.where(outputs[0] < 127, outputs[0] + 1, outputs[0]).astype(outputs[0].dtype)]
    assert "fail" in jax_verdicts(spec, jax_backend, "float32->int8", 4, change=one_more)
