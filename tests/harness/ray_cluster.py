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

#: The ``ray`` command of this interpreter's Ray (its console script may live elsewhere: a venv
#: that sees the system's packages has none of its own)
RAY = [sys.executable, "-c", "import sys; from ray.scripts.scripts import main; sys.exit(main())"]


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
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
        self.log = open(Path(temp).parent / f"{Path(temp).name}.log", "wb")
        self.process = subprocess.Popen([*RAY, "start", *args], stdout=self.log, stderr=subprocess.STDOUT,
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


STARTED = b"Ray runtime started."


def wait_started(node: Node, timeout: float = 120.0) -> None:
    """Return once ``node``'s ``ray start`` says its runtime started (its log line)."""
    deadline = time.monotonic() + timeout
    log = Path(node.log.name)
    while STARTED not in log.read_bytes():
        if node.process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"ray start did not start a node:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)


@contextlib.contextmanager
def local_cluster(cpus=(1, 1)):
    """``(address, head, second)``: a head and a second node on 127.0.0.1, once both say
    they run."""
    root = tempfile.mkdtemp(prefix="conform-ray-test-")
    nodes = []
    try:
        gcs, *ports = free_ports(15)
        address = f"127.0.0.1:{gcs}"
        head_temp, second_temp = os.path.join(root, "head"), os.path.join(root, "second")
        nodes.append(Node(["--head", f"--port={gcs}", f"--num-cpus={cpus[0]}",
                           "--include-dashboard=false", f"--temp-dir={head_temp}",
                           *_node_args(ports[:7])], head_temp))
        nodes.append(Node([f"--address={address}", f"--num-cpus={cpus[1]}",
                           f"--temp-dir={second_temp}", *_node_args(ports[7:14])], second_temp))
        for node in nodes:   # (the second waits for the head's GCS by itself)
            wait_started(node)
        yield address, nodes[0], nodes[1]
    finally:
        for node in reversed(nodes):
            node.kill()
        shutil.rmtree(root, ignore_errors=True)
