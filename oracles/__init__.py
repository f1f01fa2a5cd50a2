"""The oracles' contract (float64 or exact integer references, evaluated on widened inputs), the
expected answer of a case, implementation-defined regions and the elements feeding an output.
The oracle functions themselves are defined by the op modules (:mod:`conform.ops`)."""
from conform.oracles._registry import UnknownOracle, accumulation_length, evaluate, widen

__all__ = ["UnknownOracle", "accumulation_length", "evaluate", "widen"]
