"""Does packing change a bit? The whole default jax corpus, packed and alone, compared.

The cases of ``conform run --backend jax`` (default budget and seed, drawn as the run draws them)
go through the jax backend twice: packed as a run packs them (each batch of 256 cases, in run
order, one compiled program: :mod:`conform.harness.backends.jax_packing`), and each case alone
through its own executable. Every output is compared bit for bit (dtype, shape and bytes); the
report gives, per op and dtype, the cases compared and those that differ, and the seconds each
way spent making executables.

    python bench/check_jax_packing.py [--batch 256] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path


def _same(a, b) -> bool:
    return len(a) == len(b) and all(x.dtype == y.dtype and x.shape == y.shape
                                    and x.tobytes() == y.tobytes() for x, y in zip(a, b))


def check(batch: int) -> dict:
    from conform.harness.backends.jax_backend import JaxBackend
    from conform.harness.backends.jax_packing import Slot, run_pack
    from conform.harness.backends.models import declared_inputs
    from conform.harness.backends.program import Program
    from conform.harness.run.runner import RunConfig, _generate
    from conform.spec import load_specs

    specs = load_specs()
    _, cases, *_ = _generate(RunConfig(backend="jax"), specs)
    cases = list(cases)
    backend = JaxBackend()
    cells: dict = {}
    packed_seconds = alone_seconds = 0.0
    for start in range(0, len(cases), batch):
        chunk = cases[start:start + batch]
        slots = [Slot(Program(specs[c.op], c), declared_inputs(c)) for c in chunk]
        began = time.perf_counter()
        run_pack(backend, slots)
        packed_seconds += time.perf_counter() - began
        for case, slot in zip(chunk, slots):
            cell = cells.setdefault(f"{case.op}.{case.dtype}", {"cases": 0, "differ": []})
            began = time.perf_counter()
            try:
                alone = backend.run(program=Program(specs[case.op], case), inputs=declared_inputs(case))
            except Exception as exc:   # alone it raises: packed, it must have raised too
                alone = exc
            alone_seconds += time.perf_counter() - began
            cell["cases"] += 1
            if isinstance(alone, Exception) or slot.error is not None:
                same = isinstance(alone, Exception) and slot.error is not None
            else:
                same = _same(alone, slot.outputs)
            if not same:
                cell["differ"].append(case.id)
    differing = {name: cell for name, cell in cells.items() if cell["differ"]}
    return {"cases": len(cases), "cells": len(cells), "batch": batch,
            "identical_cells": len(cells) - len(differing), "differing_cells": differing,
            "packed_cases": backend.stats()["packed_cases"],
            "packed_seconds": round(packed_seconds, 1), "alone_seconds": round(alone_seconds, 1),
            "per_cell": {name: cell["cases"] for name, cell in sorted(cells.items())}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="conform-packing-") as tmp:
        os.environ["CONFORM_CACHE_DIR"] = tmp   # both ways compile: no executable is loaded
        report = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), **check(args.batch)}
    out = args.out or Path(__file__).parent / "results" / f"{report['date'][:10]}-jax-packing.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"{report['cases']} cases in {report['cells']} op x dtype cells: "
          f"{report['identical_cells']} bit-identical, {len(report['differing_cells'])} differ "
          f"({', '.join(report['differing_cells']) or 'none'}); executables made in "
          f"{report['packed_seconds']} s packed, {report['alone_seconds']} s alone; wrote {out}")


if __name__ == "__main__":
    main()
