"""The exhaustive 16-bit sweeps against the single-op suite (issue 35, item 7): for every unary
float op of a committed accuracy map (docs/accuracy/<backend>-16bit.json) with a ULP bound, is
the sweep's worst error within the op's bound today, and does the suite's default run reach it?

    python3 bench/sweep_vs_suite.py [--backend onnxruntime] [--run DIR] [--dtypes float16]

Without ``--run`` it runs the suite (``conform run --backend B --ops <the map's ops> --dtypes
<dtypes> --no-manifest``, default budget) in a temporary folder. It prints one row per op x
dtype: the bound (the spec's, now), the sweep's worst ULP and its input, the suite's worst and
its case, and lists the cells whose sweep worst lies more than MARGIN ULP above the suite's (the
suite does not reach the error a full sweep shows) and those whose sweep worst lies beyond
today's bound. A ``--json`` file keeps the rows.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: A sweep's worst counts as unreached when it lies this far (ULP) above the suite's: every
#: exhaustive sweep finds a slightly worse input than a sample does.
MARGIN = 0.01


def ulp_bound(model: dict) -> float | None:
    """The per-element ULP bound an error model states outright (``ulp: n``; 0.5 for
    ``correctly_rounded``), or None (exact, derived, statistical models)."""
    if "ulp" in model:
        return float(model["ulp"])
    if model.get("correctly_rounded"):
        return 0.5
    return None


def map_rows(path: Path, specs: dict, dtypes) -> list[dict]:
    """Per entry of the map at ``path`` in ``dtypes`` whose op states a ULP bound today: op,
    dtype, bound, the sweep's worst ULP, its input, and the sweep's failing count."""
    rows = []
    for entry in json.loads(path.read_text())["accuracy_map"]:
        spec = specs.get(entry["op"])
        if entry["dtype"] not in dtypes or spec is None or entry["tier"] is None:
            continue
        bound = ulp_bound(spec.model_for(entry["dtype"]))
        if bound is None:
            continue
        worst = entry["max_ulp"]
        rows.append({"op": entry["op"], "dtype": entry["dtype"], "bound": bound,
                     "sweep_ulp": float(worst["ulp"]), "sweep_input": worst["input"],
                     "sweep_failed": entry["failed"]})
    return rows


def suite_worst(run: Path) -> dict:
    """(op, dtype) -> (worst ULP error, its case id) over the judged records of a run."""
    found: dict = {}
    for line in (run / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("unit") != "ulp" or record.get("max_error") is None:
            continue
        error = float(record["max_error"])
        key = (record["op"], record["dtype"])
        if key not in found or error > found[key][0]:
            found[key] = (error, record["id"])
    return found


def _run(backend: str, ops, dtypes, out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "conform.harness.cli", "run", "--backend", backend,
                    "--ops", ",".join(sorted(ops)), "--dtypes", ",".join(dtypes),
                    "--no-manifest", "--quiet", "--out", str(out)],
                   cwd=ROOT, capture_output=True, check=False, timeout=1800)
    return out


def compare(backend: str, run: Path | None, dtypes) -> list[dict]:
    """The rows of :func:`map_rows` with the suite's worst error and case beside each."""
    from conform.spec import load_specs

    specs = load_specs()
    rows = map_rows(ROOT / "docs" / "accuracy" / f"{backend}-16bit.json", specs, dtypes)
    with tempfile.TemporaryDirectory() as tmp:
        run = run or _run(backend, {r["op"] for r in rows}, dtypes, Path(tmp) / "run")
        worst = suite_worst(run)
    for row in rows:
        error, case = worst.get((row["op"], row["dtype"]), (None, None))
        row.update(suite_ulp=error, suite_case=case)
    return rows


def report(rows: list[dict]) -> str:
    """The table, then the cells the suite does not reach and those beyond today's bound."""
    lines = ["| op | dtype | bound (ULP) | sweep worst | at input | suite worst | its case |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        suite = "not run" if r["suite_ulp"] is None else f"{r['suite_ulp']:.4g}"
        lines.append(f"| {r['op']} | {r['dtype']} | {r['bound']:g} | {r['sweep_ulp']:.4g} "
                     f"| {r['sweep_input']!r} | {suite} | {r['suite_case'] or ''} |")
    above = [r for r in rows if r["suite_ulp"] is not None and r["bound"] > 0.5
             and r["sweep_ulp"] > r["suite_ulp"] + MARGIN]
    beyond = [r for r in rows if r["sweep_ulp"] > r["bound"]]
    lines += ["", f"sweep worst above the suite's worst by more than {MARGIN} ULP: "
                  f"{len(above)} of {sum(r['bound'] > 0.5 for r in rows)} (correctly rounded ops "
                  "left out: the suite's figure there is mismatches, bit for bit)"]
    lines += [f"  {r['op']} {r['dtype']}: sweep {r['sweep_ulp']:.4g} at {r['sweep_input']!r}, "
              f"suite {r['suite_ulp']:.4g} ({r['suite_case']})" for r in above]
    lines += [f"sweep worst beyond today's bound: {len(beyond)}"]
    lines += [f"  {r['op']} {r['dtype']}: {r['sweep_ulp']:.4g} > {r['bound']:g}" for r in beyond]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="onnxruntime")
    parser.add_argument("--run", type=Path, help="a finished run of the suite (default: run it)")
    parser.add_argument("--dtypes", default="float16")
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args(argv)
    rows = compare(args.backend, args.run, args.dtypes.split(","))
    print(report(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 1 if any(r["sweep_ulp"] > r["bound"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
