"""Markdown tables of ``conform sweep`` accuracy maps, for docs/accuracy/.

    python bench/accuracy_maps.py SWEEP_DIR [SWEEP_DIR ...] > docs/accuracy/TABLE.md

Each SWEEP_DIR is a finished sweep's ``--out`` folder; its ``summary.json`` gives one row per op
x dtype: the tier, the largest ULP error and its input, the share correctly rounded, failing
inputs of those judged, the range, and the seconds its chunks' stages took. A float32 sweep of a
range also gets the projected time of the whole type on one core (the chunks' seconds scaled to
2^32 inputs).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def rows(folder: Path) -> list[str]:
    """The table rows of one sweep folder."""
    summary = json.loads((folder / "summary.json").read_text())
    lines = []
    for e in summary["accuracy_map"]:
        first, stop = e["range"]
        if e["tier"] is None:
            reason = e["lost"][0]["status"] if e["lost"] else "nothing judged"
            lines.append(f"| {e['op']} | {e['dtype']} | {e['backend_version']} | {reason} "
                         "| | | | | | |")
            continue
        worst = e["max_ulp"]
        share = e["correctly_rounded_share"]
        full = 1 << (32 if e["dtype"] == "float32" else 16)
        projected = e["chunk_seconds"] * full / max(stop - first, 1)
        lines.append(f"| {e['op']} | {e['dtype']} | {e['backend_version']} | {e['tier']} "
                     f"| {float(worst['ulp']):.4g} | {worst['input']!r} (`{worst['bits']:#x}`) "
                     f"| {100 * share:.3f}% | {e['failed']} / {e['checked']} "
                     f"| `{first:#x}:{stop:#x}` | {e['chunk_seconds']:.1f} s"
                     f"{'' if stop - first == full else f' (all: {projected / 60:.0f} core-min)'} |")
    return lines


def main() -> None:
    """Print the table of every folder given."""
    print("| op | dtype | backend | tier | max ULP | at input (bits) | correctly rounded "
          "| failing / judged | range | core seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for folder in sys.argv[1:]:
        print("\n".join(rows(Path(folder))))


if __name__ == "__main__":
    main()
