"""Issue 33's validity and reach, over a sample of 1,000 generated graphs per format
(bench/graph_validity.py's survey, seed 0): every model drawn is valid in its format (both of
each graph: leaves as outputs, every value an output), and the graphs reach at least 80% of the
format's bound ops."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_BENCH = Path(__file__).resolve().parents[2] / "bench" / "graph_validity.py"
_spec = importlib.util.spec_from_file_location("graph_validity", _BENCH)
graph_validity = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(graph_validity)


@pytest.mark.slow
@pytest.mark.parametrize("backend", sorted(graph_validity.CHECKS))
def test_a_thousand_graphs_are_valid_models_and_reach_the_formats_ops(specs, backend):
    figures = graph_validity.survey(backend, specs, graphs=1000, seed=0)
    assert figures["invalid"] == [], figures["invalid"][:3]
    assert figures["coverage"] >= 0.8, (figures["coverage"], figures["not_reached"])
