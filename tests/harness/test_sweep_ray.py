"""``conform sweep --executor ray`` on a real local Ray cluster (a head and a second node, see
tests/harness/ray_cluster.py): a node killed mid-sweep loses no chunk and counts none twice,
the merged figures equal the local executor's bit for bit, and a hostile adapter costs its
chunks alone."""
from __future__ import annotations

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


def test_a_node_killed_mid_sweep_costs_nothing_and_ray_equals_local(cluster, specs, tmp_path):
    address, _, second = cluster
    local = run_sweep(SweepConfig("numpy", ("tanh",), first=FIRST, stop=STOP, chunk=8 * CHUNK,
                                  workers=1, out=tmp_path / "local"), specs)
    killed = []

    def kill_second_node(summary, done, planned):
        if not killed:   # the first chunk is back: the second node is busy with another
            second.kill()
            killed.append(done)
    on_ray = run_sweep(SweepConfig("numpy", ("tanh",), first=FIRST, stop=STOP, chunk=CHUNK,
                                   executor="ray", address=address, workers=2,
                                   out=tmp_path / "ray"), specs, on_done=kill_second_node)
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
