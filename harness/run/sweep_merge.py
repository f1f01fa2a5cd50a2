"""Merge the summaries of a sweep's chunks into one op x dtype x backend's figures, and name its
accuracy tier.

Every merged figure is a sum, a maximum (ties going to the lowest bit pattern: the element a
single chunk's judge would name, the first of equals) or the first inputs in bit order, so the
merge of any chunking of a range, in any order, is the same dict.
"""
from __future__ import annotations

from conform.harness.judge.accuracy import ULP_LABELS
from conform.harness.run.sweep_chunk import FIRST_FAILING, PROFILE_BLOCK_BITS

#: Tiers of an accuracy map, best first: each names the published bounds it meets. ``exact``:
#: every result equals the float64 reference; ``correctly_rounded``: every result is the
#: reference rounded once (CORE-MATH's float32 functions are, checked exhaustively); ``<=1``:
#: glibc's table for exp, log, sin, cos; ``<=2``: glibc's tanh, CUDA's expf, sinf, tanhf;
#: ``<=4``: within OpenCL C's single-precision bounds for exp and log (3 ULP) and ``<=4``;
#: ``within_bound``: further, but within the spec's bound; ``beyond_bound``: some input fails.
TIERS = ("exact", "correctly_rounded", "<=1", "<=2", "<=4", "within_bound", "beyond_bound")
ANCHORS = {"exact": "bit-exact against the float64 reference",
           "correctly_rounded": "CORE-MATH (float32, correctly rounded, 0.5 ULP)",
           "<=1": "glibc's ULP tables (exp, log, sin, cos: 1 ULP)",
           "<=2": "glibc tanh (2 ULP); CUDA expf, sinf, tanhf (2 ULP)",
           "<=4": "OpenCL C 3.0 single precision (exp, log 3 ULP; tanh 5 ULP)",
           "within_bound": "the spec's error model",
           "beyond_bound": "fails the spec's error model"}


#: Fields of an accuracy map's entry that say how the sweep ran (how many chunks, their seconds),
#: not what it found: the rest is the same whatever the executor, chunking and worker count.
RUN_FIELDS = ("chunks", "chunk_seconds")


def empty() -> dict:
    """The merge of no chunk."""
    return {"inputs": 0, "checked": 0, "failed": 0, "impl_defined": 0, "model": None, "unit": None,
            "worst": None, "ulp_histogram": [0] * len(ULP_LABELS), "correctly_rounded": 0,
            "max_ulp": {"ulp": 0.0, "bits": None, "input": None}, "regions": {}, "failing": [],
            "profile": {},
            "chunks": {}, "lost": []}


def merged(summaries) -> dict:
    """The merge of chunk summaries (:func:`~conform.harness.run.sweep_chunk.chunk_summary`'s,
    ``result`` for those that ran; the rest counted in ``chunks`` and listed in ``lost``).

    >>> merged([])["inputs"]
    0
    """
    total = empty()
    for summary in sorted(summaries, key=lambda s: s["first"]):
        status = summary["status"]
        total["chunks"][status] = total["chunks"].get(status, 0) + 1
        if status != "ok":
            total["lost"].append({"first": summary["first"], "stop": summary["stop"],
                                  "status": status, "message": summary.get("message", "")})
            continue
        _add(total, summary["result"])
    return total


def _add(total: dict, part: dict) -> None:
    for name in ("inputs", "checked", "failed", "impl_defined", "correctly_rounded"):
        total[name] += part[name]
    total["model"], total["unit"] = total["model"] or part["model"], total["unit"] or part["unit"]
    total["ulp_histogram"] = [a + b for a, b in zip(total["ulp_histogram"], part["ulp_histogram"])]
    total["worst"] = _larger(total["worst"], part["worst"], "ratio")
    total["max_ulp"] = _larger(total["max_ulp"], part["max_ulp"], "ulp")
    for name, (n, failed, most) in part["regions"].items():
        have = total["regions"].setdefault(name, [0, 0, 0.0])
        have[0], have[1], have[2] = have[0] + n, have[1] + failed, max(have[2], most)
    total["failing"] = sorted(total["failing"] + part["failing"])[:FIRST_FAILING]
    for block, most in part["profile"]:
        total["profile"][block] = max(total["profile"].get(block, 0.0), most)


def _larger(have: dict | None, new: dict | None, field: str) -> dict | None:
    """The one of two elements with the larger ``field``; of equals, the lower bit pattern."""
    if have is None or have.get("bits") is None:
        return new if new is not None else have
    if new is None or new.get("bits") is None:
        return have
    if new[field] > have[field] or (new[field] == have[field] and new["bits"] < have["bits"]):
        return new
    return have


def tier(total: dict) -> str | None:
    """The accuracy tier (:data:`TIERS`) of merged figures; None where nothing was judged.

    >>> tier({**empty(), "checked": 4, "correctly_rounded": 4, "max_ulp": {"ulp": 0.5}})
    'correctly_rounded'
    """
    if not total["checked"]:
        return None
    if total["failed"]:
        return "beyond_bound"
    worst = total["max_ulp"]["ulp"]
    if worst == 0:
        return "exact"
    if total["correctly_rounded"] == total["checked"]:
        return "correctly_rounded"
    for name, limit in (("<=1", 1.0), ("<=2", 2.0), ("<=4", 4.0)):
        if worst <= limit:
            return name
    return "within_bound"


def accuracy_entry(total: dict, *, op: str, dtype: str, backend: str, backend_version: str,
                   first: int, stop: int, chunk_seconds: float) -> dict:
    """One row of the accuracy map: the merged figures with the share correctly rounded, the
    tier and the anchors it names, the error profile as :func:`plot_points` over the range, and
    ``chunk_seconds`` (the chunks' stages' seconds, summed)."""
    name = tier(total)
    share = total["correctly_rounded"] / total["checked"] if total["checked"] else None
    return {"op": op, "dtype": dtype, "backend": backend, "backend_version": backend_version,
            "range": [first, stop], "tier": name, "anchor": ANCHORS.get(name),
            "correctly_rounded_share": share, "ulp_labels": list(ULP_LABELS),
            "chunk_seconds": round(chunk_seconds, 3), **total,
            "profile": plot_points(total["profile"], dtype, first, stop)}


def plot_points(profile: dict, dtype: str, first: int, stop: int, points: int = 256) -> list:
    """The error profile (largest ULP error per block of bit patterns) over the range ``first``
    to ``stop`` in at most ``points`` groups of whole blocks: ``[first bit pattern of the group,
    largest ULP error in it]`` per group (0 where no element erred).

    >>> plot_points({1: 2.0}, "float16", 0, 512, points=2)
    [[0, 2.0], [256, 0.0]]
    """
    shift = PROFILE_BLOCK_BITS[dtype]
    low, high = first >> shift, ((stop - 1) >> shift) + 1
    per = max(1, -(-(high - low) // points))
    groups = {}
    for block, most in profile.items():
        group = (int(block) - low) // per
        groups[group] = max(groups.get(group, 0.0), most)
    return [[max(first, (low + g * per) << shift), groups.get(g, 0.0)]
            for g in range(-(-(high - low) // per))]


__all__ = ["ANCHORS", "RUN_FIELDS", "TIERS", "accuracy_entry", "empty", "merged", "plot_points", "tier"]
