"""Spec -> Hypothesis strategies -> deterministic cases (and, for backends, models)."""
from conform.generators._signature import Signature, dtype_labels, fixed_attrs
from conform.generators._critical import critical_case
from conform.generators._case import Case, RemadeInputs
from conform.generators._corpus import cache_dir, corpus_key, prune_corpus
from conform.generators._suite import answer_digest, case_digest, fill_corpus, generate_cases, materialize
from conform.generators._edges import (EXHAUSTIVE_BITS, bit_range_case, bit_range_inputs, edge_case_cases, edge_sweep_case, exhaustive_case,
                                       exhaustive_cases)
from conform.generators._values import PLANS, edge_values, fill, value_range
from conform.generators._lattice import lattice_case, lattice_description, lattice_inputs, lattice_size

__all__ = ["EXHAUSTIVE_BITS", "PLANS", "Case", "RemadeInputs", "attribute_pair_coverage", "bit_range_case", "bit_range_inputs", "answer_digest", "cache_dir", "corpus_key", "Signature", "case_digest", "critical_case",
           "draw_plans", "dtype_labels", "fixed_attrs", "value_range",
           "edge_case_cases", "edge_sweep_case", "edge_values", "exhaustive_case", "exhaustive_cases", "fill", "fill_corpus",
           "generate_cases", "lattice_case", "lattice_description", "lattice_inputs", "lattice_size", "materialize", "prune_corpus"]


def __getattr__(name: str):
    """The Hypothesis side (``draw_plans``, ``attribute_pair_coverage``) loads on first use: a run from the corpus cache
    never needs it, and importing Hypothesis takes ~0.2 s."""
    if name in ("draw_plans", "attribute_pair_coverage"):
        from conform.generators import _drawing
        return getattr(_drawing, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
