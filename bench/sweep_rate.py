"""The rate of ``conform sweep`` against its stages measured alone, in one run.

    python bench/sweep_rate.py [--backend onnxruntime] [--op tanh] [--range 3f000000:40000000]
                               [--chunk 4194304] [--no-ray] [--out FILE]

On the same float32 bit range, in this order: the backend alone (the chunks' cases run on a
:class:`~conform.harness.run.isolation.WorkerPool` of one worker, as a sweep's slot runs them:
inputs sent, outputs back), the oracle alone (``expect`` on the same cases, in this process),
then the sweep itself on the local executor (2 slots), and on a local Ray instance with 1 and
with 2 tasks in flight. Rates are judged inputs per second over the wall time of the stage or
sweep once started (the sweep's: from its first finished chunk to its last, scaled by the
chunks in between, so that the start-up of slots and Ray workers is reported apart). The issue's
target: the local sweep at least half the rate of the slower of the two stages. The figures go
to ``bench/results/sweep-rate-<date>.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def stage_rates(backend: str, op: str, first: int, stop: int, chunk: int) -> dict:
    """Inputs per second of the backend alone (in a worker, as a sweep runs it) and of the
    oracle alone, on the chunks of the range."""
    from conform.generators import bit_range_case
    from conform.harness.run.isolation import WorkerPool
    from conform.oracles.expectations import expect
    from conform.spec import load_specs

    spec = load_specs(None)[op]
    cases = [bit_range_case(spec, "float32", lo, min(lo + chunk, stop))
             for lo in range(first, stop, chunk)]
    with WorkerPool(backend, workers=1, timeout=600) as pool:
        start = time.perf_counter()
        for case in cases:
            (_, outcome), = list(pool.run([case]))
            assert outcome.kind == "ok", outcome.message
        backend_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for case in cases:
        expect(spec, case)
    oracle_seconds = time.perf_counter() - start
    inputs = stop - first
    return {"backend": inputs / backend_seconds, "oracle": inputs / oracle_seconds}


def sweep_rate(backend: str, op: str, first: int, stop: int, chunk: int, *, executor: str,
               workers: int) -> dict:
    """The sweep's wall time and its rate once running (see the module's docstring)."""
    from conform.harness.run.sweep import SweepConfig, run_sweep
    from conform.spec import load_specs

    stamps = []
    with tempfile.TemporaryDirectory() as out:
        config = SweepConfig(backend, (op,), first=first, stop=stop, chunk=chunk,
                             executor=executor, workers=workers, out=Path(out))
        start = time.perf_counter()
        summary = run_sweep(config, load_specs(None),
                            on_done=lambda *_: stamps.append(time.perf_counter()))
        wall = time.perf_counter() - start
    entry, = summary["accuracy_map"]
    steady = (len(stamps) - 1) * chunk / (stamps[-1] - stamps[0]) if len(stamps) > 1 else None
    return {"executor": executor, "workers": workers, "wall_seconds": wall,
            "rate_overall": (stop - first) / wall, "rate_running": steady,
            "checked": entry["checked"], "tier": entry["tier"]}


def main() -> None:
    """Measure and print the figures; write them under bench/results/."""
    from conform.harness.cli.values import bit_range

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="onnxruntime")
    parser.add_argument("--op", default="tanh")
    parser.add_argument("--range", type=bit_range, default=(0x3F000000, 0x3F000000 + (1 << 25)))
    parser.add_argument("--chunk", type=int, default=1 << 22)
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray sweeps")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    first, stop = args.range
    figures = {"backend": args.backend, "op": args.op, "range": [hex(first), hex(stop)],
               "chunk": args.chunk, "cores": os.cpu_count(), "load_average": os.getloadavg(),
               "stages": stage_rates(args.backend, args.op, first, stop, args.chunk)}
    runs = [("local", 2)] + ([] if args.no_ray else [("ray", 1), ("ray", 2)])
    figures["sweeps"] = [sweep_rate(args.backend, args.op, first, stop, args.chunk,
                                    executor=executor, workers=workers)
                         for executor, workers in runs]
    slower = min(figures["stages"].values())
    local = figures["sweeps"][0]
    figures["target"] = {"slower_stage": slower, "half_of_it": slower / 2,
                         "local_running": local["rate_running"],
                         "met": (local["rate_running"] or 0) >= slower / 2}
    text = json.dumps(figures, indent=2)
    print(text)
    out = args.out or ROOT / "bench" / "results" / \
        f"sweep-rate-{datetime.now(timezone.utc):%Y-%m-%d-%H%M}.json"
    out.write_text(text + "\n")


if __name__ == "__main__":
    main()
