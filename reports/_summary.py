"""summary.json: totals, pass rate and per-op x dtype figures, computed from results.jsonl."""
from __future__ import annotations

from collections import Counter, defaultdict
from operator import add

from conform.harness.judge.compare import RATIO_BINS
from conform.reports._coverage import coverage, judged, unsupported_reason
from conform.records import SCHEMA_VERSION
from conform.reports._portability import OPEN, kept_samples, open_sample
from conform.reports._text import neutral
from conform.verdicts import EXCUSED, FROM_GRAPHS, PASSED, PROBLEMS, VERDICTS  # noqa: F401 - re-exported

REASON_EXAMPLE_CHARS = 300   # an unsupported reason's example message, cut


def pass_rate(counts: dict) -> float | None:
    """(pass + xpass) / (pass + xpass + fail + error + crash + timeout); None when nothing was
    judged. Without a manifest there is no xpass: pass / (pass + fail + error + crash + timeout)."""
    denominator = judged(counts)
    return sum(counts.get(v, 0) for v in PASSED) / denominator if denominator else None


def _as_float(value):
    if isinstance(value, str):
        return float(value)
    return value


def case_ratio(record: dict) -> float | None:
    """Worst error / bound of one result record (0 for an exact match under a zero bound, inf for
    any error under a zero bound); ``None`` where no output was judged."""
    if "checked" not in record or record.get("max_error") is None:
        return None
    error, bound = _as_float(record["max_error"]), _as_float(record["bound"])
    return error / bound if bound else (0.0 if error == 0 else float("inf"))


def special_value_failure(record: dict) -> bool:
    """A failing case whose worst figures lie within the bound failed on a special value
    (NaN, infinity or signed zero), not on a numeric error."""
    ratio = case_ratio(record)
    return record["verdict"] == "fail" and ratio is not None and ratio <= 1


def severity(record: dict) -> float:
    """How bad a case is, for ordering: its error/bound ratio; inf where there is none (errors,
    crashes, timeouts), where it is NaN and for special-value failures."""
    ratio = case_ratio(record)
    if ratio is None or ratio != ratio or special_value_failure(record):
        return float("inf")
    return ratio


def _resolved(ref, record):
    """The record a kept ``ref`` stands for (see :meth:`Tally.merge`), or None."""
    return None if ref is None else record(ref)


def _case_order(case_id: str) -> tuple:
    """A sort key for the case ids of one op x dtype in suite order: ``add.float32.9`` before
    ``add.float32.10``, numbered cases before named ones (``.sweep``, ``.edge0``)."""
    head, _, tail = case_id.rpartition(".")
    return (head, 0, int(tail), "") if tail.isdigit() else (head, 1, 0, tail)



# What a Tally keeps per cell besides the figures of summary.json: what finds the worst case,
# and what the other reports need (their problem records, backend seconds, the first record,
# the worst case's record).
_UNREPORTED = ("worst_ratio", "worst_order", "problems", "seconds", "first", "tagged",
               "worst_record")


class Tally:
    """The figures of summary.json, gathered one record at a time (a run adds each record as it
    arrives, so that the summary is ready when the last case is). Workers tally the records of
    each reply, and the run merges those tallies (:meth:`merge`)."""

    def __init__(self):
        self.cells: dict = {}    # (op, dtype) -> figures

    @classmethod
    def of(cls, records) -> "Tally":
        """A tally that has added ``records``."""
        tally = cls()
        for record in records:
            tally.add(record)
        return tally

    def add(self, r: dict, ref=None) -> None:
        """Add record ``r``. The cell keeps ``ref`` (default: ``r``) where it keeps records
        (problems, its first record, those a manifest entry matched, the worst case's): a
        worker's tally keeps the record's index in its reply, which :meth:`merge` resolves."""
        verdict = r["verdict"]
        key = (r["op"], r["dtype"])
        ref = r if ref is None else ref
        cell = self.cells.get(key)
        if cell is None:
            cell = self.cells[key] = {
                "cases": 0, "counts": {}, "elements": 0, "worst_error": None,
                "bound": None, "unit": None, "model": None, "worst_case": None,
                "histogram": [0] * (len(RATIO_BINS) - 1),
                "worst_ratio": -1.0, "worst_order": (), "problems": [], "seconds": 0.0,
                "first": ref, "tagged": [], "worst_record": None, "unsupported_reasons": {},
                "subnormal_excused": 0, "open_samples": [], "open_elements": 0, "partly_open": 0}
        elif "manifest" in r:
            cell["tagged"].append(ref)
        cell["cases"] += 1
        counts = cell["counts"]
        counts[verdict] = counts.get(verdict, 0) + 1
        cell["seconds"] += r.get("seconds", 0.0)
        if verdict in PROBLEMS:
            cell["problems"].append(ref)
        elif verdict == "unsupported":
            _add_reason(cell["unsupported_reasons"], r.get("message"))
        sample = open_sample(r)
        if sample is not None:
            cell["open_samples"] = kept_samples([*cell["open_samples"], sample], _case_order)
        opened = r.get("impl_defined_elements") or 0
        if opened:   # elements in open regions: counted, not judged
            cell["open_elements"] += opened
            cell["partly_open"] += verdict not in OPEN   # judged on the others
        if "checked" not in r or verdict in EXCUSED:
            return
        if verdict not in PROBLEMS and r.get("subnormal_excused"):
            cell["subnormal_excused"] += 1   # it passed only under the ftz subnormal policy
        cell["elements"] += r["checked"]
        histogram = r.get("histogram")
        if histogram:   # [] where no element was judged, else one count per bin
            cell["histogram"] = [*map(add, cell["histogram"], histogram)]
        cell["unit"], cell["model"] = r["unit"], r["model"]
        ratio = case_ratio(r)
        worst = cell["worst_ratio"]
        if ratio is None or not ratio >= worst:   # (NaN is never the worst)
            return
        # among equally bad cases the first in suite order: the same whatever order the
        # workers finished in
        order = _case_order(r["id"])
        if ratio > worst or order < cell["worst_order"]:
            cell.update(worst_ratio=ratio, worst_order=order, worst_error=_as_float(r["max_error"]),
                        bound=_as_float(r["bound"]), worst_case=r["id"], worst_record=ref)

    def merge(self, cells: dict, record) -> None:
        """Add another tally's ``cells`` (as :meth:`add` would have added its records, in
        order, after this tally's); ``record(ref)`` gives the record a kept ``ref`` stands for."""
        for key, part in cells.items():
            part["problems"] = [*map(record, part["problems"])]
            part["tagged"] = [*map(record, part["tagged"])]
            part["first"] = first = record(part["first"])
            cell = self.cells.get(key)
            if cell is None:
                part["worst_record"] = _resolved(part["worst_record"], record)
                self.cells[key] = part
                continue
            for name in ("cases", "elements", "seconds", "subnormal_excused", "open_elements",
                         "partly_open"):
                cell[name] += part[name]
            counts = cell["counts"]
            for verdict, count in part["counts"].items():
                counts[verdict] = counts.get(verdict, 0) + count
            cell["histogram"] = [*map(add, cell["histogram"], part["histogram"])]
            cell["problems"] += part["problems"]
            reasons = cell.setdefault("unsupported_reasons", {})
            for key, entry in part.get("unsupported_reasons", {}).items():
                if key in reasons:
                    reasons[key]["cases"] += entry["cases"]
                else:
                    reasons[key] = entry
            cell["tagged"] += [first, *part["tagged"]] if "manifest" in first else part["tagged"]
            cell["open_samples"] = kept_samples([*cell.get("open_samples", []),
                                                 *part.get("open_samples", [])], _case_order)
            if part["unit"] is not None:
                cell["unit"], cell["model"] = part["unit"], part["model"]
            ratio, worst = part["worst_ratio"], cell["worst_ratio"]
            if ratio > worst or (ratio == worst and part["worst_order"] < cell["worst_order"]):
                for name in ("worst_ratio", "worst_order", "worst_error", "bound", "worst_case"):
                    cell[name] = part[name]
                # read back only when it is the worst so far: one decoded line, not one per reply
                cell["worst_record"] = _resolved(part["worst_record"], record)

    def manifest_records(self) -> list[dict]:
        """What manifest checks (``stale_entries``, ``manifest_summary``) need of the records:
        one per op x dtype, and every other record a manifest entry matched."""
        return [r for cell in self.cells.values() for r in (cell["first"], *cell["tagged"])]

    def summary(self, meta: dict, conform_version: str) -> dict:
        """The summary.json document (see DESIGN.md's CLI contract)."""
        by_op: dict = defaultdict(dict)
        total: Counter = Counter()
        seen = {v for cell in self.cells.values() for v in cell["counts"]}
        shown = VERDICTS + tuple(v for v in FROM_GRAPHS if v in seen)
        for (op, dtype), cell in sorted(self.cells.items()):
            counts = {v: cell["counts"].get(v, 0) for v in shown}
            total.update(cell["counts"])
            by_op[op][dtype] = {**{k: v for k, v in cell.items() if k not in _UNREPORTED},
                                "counts": counts, "histogram": list(cell["histogram"]),
                                "pass_rate": pass_rate(counts), "judged": judged(counts),
                                "coverage": coverage(counts)}
        total = {v: total.get(v, 0) for v in shown}
        return {
            "schema_version": SCHEMA_VERSION,
            **meta,
            "conform_version": conform_version,
            "ops": len(by_op),
            "cases": sum(total.values()),
            "counts": total,
            "pass_rate": pass_rate(total),
            "judged": judged(total),
            "coverage": coverage(total),
            # cases that passed (or were implementation-defined) only under the ftz subnormal
            # policy: an element of theirs fails under ieee
            "subnormal_excused": sum(cell["subnormal_excused"] for cell in self.cells.values()),
            "histogram_bins": [b if b != float("inf") else "inf" for b in RATIO_BINS],
            "by_op": dict(by_op),
        }


def _add_reason(reasons: dict, message: str | None) -> None:
    """Count an unsupported case under its reason (see :mod:`conform.reports._coverage`),
    keeping the first message as the reason's example."""
    key = unsupported_reason(message)
    entry = reasons.get(key)
    if entry is None:
        reasons[key] = {"cases": 1, "example": neutral((message or "unsupported")[:REASON_EXAMPLE_CHARS])}
    else:
        entry["cases"] += 1


def build_summary(records, meta: dict, conform_version: str) -> dict:
    """Aggregate result records into the summary.json document (see DESIGN.md's CLI contract)."""
    return Tally.of(records).summary(meta, conform_version)
