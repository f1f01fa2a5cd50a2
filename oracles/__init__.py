"""float64 (or exact integer) reference implementations, one small pure function per op."""
from conform.oracles._registry import ORACLES, UnknownOracle, accumulation_length, evaluate, widen

__all__ = ["ORACLES", "UnknownOracle", "accumulation_length", "evaluate", "widen"]
