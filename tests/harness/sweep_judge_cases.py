"""Chunks whose summaries pin the sweep judge's figures (tests/harness/test_sweep_judge.py):
ranges of float32 patterns with zeros, subnormals, infinities and NaNs, judged under ``ulp``,
``correctly_rounded`` and ``ftz``, on outputs of NumPy's own functions with some elements moved
away (a few ULPs, a NaN, a zero's sign) so that every figure of a summary has something to say.

``python -m tests.harness.sweep_judge_cases`` writes the summaries the judge gives now to
:data:`PINNED` (done once, by the judge before it was made faster)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from conform.generators import bit_range_case
from conform.harness.run.sweep_chunk import ChunkTask, chunk_summary

PINNED = Path(__file__).parent / "data" / "sweep_judge_summaries.json"

#: (op, NumPy's function, first, stop, subnormal policy)
CHUNKS = [("tanh", np.tanh, 0x3F000000, 0x3F003000, "ieee"),
          ("tanh", np.tanh, 0x7F7FF000, 0x7F801400, "ieee"),
          ("tanh", np.tanh, 0x807FF000, 0x80801000, "ftz"),
          ("exp", np.exp, 0x42AFF000, 0x42B1F000, "ieee"),
          ("sqrt", np.sqrt, 0x00000000, 0x00001400, "ieee"),
          ("sqrt", np.sqrt, 0xBF7FF800, 0xBF800800, "ftz"),
          ("exp", np.exp, 0x3F800000, 0x3F801000, "ieee")]   # (the last: no NaN, a numeric worst)


def moved(x: np.ndarray, function, nan: bool = True) -> np.ndarray:
    """``function(x)`` (evaluated in float64: the same on every CPU) in float32 with every 97th result 3 ULPs up, every 389th NaN (with ``nan``) and every
    zero at an index that is a multiple of 5 of the other sign."""
    with np.errstate(all="ignore"):
        out = function(x.astype(np.float64)).astype(np.float32)
    bits = out.view(np.uint32).copy()
    index = np.arange(out.size)
    finite = np.isfinite(out) & (out != 0)
    bits[(index % 97 == 0) & finite] += 3
    bits[(index % 389 == 0) & nan] = 0x7FC00000
    bits[(index % 5 == 0) & (out == 0)] ^= 0x80000000
    return bits.view(np.float32)


def summaries(specs) -> list:
    """The ``result`` of each chunk of :data:`CHUNKS`."""
    found = []
    for k, (op, function, first, stop, policy) in enumerate(CHUNKS):
        spec = specs[op]
        case = bit_range_case(spec, "float32", first, stop)
        task = ChunkTask(op, "float32", "numpy", "pinned", first, stop, "pinned", policy)
        found.append(chunk_summary(spec, case, [moved(case.inputs[0], function, nan=k < 6)], task)["result"])
    return json.loads(json.dumps(found))


if __name__ == "__main__":
    from conform.spec import load_specs

    PINNED.write_text(json.dumps(summaries(load_specs(None))) + "\n")
