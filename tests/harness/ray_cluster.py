"""A real local Ray cluster for the sweep tests: a head and a second node on 127.0.0.1, each
started by ``ray start --block`` in a session of its own, with its own temporary folder, CPUs
and ports, and stopped (its whole process group) when the block ends."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))


def free_ports(count: int) -> list[int]:
    """``count`` ports free now on 127.0.0.1."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _node_args(ports: list[int]) -> list[str]:
    manager, objects, agent, grpc, env, metrics, low = ports
    return ["--node-ip-address=127.0.0.1", f"--node-manager-port={manager}",
            f"--object-manager-port={objects}", f"--dashboard-agent-listen-port={agent}",
            f"--dashboard-agent-grpc-port={grpc}", f"--runtime-env-agent-port={env}",
            f"--metrics-export-port={metrics}", f"--min-worker-port={low}",
            f"--max-worker-port={low + 40}", "--disable-usage-stats", "--block"]


class Node:
    """One ``ray start --block`` process (and the processes it started, in its session)."""

    def __init__(self, args: list[str], temp: str):
        self.temp = temp
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
        self.log = open(Path(temp).parent / f"{Path(temp).name}.log", "wb")
        self.process = subprocess.Popen([RAY, "start", *args], stdout=self.log, stderr=subprocess.STDOUT,
                                        env=env, start_new_session=True)

    def kill(self) -> None:
        """SIGKILL the node's whole session (its raylet and workers die at once)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)
        _kill_session(self.process.pid)
        self.log.close()


def _kill_session(sid: int) -> None:
    """SIGKILL every process left in session ``sid`` (a daemon that moved to a group of its own)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getsid(int(entry.name)) == sid:
                os.kill(int(entry.name), signal.SIGKILL)
        except (ProcessLookupError, PermissionError, OSError):
            pass


def wait_for_nodes(address: str, count: int, timeout: float = 60.0) -> None:
    """Return once the cluster at ``address`` has ``count`` live nodes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = subprocess.run([RAY, "status", f"--address={address}"], capture_output=True, text=True)
        if listed.returncode == 0 and listed.stdout.count("node_") >= count:
            return
        time.sleep(0.5)
    raise TimeoutError(f"the Ray cluster at {address} did not reach {count} nodes: {listed.stdout}{listed.stderr}")


@contextlib.contextmanager
def local_cluster(cpus=(1, 1)):
    """``(address, head, second)``: a head and a second node on 127.0.0.1."""
    root = tempfile.mkdtemp(prefix="conform-ray-test-")
    nodes = []
    try:
        gcs, *ports = free_ports(16)
        address = f"127.0.0.1:{gcs}"
        head_temp, second_temp = os.path.join(root, "head"), os.path.join(root, "second")
        nodes.append(Node(["--head", f"--port={gcs}", f"--num-cpus={cpus[0]}",
                           "--include-dashboard=false", f"--temp-dir={head_temp}",
                           f"--ray-client-server-port={ports[14]}", *_node_args(ports[:7])], head_temp))
        nodes.append(Node([f"--address={address}", f"--num-cpus={cpus[1]}",
                           f"--temp-dir={second_temp}", *_node_args(ports[7:14])], second_temp))
        wait_for_nodes(address, 2)
        yield address, nodes[0], nodes[1]
    finally:
        for node in reversed(nodes):
            node.kill()
        shutil.rmtree(root, ignore_errors=True)
