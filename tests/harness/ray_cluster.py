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


#: Ports a node of this process was given (its workers' ranges included): no other takes them.
_TAKEN: set = set()
WORKER_PORTS = 40


def _worker_ports(taken: set) -> int:
    """The first of :data:`WORKER_PORTS` + 1 ports for a node's workers, free now and clear of
    ``taken`` (Ray refuses a range that holds another of the node's ports)."""
    while True:
        low, = free_ports(1)
        if low + WORKER_PORTS < 65536 and taken.isdisjoint(range(low, low + WORKER_PORTS + 1)):
            return low


def _node_args(ports: list[int]) -> list[str]:
    manager, objects, agent, grpc, env, metrics = ports[:6]
    _TAKEN.update(ports)
    low = _worker_ports(_TAKEN)
    _TAKEN.update(range(low, low + WORKER_PORTS + 1))
    return ["--node-ip-address=127.0.0.1", f"--node-manager-port={manager}",
            f"--object-manager-port={objects}", f"--dashboard-agent-listen-port={agent}",
            f"--dashboard-agent-grpc-port={grpc}", f"--runtime-env-agent-port={env}",
            f"--metrics-export-port={metrics}", f"--min-worker-port={low}",
            f"--max-worker-port={low + WORKER_PORTS}", "--disable-usage-stats", "--block"]


class Node:
    """One ``ray start --block`` process (and the processes it started, in its session)."""

    def __init__(self, args: list[str], temp: str):
        self.temp = temp
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
        self.log = open(Path(temp).parent / f"{Path(temp).name}.log", "wb")
        self.process = subprocess.Popen([*RAY, "start", *args], stdout=self.log, stderr=subprocess.STDOUT,
                                        env=env, start_new_session=True)

    killed = False

    def kill(self) -> None:
        """SIGKILL the node's whole session (its raylet and workers die at once); once."""
        if self.killed:   # (its session id may be another process's by now)
            return
        self.killed = True
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


def joining(address: str, cpus: int, temp: str, ports: list | None = None) -> Node:
    """A node of ``cpus`` CPUs joining the cluster at ``address`` (its temporary folder
    ``temp``, its 6 ``ports``, None: free ones; it waits for the head by itself)."""
    return Node([f"--address={address}", f"--num-cpus={cpus}", f"--temp-dir={temp}",
                 *_node_args(ports or free_ports(6))], temp)


class Cluster:
    """A running local cluster: ``address, head, second = cluster`` (``second`` None for a head
    alone); :meth:`live_second` joins a new second node where a test killed the last one."""

    def __init__(self, root: str, address: str, nodes: list):
        self.root, self.address, self.nodes = root, address, nodes

    def __iter__(self):
        return iter((self.address, self.nodes[0], self.nodes[-1] if len(self.nodes) > 1 else None))

    def __getitem__(self, index: int):
        return tuple(self)[index]

    def live_second(self, cpus: int = 1) -> Node:
        """The second node, a new one (of ``cpus`` CPUs) if the last was killed."""
        if self.nodes[-1].killed:
            temp = os.path.join(self.root, f"second-{len(self.nodes)}")
            self.nodes.append(joining(self.address, cpus, temp))
            wait_started(self.nodes[-1])
        return self.nodes[-1]


@contextlib.contextmanager
def local_cluster(cpus=(1, 1)):
    """A :class:`Cluster` of a head and a second node on 127.0.0.1, once both say they run
    (``cpus`` of one element: the head alone)."""
    root = tempfile.mkdtemp(prefix="conform-ray-test-")
    nodes: list = []
    try:
        gcs, *ports = free_ports(13)
        _TAKEN.update([gcs, *ports])   # (before either node's workers get their range)
        address = f"127.0.0.1:{gcs}"
        head_temp = os.path.join(root, "head")
        nodes.append(Node(["--head", f"--port={gcs}", f"--num-cpus={cpus[0]}",
                           "--include-dashboard=false", f"--temp-dir={head_temp}",
                           *_node_args([*ports[:6], gcs])], head_temp))
        if len(cpus) > 1:
            nodes.append(joining(address, cpus[1], os.path.join(root, "second"), ports[6:]))
        for node in nodes:
            wait_started(node)
        yield Cluster(root, address, nodes)
    finally:
        for node in reversed(nodes):
            node.kill()
        shutil.rmtree(root, ignore_errors=True)
