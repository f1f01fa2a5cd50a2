"""Injected bugs ("mutants") for measuring the judge: each wraps the built-in onnxruntime backend
through the public adapter API (:class:`conform.harness.backends.Wrapping`) and changes the
outputs it returns, or the inputs it forwards, only for its own ops and only under the condition
of its bug, as a real runtime bug would. ``bench/mutation_score.py`` runs each one on its ops
(``--backend bench.mutants:ClassName``) and counts it detected when some case fails, errors,
crashes or times out that a clean onnxruntime run of the same ops passes.

Each class says the bug class it models (``bug``) and what in the public record it resembles
(``resembles``: a search of the runtime's issue tracker, not a particular issue).

The mutants live by bug class in this package's modules (accuracy, rounding, indices, formulas,
boundaries, and graph for the graph-level ones, with the unmutated ``Clean`` adapter they are
measured against; base classes in :mod:`bench.mutants.base`). Each is importable from here,
``bench.mutants:Name``.
"""
from __future__ import annotations

from bench.mutants import accuracy, boundaries, formulas, graph, indices, rounding
from bench.mutants.base import JaxMutant, Mutant, NumpyMutant, OrtMutant
from bench.mutants.graph import Clean

_MODULES = (accuracy, rounding, indices, formulas, boundaries, graph)

#: Every mutant, in the order its module defines it
ALL = [cls for module in _MODULES for cls in vars(module).values()
       if isinstance(cls, type) and issubclass(cls, Mutant) and cls.__module__ == module.__name__
       and cls is not graph.GraphMutant]

globals().update({cls.__name__: cls for cls in ALL})
__all__ = ["ALL", "Clean", "JaxMutant", "Mutant", "NumpyMutant", "OrtMutant", *(cls.__name__ for cls in ALL)]
