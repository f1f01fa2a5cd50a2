"""Which types the ONNX schemas allow that conform's bound operators do not draw.

    python bench/onnx_type_coverage.py [--json] [--ops onnx_add,...]

For every spec bound to an ONNX default-domain operator, for every schema version in force at an
opset of the binding's ``opsets`` range (capped at the newest the
installed ``onnx`` package defines), and for every type constraint (``T``, ``T1``, ...) of that
schema typing a formal input or output the spec feeds: the types the constraint allows against
the types conform draws there. A label is drawn at an opset where ``schema_allows`` keeps it
(what a run at that opset draws); its type at a formal is the label's input type (or the
signature's fixed type, each member of a type variable) and, at an output, the label's result
type. Specs binding the same operator add up. Prints the totals and every miss; ``--json``
gives them as data (``misses``: ``[operator, constraint, since_version, type, [specs]]``).
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict

import onnx.defs

from conform.dtypes import result_dtype
from conform.generators import dtype_labels
from conform.harness.backends.onnx_models import BY_SCHEMA_NAME, _operand_positions, schema_allows
from conform.spec import load_specs

NEWEST = onnx.defs.onnx_opset_version()


def _element(kind: str) -> str:
    """A schema type string's element type, as conform names it (``tensor(float)`` ->
    ``float32``; ``seq(tensor(int8))`` -> ``int8``); a type conform has no name for keeps
    the schema's (``complex64``)."""
    while kind.startswith(("seq(", "optional(")):
        kind = kind[kind.index("(") + 1:-1]
    name = kind[len("tensor("):-1] if kind.startswith("tensor(") else kind
    return BY_SCHEMA_NAME.get(name, name)


def schema_versions(op_type: str, low: int, high: int) -> dict[int, int]:
    """The schema versions (``since_version``) in force at opsets ``low`` to ``high`` (capped
    at the newest), each with the first opset of the range it is in force at."""
    found = {}
    for opset in range(max(low, 1), min(high, NEWEST) + 1):
        try:
            schema = onnx.defs.get_schema(op_type, opset)
        except onnx.defs.SchemaError:
            continue
        found.setdefault(schema.since_version, opset)
    return found


def _drawn_types(spec, label: str, bound: dict, opset: int, schema) -> dict[str, set]:
    """Per type constraint, the types the cases of ``label`` put at its formals."""
    kinds = spec.input_types
    first, last = label.split("->")[0], label.split("->")[-1]
    positions = _operand_positions(bound, opset, range(len(kinds)), len(kinds))
    drawn = defaultdict(set)
    formals = list(schema.inputs)
    for kind, at in zip(kinds, positions):
        if at is None or not formals:
            continue
        formal = formals[min(at, len(formals) - 1)]
        members = (first,) if kind == "T" else kind if isinstance(kind, tuple) else (kind,)
        drawn[formal.type_str].update(members)
    outputs = [k for k in range(len(spec.output_types)) if k - 1 not in spec.sequence_outputs]
    result = result_dtype(spec.output_dtype, last)
    for formal, k in zip(schema.outputs, outputs):
        kind = spec.output_types[k]
        drawn[formal.type_str].add(result if kind == "T" else kind)
    return drawn


def _bound_specs(names=None):
    """The specs bound to one default-domain ONNX operator, with their binding."""
    for spec in load_specs().values():
        bound = spec.bindings.get("onnx")
        if (names and spec.op not in names) or not bound or "op_type" not in bound \
                or len(spec.node_specs) > 1 or bound.get("domain", "") != "":
            continue
        yield spec, bound


def coverage(names=None) -> dict:
    """``allowed`` and ``drawn``: per (operator, constraint, since_version), the types; and
    ``specs``: per operator, the specs binding it."""
    allowed, drawn, specs = defaultdict(set), defaultdict(set), defaultdict(set)
    for spec, bound in _bound_specs(names):
        op_type = bound["op_type"]
        low, high = bound["opsets"]
        labels = dtype_labels(spec)
        for since, opset in schema_versions(op_type, low, high).items():
            schema = onnx.defs.get_schema(op_type, opset)
            if schema.domain != "":
                continue
            specs[op_type].add(spec.op)
            constraints = {c.type_param_str: c for c in schema.type_constraints}
            for label in labels:
                if not schema_allows(spec, label, opset) or label.split("->")[0] not in \
                        bound.get("dtypes", (label.split("->")[0],)):   # the binding's own list
                    continue
                for param, types in _drawn_types(spec, label, bound, opset, schema).items():
                    if param in constraints:
                        drawn[op_type, param, since] |= types
            fed = {param for (op, param, s) in drawn if op == op_type and s == since}
            for param in fed:
                allowed[op_type, param, since] |= {
                    _element(t) for t in constraints[param].allowed_type_strs}
    return {"allowed": allowed, "drawn": drawn, "specs": specs}


def misses(found: dict) -> list[tuple]:
    """``[operator, constraint, since_version, type, specs]`` for each allowed type not drawn."""
    out = []
    for key, types in sorted(found["allowed"].items()):
        for dtype in sorted(types - found["drawn"][key]):
            out.append((*key, dtype, sorted(found["specs"][key[0]])))
    return out


def totals(found: dict) -> dict:
    """Counts of (operator, constraint, version, type) triples and of (operator, type) pairs."""
    allowed, drawn = found["allowed"], found["drawn"]
    pairs = {(k[0], t) for k, types in allowed.items() for t in types}
    got = {(k[0], t) for k, types in allowed.items() for t in types & drawn[k]}
    return {"operators": len(found["specs"]),
            "triples": sum(map(len, allowed.values())),
            "triples_drawn": sum(len(t & drawn[k]) for k, t in allowed.items()),
            "pairs": len(pairs), "pairs_drawn": len(got)}


def main(argv=None) -> int:
    """Print the totals and the misses (``--json``: as JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--ops", help="comma-separated spec names (default: every bound spec)")
    args = parser.parse_args(argv)
    found = coverage(set(args.ops.split(",")) if args.ops else None)
    count, missed = totals(found), misses(found)
    if args.json:
        print(json.dumps({"totals": count, "misses": missed}, indent=1))
        return 0
    print(" ".join(f"{k}={v}" for k, v in count.items()))
    by_op = defaultdict(list)
    for op_type, param, since, dtype, _ in missed:
        by_op[op_type, param].append(f"{dtype}@{since}")
    for (op_type, param), types in sorted(by_op.items(), key=lambda kv: -len(kv[1])):
        print(f"{op_type} {param}: {' '.join(types)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
