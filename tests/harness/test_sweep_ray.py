"""``conform sweep --executor ray`` on a real local Ray cluster (a head and a second node, see
tests/harness/ray_cluster.py): a node killed mid-sweep loses no chunk and counts none twice,
the merged figures equal the local executor's bit for bit, and a hostile adapter costs its
chunks alone; ``conform run`` on Ray gives a local run's verdicts, a node killed mid-run loses
no case and counts none twice, a crash costs its case alone, and a cut-short run resumes on
Ray. Whatever runs on Ray leaves this process's SIGINT and SIGTERM handlers as they were."""
from __future__ import annotations

import dataclasses
import json
import signal

import pytest

pytest.importorskip("ray")

from conform.harness.run.sweep import SweepConfig, run_sweep  # noqa: E402
from tests.harness.ray_cluster import local_cluster  # noqa: E402
from tests.harness.test_sweep import found, specs  # noqa: E402,F401 (specs: a fixture)
from tests.harness.sweep_adapters import HANG, SEGFAULT  # noqa: E402

FIRST, STOP, CHUNK = 0x3F000000, 0x3F008000, 2048   # 16 chunks


@pytest.fixture(scope="module")
def cluster():
    with local_cluster(cpus=(1, 1)) as running:
        yield running


def handlers() -> tuple:
    """This process's SIGINT and SIGTERM handlers (``ray.init`` installs a SIGTERM one)."""
    return signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)


def test_a_node_killed_mid_sweep_costs_nothing_and_ray_equals_local(cluster, specs, tmp_path):
    address, second = cluster.address, cluster.live_second()
    local = run_sweep(SweepConfig("numpy", ("tanh",), first=FIRST, stop=STOP, chunk=8 * CHUNK,
                                  workers=1, out=tmp_path / "local"), specs)
    killed = []

    def kill_second_node(summary, done, planned):
        if not killed:   # the first chunk is back: the second node is busy with another
            second.kill()
            killed.append(done)
    before = handlers()
    on_ray = run_sweep(SweepConfig("numpy", ("tanh",), first=FIRST, stop=STOP, chunk=CHUNK,
                                   executor="ray", address=address, workers=2,
                                   out=tmp_path / "ray"), specs, on_done=kill_second_node)
    assert handlers() == before   # (ray.init's SIGTERM handler is not left behind)
    assert killed == [1]
    entry, = on_ray["accuracy_map"]
    assert entry["chunks"] == {"ok": 16} and entry["lost"] == []
    assert found(on_ray) == found(local)


def test_a_hostile_adapter_on_ray_costs_its_chunks_alone(cluster, specs, tmp_path):
    address = cluster[0]
    summary = run_sweep(SweepConfig("tests.harness.sweep_adapters:CrashesOnOneChunkHangsOnAnother",
                                    ("tanh",), first=FIRST, stop=FIRST + 4 * 4096, chunk=4096,
                                    executor="ray", address=address, workers=2, timeout=2,
                                    out=tmp_path / "hostile"), specs)
    entry, = summary["accuracy_map"]
    assert entry["chunks"] == {"ok": 2, "crash": 1, "timeout": 1}
    assert [(lost["first"], lost["status"]) for lost in entry["lost"]] == [
        (SEGFAULT & ~4095, "crash"), (HANG & ~4095, "timeout")]
    assert entry["checked"] == 2 * 4096 and entry["failed"] == 0


def verdicts(out) -> dict:
    """Each case's verdict in ``out``'s results.jsonl, by id."""
    return {record["id"]: record["verdict"] for record in
            map(json.loads, (out / "results.jsonl").read_text().splitlines())}


def test_a_run_on_ray_gives_the_local_verdicts_crashes_alone_and_resumes(cluster, specs,
                                                                         tmp_path, monkeypatch):
    from conform.harness.run import ray_pool
    from conform.harness.run.runner import RunConfig, run_suite
    from conform.harness.run.sweep_ray import start_ray
    from tests.harness.hostile_adapters import add_cases

    monkeypatch.setattr(ray_pool, "SHARD", 2)   # several shards, two in flight
    # segfaults on add case 1, exits on 2 (tests/harness/hostile_adapters.py), adds on the rest
    config = RunConfig("tests.harness.hostile_adapters:Crashes", ops=["add"], dtypes=["float32"],
                       cases=add_cases([0, 1, 2, 7, 9, 10]), workers=2, timeout=10,
                       out=tmp_path / "local")
    run_suite(config, specs, progress=False)
    on_ray = dataclasses.replace(config, executor="ray", address=cluster[0], out=tmp_path / "ray")
    # (connected once, as a notebook would: both runs use the connection, and the Ray workers
    # their pools; run_suite alone connects and disconnects)
    _, connection = start_ray(config.backend, cluster[0])
    try:
        run_suite(on_ray, specs, progress=False)
        local = verdicts(tmp_path / "local")
        assert verdicts(tmp_path / "ray") == local
        assert sorted(k for k, v in local.items() if v != "pass") == ["add.float32.1",
                                                                      "add.float32.2"]
        assert {local[k] for k in ("add.float32.1", "add.float32.2")} == {"crash"}
        results = tmp_path / "ray" / "results.jsonl"   # as a killed run leaves it: resumed on Ray
        results.write_text("".join(results.read_text().splitlines(keepends=True)[:3]))
        meta, _ = run_suite(dataclasses.replace(on_ray, resume=True), specs, progress=False)
        assert verdicts(tmp_path / "ray") == local and meta["resumed_cases"] == 3
    finally:
        connection.close()



def test_a_node_killed_mid_run_loses_no_case_and_counts_none_twice(cluster, specs, tmp_path,
                                                                   monkeypatch):
    from conform.harness.run import ray_pool
    from conform.harness.run.runner import RunConfig, run_suite

    second = cluster.live_second()
    monkeypatch.setattr(ray_pool, "SHARD", 3)   # 10 shards, two in flight: one on each node
    config = RunConfig("numpy", ops=["tanh", "add"], dtypes=["float32"], max_examples=12,
                       workers=2, timeout=60, out=tmp_path / "local")
    run_suite(config, specs, progress=False)
    killed, run_batches = [], ray_pool.RayPool.run_batches

    def killing_second_node(pool, cases):
        for reply in run_batches(pool, cases):
            if not killed:   # a shard is back: the other one in flight runs on the second node
                second.kill()
                killed.append(True)
            yield reply
    monkeypatch.setattr(ray_pool.RayPool, "run_batches", killing_second_node)
    before = handlers()
    meta, _ = run_suite(dataclasses.replace(config, executor="ray", address=cluster.address,
                                            out=tmp_path / "ray"), specs, progress=False)
    assert handlers() == before
    assert killed and meta["complete"]
    ids = [json.loads(line)["id"] for line in (tmp_path / "ray" / "results.jsonl").read_text().splitlines()]
    local = verdicts(tmp_path / "local")
    assert len(ids) == len(set(ids)) == len(local) == meta["cases_planned"]   # none lost or twice
    assert verdicts(tmp_path / "ray") == local
