"""Coverage among the types a backend claims: of a run's cases whose every input and output
dtype the backend declares (its ``dtypes``: for the nnef executor float32 = scalar, int32 =
integer, bool = logical), how many were judged, and why the others were not.

    python3 bench/claimed_coverage.py RUN_DIR [--backend B] [--groups N]

Judged is the coverage's numerator (conform.verdicts.JUDGED: pass, xpass, fail, inconsistent,
error, crash, timeout: a crash, an error or a timeout is the backend's deviation on a case it
claims, so it counts as judged, and the share's line says how many of the judged they are);
``impl_defined`` cases were computed and checked against a region the standard leaves open,
so a second share counts them as computed. A case with some elements in an open region and
others judged is judged (``partly open``: its verdict is the judged elements'). The cases not
judged are grouped by verdict, op and reason (conform.reports' unsupported reasons:
``standard`` is a case the model format cannot express, ``runtime`` one the consumer refuses;
for ``impl_defined``: ``open`` where every element is open, ``raised`` where the backend raised
on a case with open elements, ``partly`` where some elements were judged, in a run made before
such cases were judged on them); ``--min R`` exits 1 when the judged share is below R. The
drawn cases the model format cannot express (summary.json's ``not_expressible``) are not part
of its suite: counted apart, never in the shares.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

from conform.harness.backends.registry import load_backend_class
from conform.reports._coverage import unsupported_reason
from conform.verdicts import BROKEN, JUDGED


def claimed_cases(records, dtypes: frozenset):
    """The records whose input and output dtypes are all in ``dtypes``."""
    for record in records:
        outputs = record.get("out_dtype")
        outputs = outputs if isinstance(outputs, list) else [outputs]
        types = set(record.get("input_dtypes") or ()) | {d for d in outputs if d}
        if types <= dtypes:
            yield record


def tally(records) -> tuple[collections.Counter, collections.Counter]:
    """``(verdict counts, counts of the not-judged groups (verdict, op, reason, message))``;
    the verdict counts also hold ``partly open``: judged cases with elements in open regions.

    >>> tally([{"verdict": "pass", "op": "relu", "impl_defined_elements": 2}])[0]["partly open"]
    1
    """
    verdicts, groups = collections.Counter(), collections.Counter()
    for record in records:
        verdict = record["verdict"]
        verdicts[verdict] += 1
        if verdict in JUDGED:
            verdicts["partly open"] += bool(record.get("impl_defined_elements"))
            continue
        message = record.get("message") or ""
        groups[(verdict, record["op"], _reason(record),
                message.splitlines()[0][:90] if message else "")] += 1
    return verdicts, groups


def _reason(record: dict) -> str:
    verdict, message = record["verdict"], record.get("message") or ""
    if verdict == "unsupported":
        return unsupported_reason(message)
    if verdict == "impl_defined":   # ("partly": a run judged before partly-open cases passed)
        return "raised" if message.startswith("raised on implementation-defined") else \
            "partly" if record.get("checked") else "open"
    return verdict


def main(argv=None) -> int:
    """Print the shares and the groups; 1 if the judged share is below ``--min``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--backend", help="default: the run's own (summary.json)")
    parser.add_argument("--groups", type=int, default=40, help="not-judged groups listed")
    parser.add_argument("--min", type=float, default=None, help="least judged share")
    args = parser.parse_args(argv)
    summary = json.loads((args.run_dir / "summary.json").read_text())
    name = args.backend or summary["backend"]
    dtypes = frozenset(load_backend_class(name).dtypes)
    with open(args.run_dir / "results.jsonl", encoding="utf-8") as lines:
        verdicts, groups = tally(claimed_cases(map(json.loads, lines), dtypes))
    partly = verdicts.pop("partly open", 0)
    cases = sum(verdicts.values())
    judged = sum(verdicts[v] for v in JUDGED)
    broken = sum(verdicts[v] for v in BROKEN)
    computed = judged + verdicts["impl_defined"]
    print(f"{name} claims {', '.join(sorted(dtypes))}: {cases} cases of those types, "
          f"{dict(verdicts.most_common())}")
    print(f"judged {judged} ({judged / max(cases, 1):.2%}; of them {broken} error, crash or "
          f"timeout, {partly} partly open); judged or implementation-defined "
          f"{computed} ({computed / max(cases, 1):.2%})")
    standard = sum(n for (v, _, reason, _), n in groups.items() if reason == "standard")
    if standard:
        rest = cases - standard
        print(f"without the {standard} cases the model format cannot express: judged "
              f"{judged / max(rest, 1):.2%}, judged or implementation-defined "
              f"{computed / max(rest, 1):.2%} of {rest}")
    left_out = sum(entry["cases"] for entry in summary.get("not_expressible") or ())
    if left_out:   # any dtype: the run drew them and left them out of the format's suite
        print(f"not in the suite (not counted above): {left_out} drawn cases the model format "
              "cannot express (summary.json's not_expressible)")
    for (verdict, op, reason, message), count in groups.most_common(args.groups):
        print(f"  {count:5d}  {verdict:<12} {op:<32} {reason:<9} {message}")
    return 1 if args.min is not None and judged / max(cases, 1) < args.min else 0


if __name__ == "__main__":
    sys.exit(main())
