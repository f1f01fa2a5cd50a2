"""Mutated specs: the loader either accepts a spec, which then draws and judges its cases, or
refuses it with one SpecError naming file, line and field. Never a traceback of another kind.

Mutants of the shipped specs: a value anywhere replaced by a hostile one (NaN, infinities,
numbers beyond float64, reversed pairs, wrong types, long lists), a key removed or added, and
the fields a run depends on (value ranges, rank bounds, attributes, edge values) set on
purpose."""
from __future__ import annotations

import copy
import functools
import math
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conform.oracles.expectations import expect
from conform.generators import dtype_labels, generate_cases
from conform.spec import BUILTIN_DIR, OpSpec, SpecError, load_spec

#: The shipped specs mutated: all but the largest quarter (a mutant costs what loading it costs).
NAMES = sorted(path.stem for path in BUILTIN_DIR.glob("*.yaml") if path.stat().st_size <= 2200)
#: Specs whose accepted mutants are also run (drawn, filled, the oracle evaluated): element-wise
#: and hook-drawn ops, unary and binary, float and int.
RUN = ["add", "abs", "onnx_clip", "onnx_arg_max", "leaky_relu", "onnx_softmax"]

HOSTILE = [math.nan, math.inf, -math.inf, 1e308, -1e308, 10 ** 400, -(10 ** 400), 0, -1, 7, 1.5,
           "", "bogus", "-inf", "int_min", None, True, [], {}, [1, 0], [0.5, 2.5], [0, 1e308],
           [math.nan, 1], ["nan", "inf"], [1] * 300, {"frob": 1}, "x" * 2000]
#: A hostile value, a copy of its own (a later mutation may change it in place).
HOSTILE_VALUES = st.sampled_from(HOSTILE).map(copy.deepcopy)
RANGES = st.lists(st.sampled_from([math.nan, math.inf, -math.inf, -1e308, 1e308, -1e300, 0, 1,
                                   -1, 0.5, 300, 1e100, 2 ** 64, -(2 ** 70), 10 ** 400]),
                  min_size=2, max_size=2)


@functools.lru_cache(maxsize=None)
def _parsed(name: str) -> dict:
    return yaml.load((BUILTIN_DIR / f"{name}.yaml").read_bytes(), Loader=_LOADER)


def _shipped(name: str) -> dict:
    """A fresh copy of the shipped spec ``name``, parsed."""
    return copy.deepcopy(_parsed(name))


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: Where mutants are written: a folder in memory where there is one (each is written and read).
_MEMORY = "/dev/shm" if Path("/dev/shm").is_dir() else None
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _paths(node, prefix=()):
    """Every path to a value inside the parsed spec ``node``."""
    items = node.items() if isinstance(node, dict) else enumerate(node) \
        if isinstance(node, list) else ()
    for key, value in items:
        yield prefix + (key,)
        yield from _paths(value, prefix + (key,))


def _set(data: dict, path: tuple, value, *, delete: bool = False) -> None:
    node = data
    for key in path[:-1]:
        node = node[key]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value


@st.composite
def _targeted(draw, data: dict):
    """A mutation of a field a run depends on."""
    signature = data["signature"]
    inputs = [e if isinstance(e, str) else e["name"] for e in signature["inputs"]] or ["x"]
    field = draw(st.sampled_from(["values", "input_values", "rank", "attr", "edges", "edge_case"]))
    if field == "values":
        data.setdefault("values", {})[draw(st.sampled_from(["float", "int"]))] = draw(RANGES)
    elif field == "input_values":
        name = draw(st.sampled_from(inputs + ["nope"]))
        data.setdefault("input_values", {})[name] = {draw(st.sampled_from(["float", "int"])):
                                                     draw(RANGES)}
    elif field == "rank":
        for key in draw(st.sets(st.sampled_from(["min_rank", "max_rank"]), min_size=1)):
            signature[key] = draw(st.integers(0, 8))
    elif field == "attr":
        name = draw(st.sampled_from(["frob", "alpha", "axis", "dtypes", "ftz", "absent_inputs"]))
        signature.setdefault("attrs", {})[name] = draw(st.sampled_from([1, 0.3125, [1, 2]]))
    elif field == "edges":
        data.setdefault("edge_values", {})[draw(st.sampled_from(["float", "int"]))] = draw(
            st.lists(st.sampled_from([0, 1.5, -1, 10 ** 400, math.nan, "inf", "-zero", "bogus",
                                      "int_min", "max_finite", True]), max_size=80))
    else:
        data.setdefault("edge_cases", []).append(
            {draw(st.sampled_from(inputs)): draw(st.sampled_from([1, 10 ** 400, "bogus", "nan"]))})
    return field


@st.composite
def mutants(draw, names=NAMES):
    """``(op, mutated spec data)``: one to three mutations of a shipped spec (a targeted one
    first, while the spec is whole, then anywhere)."""
    name = draw(st.sampled_from(names))
    data = _shipped(name)
    targeted = draw(st.booleans())
    if targeted:
        draw(_targeted(data))
    for _ in range(draw(st.integers(0 if targeted else 1, 2))):
        path = draw(st.sampled_from(list(_paths(data))))
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if action == "add":
            parent = data
            for key in path[:-1]:
                parent = parent[key]
            if isinstance(parent, dict):
                parent[draw(st.sampled_from(["frob", "min_rank", "values", "attrs"]))] = \
                    draw(HOSTILE_VALUES)
        else:
            _set(data, path, draw(HOSTILE_VALUES), delete=action == "delete")
    return name, data


def _load(folder: Path, name: str, data) -> OpSpec | SpecError:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.dump(data, Dumper=_DUMPER, allow_unicode=True, width=1 << 20),
                    encoding="utf-8")
    try:
        return load_spec(path)
    except SpecError as exc:   # any other exception fails the test, with its traceback
        message = str(exc)
        assert message.startswith(str(path)) and "field " in message, message
        assert "\n" not in message and len(message) < 2500, message
        return exc


def test_a_thousand_mutants_load_or_are_refused_with_one_spec_error():
    counts = {"accepted": 0, "refused": 0}
    with tempfile.TemporaryDirectory(dir=_MEMORY) as folder:
        @settings(max_examples=1000, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(mutants())
        def load(mutant):
            found = _load(Path(folder), *mutant)
            counts["refused" if isinstance(found, SpecError) else "accepted"] += 1

        load()
    assert counts["accepted"] >= 50 and counts["refused"] >= 300, counts   # both sides met


def test_accepted_mutants_of_run_fields_draw_and_judge():
    accepted = []
    with tempfile.TemporaryDirectory() as folder:
        @settings(max_examples=150, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(st.sampled_from(RUN).flatmap(lambda name: st.tuples(
            st.just(name), st.builds(lambda: _shipped(name)))).flatmap(
            lambda pair: _targeted(pair[1]).map(lambda field: (pair[0], pair[1], field))))
        def load(mutant):
            name, data, field = mutant
            found = _load(Path(folder), name, data)
            if isinstance(found, OpSpec):
                accepted.append(found)

        load()
    assert len(accepted) >= 20
    for spec in accepted[:40]:
        for label in dtype_labels(spec)[:2]:
            cases = generate_cases(spec, label, count=3, seed=1, answer=expect)
            assert cases and all(case.expectation is not None for case in cases), spec.op


def test_run_refuses_what_it_cannot_do_with_exit_2_and_no_traceback(tmp_path, conform_cli):
    """Two of the issue's specs that ``run`` died on: each is refused before anything runs."""
    lines = (BUILTIN_DIR / "add.yaml").read_text(encoding="utf-8").splitlines()
    signature = next(k for k, line in enumerate(lines) if line.startswith("signature:"))
    values = next(k for k, line in enumerate(lines) if line.startswith("values:"))
    broken = {"values.float": (values, lines[values].replace("[-100, 100]", "[100, -100]")),
              "signature.attrs.frob": (signature,
                                       lines[signature].replace("}", ", attrs: {frob: 3}}"))}
    for field, (k, line) in broken.items():
        (tmp_path / "add.yaml").write_text("\n".join(lines[:k] + [line] + lines[k + 1:]) + "\n",
                                           encoding="utf-8")
        proc = conform_cli("--specs", tmp_path, "run", "--backend", "numpy", "--ops", "add",
                           "--out", tmp_path / "o", check_status=2)
        assert f"add.yaml:{k + 1}: field {field}:" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and not (tmp_path / "o").exists()
