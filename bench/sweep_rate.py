"""The rate of ``conform sweep`` against its stages measured alone, in one run.

    python bench/sweep_rate.py [--backend onnxruntime] [--op tanh] [--chunks 32]
                               [--chunk 4194304] [--range LO:HI] [--no-ray] [--one-slot] [--label L]
                               [--out FILE]

On the same float32 bit range (``--chunks`` chunks of ``--chunk`` inputs from 0x3f000000, or
``--range``), in this order: the backend alone (the chunks' cases run on a
:class:`~conform.harness.run.isolation.WorkerPool` of one worker, as a sweep's slot runs them:
inputs sent, outputs back), the oracle alone (``expect`` on the same cases, in this process),
then the sweep itself on the local executor (2 slots), on a local Ray cluster of one node
(started as ``ray start`` does) with 1, then 2 CPUs (as many tasks in flight), and
(``--one-slot``) on the local executor with 1 slot. Every chunk
counts, the first included, in every figure (a slot's first chunk costs several warm ones:
its memory is faulted in; a real sweep pays that once per slot, over some 1,024 chunks of a
float32 sweep, which is why the default range is long, and ``rate_second_half`` shows the rate
a longer sweep tends to). The stages' rates leave out the start of their one worker and the
backend's load; a sweep's ``rate_sweeping`` likewise leaves out ``startup_seconds`` (starting
slots or Ray workers and loading the backend, once per sweep), ``rate_overall`` includes it.
The issue's target: the local sweep's ``rate_sweeping`` at least half the rate of the slower
of the two stages. ``scaling``: the Ray sweep's ``rate_sweeping`` on 2 CPUs over that on 1. The
figures go to ``bench/results/sweep-rate-<date>.json``.
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
               workers: int, address: str | None = None) -> dict:
    """The sweep's wall time, its start-up and its rates (see the module's docstring)."""
    from conform.harness.run import sweep
    from conform.spec import load_specs

    stamps, ready = [], []
    made = sweep.make_executor

    class Timed:   # (the executor as the sweep makes it, the moment it is ready noted)
        def __init__(self, *args):
            self.executor = made(*args)

        def __enter__(self):
            entered = self.executor.__enter__()
            ready.append(time.perf_counter())
            return entered

        def __exit__(self, *exc):
            return self.executor.__exit__(*exc)

    with tempfile.TemporaryDirectory() as out:
        config = sweep.SweepConfig(backend, (op,), first=first, stop=stop, chunk=chunk,
                                   executor=executor, address=address, workers=workers,
                                   out=Path(out))
        sweep.make_executor = Timed
        try:
            start = time.perf_counter()
            summary = sweep.run_sweep(config, load_specs(None),
                                      on_done=lambda *_: stamps.append(time.perf_counter()))
            wall = time.perf_counter() - start
        finally:
            sweep.make_executor = made
    entry, = summary["accuracy_map"]
    half = len(stamps) // 2
    return {"executor": executor, "workers": workers, "chunks": len(stamps),
            "wall_seconds": wall, "startup_seconds": ready[0] - start,
            "first_chunk_seconds": stamps[0] - ready[0],
            "rate_overall": (stop - first) / wall,
            "rate_sweeping": (stop - first) / (stamps[-1] - ready[0]),
            "rate_second_half": (len(stamps) - half) * chunk / (stamps[-1] - stamps[half - 1]),
            "checked": entry["checked"], "tier": entry["tier"]}


def ray_sweeps(backend: str, op: str, first: int, stop: int, chunk: int) -> list:
    """The sweep on a local Ray cluster of one node with 1, then 2 CPUs (as many tasks)."""
    from tests.harness.ray_cluster import local_cluster

    runs = []
    for cpus in (1, 2):
        with local_cluster(cpus=(cpus,)) as cluster:
            runs.append(sweep_rate(backend, op, first, stop, chunk, executor="ray",
                                   workers=cpus, address=cluster.address))
    return runs


def main() -> None:
    """Measure and print the figures; write them under bench/results/."""
    from conform.harness.cli.values import bit_range

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="onnxruntime")
    parser.add_argument("--op", default="tanh")
    parser.add_argument("--chunks", type=int, default=32)
    parser.add_argument("--chunk", type=int, default=1 << 22)
    parser.add_argument("--range", type=bit_range, default=None)
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray sweeps")
    parser.add_argument("--one-slot", action="store_true",
                        help="the local sweep with 1 slot too (last among the sweeps)")
    parser.add_argument("--label", default=None, help="what is measured (a commit, say)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    first, stop = args.range or (0x3F000000, 0x3F000000 + args.chunks * args.chunk)
    figures = {"label": args.label, "backend": args.backend, "op": args.op,
               "range": [hex(first), hex(stop)], "chunk": args.chunk,
               "chunks": -(-(stop - first) // args.chunk), "first_chunk_counted": True,
               "cores": os.cpu_count(), "load_average_before": os.getloadavg(),
               "stages": stage_rates(args.backend, args.op, first, stop, args.chunk)}
    figures["sweeps"] = [sweep_rate(args.backend, args.op, first, stop, args.chunk,
                                    executor="local", workers=2)]
    if not args.no_ray:
        one, two = ray_sweeps(args.backend, args.op, first, stop, args.chunk)
        figures["sweeps"] += [one, two]
        figures["scaling_1_to_2_ray_cpus"] = two["rate_sweeping"] / one["rate_sweeping"]
    if args.one_slot:
        figures["sweeps"].append(sweep_rate(args.backend, args.op, first, stop, args.chunk,
                                            executor="local", workers=1))
    figures["load_average_after"] = os.getloadavg()
    slower = min(figures["stages"].values())
    local = figures["sweeps"][0]
    figures["target"] = {"slower_stage": slower, "half_of_it": slower / 2,
                         "local_sweeping": local["rate_sweeping"],
                         "share_of_slower": local["rate_sweeping"] / slower,
                         "met": local["rate_sweeping"] >= slower / 2}
    text = json.dumps(figures, indent=2)
    print(text)
    out = args.out or ROOT / "bench" / "results" / \
        f"sweep-rate-{datetime.now(timezone.utc):%Y-%m-%d-%H%M}.json"
    out.write_text(text + "\n")


if __name__ == "__main__":
    main()
