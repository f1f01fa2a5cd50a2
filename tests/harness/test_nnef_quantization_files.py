"""NNEF quantization files (conform.harness.backends.nnef_quantization_files): a file of every
quantization fragment of the standard library, written by conform, read back by the ``nnef``
package's own parser (a second opinion) as NNEF users ship it (``graph.quant`` beside
``graph.nnef``, through ``nnef.load_graph``) and by conform's reader, to the same entries."""
from __future__ import annotations

import numpy as np
import pytest

from conform.harness.backends.nnef_quantization_files import (format_quantization,
                                                              parse_quantization,
                                                              read_quantization,
                                                              write_quantization)

nnef = pytest.importorskip("nnef")

GRAPH = """version 1.0;

graph g( a ) -> ( d )
{
    a = external<scalar>(shape = [2]);
    b = copy(a);
    c = copy(b);
    d = copy(c);
}
"""
ENTRIES = {
    "a": ("linear_quantize", {"min": -1.5, "max": 2.25, "bits": 8}),
    "b": ("zero_point_linear_quantize", {"zero_point": 3, "scale": 0.5, "bits": 4,
                                         "signed": False, "symmetric": True}),
    "c": ("min_max_linear_quantize", {"min": -0.125, "max": 0.0, "bits": 16, "signed": True,
                                      "symmetric": False}),
    "d": ("logarithmic_quantize", {"max": 2.0**-10, "bits": 2}),
}


def test_the_nnef_package_reads_conform_s_file(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "graph.nnef").write_text(GRAPH, encoding="utf-8")
    write_quantization(folder / "graph.quant", ENTRIES)
    graph = nnef.load_graph(str(folder))
    for name, (fragment, arguments) in ENTRIES.items():
        read = dict(graph.tensors[name].quantization)
        assert read.pop("op-name") == fragment
        assert read.keys() == arguments.keys()
        for key, value in arguments.items():   # scalars come back float32: chosen exact there
            assert np.asarray(read[key]).item() == value, (name, key)
    assert read_quantization(folder / "graph.quant") == ENTRIES


def test_a_hand_written_file_with_comments_and_spacing():
    text = ("# activations\n'a' :linear_quantize( min=-1.5 , max = 2.25,bits = 8 ) ;\n\n"
            '"b": zero_point_linear_quantize(zero_point = 3, scale = 0.5, bits = 4, '
            "signed = false, symmetric = true);  # the filter\n")
    assert parse_quantization(text) == {name: ENTRIES[name] for name in "ab"}
    assert format_quantization(ENTRIES).count(";\n") == 4


@pytest.mark.parametrize("text, message", [
    ('"a": linear_quantize(min = -1.0, max = 1.0, bits = 8)', "not a quantization entry"),
    ('"a": linear_quantize(min -1.0);', "not a named argument"),
    ('"a": linear_quantize(min = x1);', "'x1' is not an NNEF literal"),
])
def test_what_is_not_an_entry_is_refused(text, message):
    with pytest.raises(ValueError, match=message):
        parse_quantization(text)


def _quantized_add(folder, entries: dict, body: str = "    out0 = add(in0, in1);"):
    """A graph adding two externals, ``entries`` its graph.quant; returns its folder."""
    folder.mkdir(exist_ok=True)
    (folder / "graph.nnef").write_text(
        "version 1.0;\n\ngraph g( in0, in1 ) -> ( out0 )\n{\n"
        "    in0 = external<scalar>(shape = [4]);\n    in1 = external<scalar>(shape = [4]);\n"
        f"{body}\n}}\n")
    write_quantization(folder / "graph.quant", entries)
    return folder


X = np.array([-2.0, -0.5, 0.3, 5.0], np.float32)
LINEAR = ("linear_quantize", {"min": -1.0, "max": 1.0, "bits": 8})


def test_the_executor_reads_a_quantization_and_computes_unquantized(tmp_path):
    """The nnef package (1.0.10) parses graph.quant into the tensor's ``quantization``, but its
    executor computes the float sum: the annotation does not quantize anything it runs (NNEF
    leaves using it to the consumer), so the quantize fragments are judged as invocations."""
    folder = _quantized_add(tmp_path / "q", {"out0": LINEAR})
    assert nnef.load_graph(str(folder)).tensors["out0"].quantization["op-name"] == \
        "linear_quantize"
    with nnef.Session(str(folder), lowered=[]) as session:
        (out,) = session(X, np.zeros(4, np.float32))
    assert out.tolist() == X.tolist()                  # 5.0, not clamped to max = 1.0


@pytest.mark.parametrize("entries, body, message", [
    ({"out0": LINEAR}, None, "Add does not support QI8"),
    ({"out0": ("logarithmic_quantize", {"max": 4.0, "bits": 8})}, None,
     "GraphQuantLoader"),
])
def test_tract_refuses_every_quantized_tensor_conform_can_write(tmp_path, entries, body,
                                                                 message):
    """tract 0.21.7 types a tensor that graph.quant names with linear_quantize or
    zero_point_linear_quantize as a quantized datum type (QI8: linear_quantize(-1, 1, 8) as
    zero point 0, scale 2/255), which its Add has no kernel for and which it cannot mix with
    a float tensor (``No super type for QI8(...) and F32`` for a quantized intermediate); its
    quant loader refuses logarithmic_quantize and min_max_linear_quantize entries (a parse
    error). A quantized external or result cannot cross its C API either
    (``Unsupported DatumType in the public API``). No quantize fragment runs on tract as an
    annotation."""
    tract = pytest.importorskip("tract")
    folder = _quantized_add(tmp_path / "q", entries, body or "    out0 = add(in0, in1);")
    with pytest.raises(Exception, match=message):
        model = tract.nnef().model_for_path(str(folder)).into_optimized().into_runnable()
        model.run([X, np.zeros(4, np.float32)])
