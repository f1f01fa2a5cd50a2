"""Spec -> Hypothesis strategies -> deterministic cases (and, for backends, models)."""
from conform.generators._families import FAMILIES, Signature, dtype_labels
from conform.generators._case import Case
from conform.generators._corpus import cache_dir, corpus_key
from conform.generators._suite import case_digest, draw_plans, generate_cases, materialize
from conform.generators._edges import (edge_case_cases, edge_sweep_case, exhaustive_case,
                                       exhaustive_cases)
from conform.generators._values import PLANS, edge_values, fill

__all__ = ["FAMILIES", "PLANS", "Case", "cache_dir", "corpus_key", "Signature", "case_digest", "draw_plans", "dtype_labels",
           "edge_case_cases", "edge_sweep_case", "edge_values", "exhaustive_case", "exhaustive_cases", "fill",
           "generate_cases", "materialize"]
