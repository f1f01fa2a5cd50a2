"""onnxruntime takes and gives float8 and float8e8m0 (as OrtValues by their bits), int4/uint4
(packed two to a byte) and int2/uint2 (four to a byte): every encoding crosses both ways
unchanged."""
from __future__ import annotations

import numpy as np
import pytest

from conform.generators import Case
from conform.harness.backends.models import run_case
from conform.harness.backends.onnxruntime_backend import OnnxRuntimeBackend
from conform.dtypes import np_dtype

FLOAT8 = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"]


@pytest.fixture(scope="module")
def backend():
    return OnnxRuntimeBackend()


def convert(backend, spec, x, src, dst):
    # ONNX Cast; into float8 with saturate=0, so that infinities stay infinities in e5m2
    attrs = {"new_dtype": dst, **({"saturate": 0} if dst in FLOAT8 else {})}
    case = Case(id=f"t.{src}->{dst}", op=spec.op, dtype=f"{src}->{dst}", input_dtypes=(src,),
                out_dtype=dst, inputs=[x], attrs=attrs, plan="special", seed=0)
    (out,) = run_case(backend, spec, case)
    assert out.dtype == np_dtype(dst) and out.shape == x.shape
    return out


@pytest.mark.parametrize("name", FLOAT8)
def test_every_float8_encoding_crosses_both_ways(backend, specs, name):
    spec = specs["onnx_cast"]
    codes = np.arange(256, dtype=np.uint16).astype(np.uint8)
    x = codes.view(np_dtype(name)).reshape(16, 16)
    wide = convert(backend, spec, x, name, "float32")
    assert np.array_equal(wide, x.astype(np.float32), equal_nan=True)
    back = convert(backend, spec, wide, "float32", name)   # exact: each value is representable
    numbers = ~np.isnan(wide)
    assert np.array_equal(back.view(np.uint8)[numbers], x.view(np.uint8)[numbers])
    assert np.isnan(back.astype(np.float32)[~numbers]).all()


@pytest.mark.parametrize("name, values", [("int4", range(-8, 8)), ("uint4", range(16))])
@pytest.mark.parametrize("shape", [(16,), (3, 5), ()])
def test_four_bit_integers_pack_and_unpack(backend, specs, name, values, shape):
    spec = specs["onnx_cast"]
    x = np.resize(np.array(list(values), np.int64), shape).astype(np_dtype(name))
    wide = convert(backend, spec, x, name, "int32")   # odd sizes too: a half-filled last byte
    assert np.array_equal(wide, x.astype(np.int32))
    back = convert(backend, spec, wide, "int32", name)
    assert np.array_equal(back.astype(np.int64), x.astype(np.int64))


@pytest.mark.parametrize("name, values", [("int2", range(-2, 2)), ("uint2", range(4))])
@pytest.mark.parametrize("shape", [(16,), (3, 5), (7,), ()])
def test_two_bit_integers_pack_four_to_a_byte(backend, specs, name, values, shape, monkeypatch):
    monkeypatch.setenv("CONFORM_ONNX_OPSET", "25")   # int2 and uint2: opset 25+
    spec = specs["onnx_cast"]
    x = np.resize(np.array(list(values), np.int64), shape).astype(np_dtype(name))
    wide = convert(backend, spec, x, name, "int32")   # sizes leaving the last byte part-filled
    assert np.array_equal(wide, x.astype(np.int32))
    back = convert(backend, spec, wide, "int32", name)
    assert np.array_equal(back.astype(np.int64), x.astype(np.int64))


def test_every_e8m0_encoding_crosses_both_ways(backend, specs, monkeypatch):
    monkeypatch.setenv("CONFORM_ONNX_OPSET", "25")   # float8e8m0: opset 24+
    spec = specs["onnx_cast"]
    x = np.arange(256, dtype=np.uint16).astype(np.uint8).view(np_dtype("float8_e8m0fnu"))
    wide = convert(backend, spec, x.reshape(16, 16), "float8_e8m0fnu", "float32")
    assert np.array_equal(wide.ravel(), x.astype(np.float32), equal_nan=True)
    back = convert(backend, spec, wide, "float32", "float8_e8m0fnu")   # powers of two: exact
    assert np.array_equal(back.view(np.uint8).ravel(), x.view(np.uint8))
