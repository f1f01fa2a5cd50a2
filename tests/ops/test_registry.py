"""The op registry: every op is defined by one op module, shared code names no op, and an
installed package can add ops."""
from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conform.op_registry import definitions, op_modules

ROOT = Path(__file__).resolve().parents[2]
SHARED_PACKAGES = ("conform", "spec", "generators", "oracles", "harness", "reports")

# Strings in shared modules that equal an op or binding name but mean something else.
NOT_OP_NAMES = {
    ("harness/backends/nnef_graphs.py", "reshape"): "NNEF's reshape fragment, written between two nodes of a graph where an NNEF reduction keeps the axes conform's op drops",
    ("harness/backends/nnef_models.py", "external"): "NNEF's external fragment, the line every document declares a fed input with (and the prelude's first declaration)",
    ("harness/backends/nnef_models.py", "variable"): "NNEF's variable fragment, the line a document declares an input read from a tensor file with",
    ("harness/backends/nnef_graphs.py", "variable"): "NNEF's variable fragment, listed among a graph document's operations where a line declares an input read from a tensor file",
    ("spec/_schema.py", "minimum"): "a JSON Schema keyword",
    ("spec/_schema.py", "maximum"): "a JSON Schema keyword",
    ("harness/assurance/certify.py", "minimum"): "a JSON Schema keyword (the profile schema)",
    ("harness/assurance/certify.py", "maximum"): "a JSON Schema keyword (the profile schema)",
    ("harness/judge/compare.py", "abs"): "the unit of an abs_rel error model",
    ("harness/run/graph_runs.py", "abs"): "the unit of a graph's propagated absolute bound",
    ("generators/_edges.py", "broadcast"): "the dedicated broadcast case's id suffix and plan, "
    "not XLA Broadcast (lax.broadcast)",
    ("generators/_drawn_shapes.py", "broadcast"): "the dedicated broadcast case's plan, not "
    "XLA Broadcast (lax.broadcast)",
    **{("spec/critical.py", name): "a function of the critical-region expression language "
       "(float64 NumPy math on a dtype's constants), not the op"
       for name in ("exp", "exp2", "log", "log2", "log1p", "sqrt", "abs", "atanh", "acosh",
                    "asinh", "floor")},
    **{(path, "complex"): "the dtype class of complex64 and complex128 (float, complex, int, "
       "bool), not XLA Complex"
       for path in ("spec/_loader.py", "spec/_runnable.py", "spec/_schema.py", "spec/programs.py",
                    "generators/_drawing.py", "generators/_values.py")},
    **{("generators/_values.py", name): "a NumPy complex array's part (its attribute), not XLA "
       "Real or Imag" for name in ("real", "imag")},
}


def _names(specs) -> set[str]:
    """Every op name and every name a binding gives an op (ONNX op_type, NNEF op, lax function)."""
    names = set(specs)
    for spec in specs.values():
        bindings = spec.bindings
        names.update(b[key] for fmt, key in (("onnx", "op_type"), ("nnef", "op"), ("xla", "lax"))
                 if (b := bindings.get(fmt)) and key in b)   # xla: {unsupported: why} names none
    return names


def _docstrings(tree) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _named_ops(path: Path, names: set[str], relative: str | None = None) -> list[str]:
    """Where ``path`` names an op: string literals (docstrings aside) and ``lax.<op>``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings, found = _docstrings(tree), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value in names and id(node) not in docstrings:
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in ("lax", "jnp", "onnx") and node.attr in names:
            found.append((node.lineno, node.attr))
    relative = relative or path.relative_to(ROOT).as_posix()
    return [f"{relative}:{line}: {name!r}" for line, name in sorted(found)
            if (relative, name) not in NOT_OP_NAMES]


def test_no_shared_module_names_an_op(specs):
    names = _names(specs)
    assert {"add", "reduce_sum", "ReduceSum", "sum_reduce", "dot_general"} <= names
    modules = [path for package in SHARED_PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]
    assert len(modules) > 40
    offenders = [hit for path in modules for hit in _named_ops(path, names)]
    assert offenders == [], "op-specific knowledge belongs in the op's module (ops/):\n" + \
        "\n".join(offenders)


def test_the_scan_finds_an_op_named_in_shared_code(tmp_path, specs):
    """The check above can fail: a table keyed by op names, or a lax call, is found."""
    sample = tmp_path / "sample.py"
    sample.write_text('"""add is fine in a docstring."""\nTABLE = {"reduce_sum": 1}\n'
                      'y = lax.dot_general\n', encoding="utf-8")
    found = _named_ops(sample, _names(specs), "harness/_probe_for_test.py")
    assert found == ["harness/_probe_for_test.py:2: 'reduce_sum'",
                     "harness/_probe_for_test.py:3: 'dot_general'"]


def test_every_spec_has_one_definition_and_every_definition_a_spec(specs):
    registered = definitions()
    assert set(registered) == set(specs)
    modules = {d.module for d in registered.values()}
    assert modules <= set(op_modules()) and all(m.startswith("conform.ops.") for m in modules)
    for name, definition in registered.items():
        assert definition.qualified_name == f"{name}_v{definition.version}"
        assert specs[name].definition is definition


OP_PACKAGE = '''\
"""A vendor's op package: one custom op."""
import numpy as np

from conform.ops import op


def numpy_vendor_double(operand, *, bound):
    """The numpy backend's computation: the binding's NumPy function (add) of x and x."""
    return bound(operand, operand)


@op("vendor_double", version=1, numpy=numpy_vendor_double)
def oracle_vendor_double(operand):
    """2 x, exact in binary floating point."""
    return (2 * operand,)
'''

OP_SPEC = '''\
op: vendor_double
summary: Twice the operand, a custom op of an installed package.
defined_by:
  onnx: {name: Mul, note: "a vendor op, emitted as x * 2 would be"}
signature: {inputs: [operand]}
dtypes: [float32]
values: {float: [-100, 100]}
error_model:
  float: {exact: true, why: "doubling is exact in binary floating point (no overflow drawn)"}
bindings:
  numpy: {fn: add}
'''


def _installed(site, package: str, tmp_path) -> dict:
    """An environment in which ``site/package`` is installed as an op package (a dist-info
    folder naming it in the ``conform.ops`` entry-point group)."""
    info = site / f"{package}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[conform.ops]\n{package} = {package}\n")
    return {"PYTHONPATH": str(site), "CONFORM_CACHE_DIR": str(tmp_path / "cache"),
            "PATH": "/usr/bin:/bin"}


def test_an_installed_op_package_adds_its_ops(tmp_path, monkeypatch):
    site = tmp_path / "site"
    package = site / "vendor_ops"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(OP_PACKAGE, encoding="utf-8")
    (package / "vendor_double.yaml").write_text(OP_SPEC, encoding="utf-8")
    env = _installed(site, "vendor_ops", tmp_path)
    command = [sys.executable, "-m", "conform.harness.cli"]
    listed = subprocess.run([*command, "list", "--format", "json"], capture_output=True,
                            text=True, env=env, check=True)
    rows = {row["op"]: row for row in json.loads(listed.stdout)}
    assert rows["vendor_double"]["definition"] == "vendor_double_v1" and "add" in rows
    out = tmp_path / "out"
    subprocess.run([*command, "run", "--backend", "numpy", "--ops", "vendor_double",
                    "--max-examples", "4", "--quiet", "--out", str(out)], env=env, check=True,
                   capture_output=True)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"].get("pass", 0) >= 4 and summary["counts"].get("fail", 0) == 0


@pytest.mark.parametrize("path", sorted((ROOT / "ops").glob("*.py")), ids=lambda p: p.name)
def test_op_modules_stay_small(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 500


EXAMPLE_OPS = ROOT / "tests" / "fixtures" / "example_ops"


def test_a_new_op_module_and_region_need_no_shared_file(tmp_path):
    """tests/fixtures/example_ops adds a structural op and a region in one new module and a
    YAML spec: discovery finds both, the op runs on a real backend, and no file outside the
    fixture names them."""
    site = tmp_path / "site"
    shutil.copytree(EXAMPLE_OPS, site / "example_ops")
    env = _installed(site, "example_ops", tmp_path)
    out = tmp_path / "out"
    subprocess.run([sys.executable, "-m", "conform.harness.cli", "run", "--backend", "numpy",
                    "--ops", "example_flip", "--max-examples", "6", "--quiet", "--out", str(out)],
                   env=env, check=True, capture_output=True)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"].get("pass", 0) >= 6 and summary["counts"].get("fail", 0) == 0
    mentions = [str(path.relative_to(ROOT)) for folder in ("conform", "spec", "ops", "generators",
                "oracles", "harness", "reports", "docs") for path in (ROOT / folder).rglob("*")
                if path.is_file() and path.suffix in (".py", ".yaml", ".json")
                and "example_flip" in path.read_text(encoding="utf-8", errors="ignore")]
    assert mentions == []
