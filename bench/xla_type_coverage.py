"""Which element types the XLA text allows that conform's XLA-bound ops do not draw.

    python bench/xla_type_coverage.py [--json] [--ops add,...] [--results RUN/results.jsonl]

For every spec with an ``xla`` binding that conform.ops.xla_types types: the (op, element type)
pairs the text allows (the operand's StableHLO class) against those a run on an XLA backend
draws (the spec's labels that ``xla_allows`` keeps; a label's operand type, its first). Prints
the totals, the misses by op, and per type class the pairs allowed and drawn; with
``--results`` (a ``conform run --backend jax`` run's records), also how many drawn pairs that run
judged, reported ``unsupported``, or did not draw.
"""
from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict

from conform.generators import dtype_labels
from conform.ops.xla_types import (BOOL, COMPLEX, FLOAT, SIGNED, UNSIGNED, allowed,
                                   xla_allows)
from conform.spec import load_specs

CLASSES = {"bool": BOOL, "signed": SIGNED, "unsigned": UNSIGNED, "float": FLOAT,
           "complex": COMPLEX}


def type_class(dtype: str) -> str:
    """The StableHLO class a type is in (``int4`` -> ``signed``)."""
    return next(name for name, members in CLASSES.items() if dtype in members)


def coverage(names=None) -> dict:
    """``allowed`` and ``drawn``: per spec name, the operand types."""
    found = {"allowed": {}, "drawn": {}}
    for name, spec in load_specs().items():
        if "xla" not in spec.bindings or (names and name not in names):
            continue
        types = allowed(name)
        if types is None:
            continue
        found["allowed"][name] = set(types[0])
        found["drawn"][name] = {label.split("->")[0] for label in dtype_labels(spec)
                                if xla_allows(spec, label)}
    return found


def misses(found: dict) -> list[tuple[str, str]]:
    """``(spec, type)`` for each allowed pair not drawn."""
    return sorted((name, dtype) for name, types in found["allowed"].items()
                  for dtype in types - found["drawn"][name])


def totals(found: dict) -> dict:
    """Counts of the ops and of the allowed and drawn (op, type) pairs."""
    return {"ops": len(found["allowed"]),
            "pairs": sum(map(len, found["allowed"].values())),
            "pairs_drawn": sum(len(found["drawn"][k] & v) for k, v in found["allowed"].items())}


def by_class(found: dict, results: str | None = None) -> dict:
    """Per type class: the pairs allowed, drawn and, from a run's records, judged (a verdict
    other than ``unsupported``) and unsupported (no case of the pair judged)."""
    verdicts = defaultdict(set)
    if results:
        with open(results) as lines:
            for line in lines:
                record = json.loads(line)
                pair = (record.get("op"), str(record.get("dtype", "")).split("->")[0])
                verdicts[pair].add(record.get("verdict"))
    out = defaultdict(Counter)
    for name, types in found["allowed"].items():
        for dtype in types:
            row = out[type_class(dtype)]
            row["allowed"] += 1
            if dtype not in found["drawn"][name]:
                row["not drawn"] += 1
                continue
            row["drawn"] += 1
            seen = verdicts.get((name, dtype))
            if results and seen:
                row["judged" if seen - {"unsupported"} else "unsupported"] += 1
            elif results:
                row["not run"] += 1
    return {k: dict(v) for k, v in out.items()}


def main(argv=None) -> int:
    """Print the totals, the misses and the counts per type class (``--json``: as JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--ops", help="comma-separated spec names (default: every XLA spec)")
    parser.add_argument("--results", help="a jax run's results.jsonl: judged / unsupported")
    args = parser.parse_args(argv)
    found = coverage(set(args.ops.split(",")) if args.ops else None)
    count, missed, classes = totals(found), misses(found), by_class(found, args.results)
    if args.json:
        print(json.dumps({"totals": count, "misses": missed, "classes": classes}, indent=1))
        return 0
    print(" ".join(f"{k}={v}" for k, v in count.items()))
    for name, row in sorted(classes.items()):
        print(f"{name:9} " + " ".join(f"{k}={v}" for k, v in row.items()))
    by_op = defaultdict(list)
    for name, dtype in missed:
        by_op[name].append(dtype)
    for name, types in sorted(by_op.items()):
        print(f"{name}: {' '.join(sorted(types))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
