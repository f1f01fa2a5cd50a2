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
