"""conform's modules import each other without cycles (lazy imports inside functions count too),
so that data flows forward: spec -> generators -> oracles -> backends -> judge -> reports."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"spec": "conform.spec", "ops": "conform.ops", "generators": "conform.generators",
            "oracles": "conform.oracles", "harness": "conform.harness",
            "harness/backends": "conform.harness.backends", "harness/judge": "conform.harness.judge",
            "harness/run": "conform.harness.run", "harness/assurance": "conform.harness.assurance",
            "harness/cli": "conform.harness.cli", "reports": "conform.reports",
            "manifests": "conform.manifests"}


def _modules() -> dict[str, Path]:
    found = {}
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).glob("*.py")):
            found[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the conform modules it imports: ``from pkg import sub`` is an edge to the
    submodule alone; anything else imported from a package is an edge to the package."""
    modules = _modules()
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("conform"):
                for alias in node.names:
                    target = f"{node.module}.{alias.name}"
                    graph[name].add(target if target in modules else node.module)
            elif isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names if a.name in modules)
    return {name: {t for t in targets if t in modules and t != name} for name, targets in graph.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles():
    graph = import_graph()
    assert len(graph) > 60
    assert cycles(graph) == []


def test_the_cycle_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("upstream, downstream", [("conform.spec", "conform.oracles"),
                                                  ("conform.spec", "conform.harness"),
                                                  ("conform.ops", "conform.harness.judge.judging")])
def test_upstream_modules_do_not_import_downstream_ones(upstream, downstream):
    graph = import_graph()
    offenders = sorted(f"{name} -> {target}" for name, targets in graph.items()
                       if name.startswith(upstream) for target in targets
                       if target.startswith(downstream))
    assert offenders == []
