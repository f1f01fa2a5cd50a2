"""Explain a run's failing records with the backend's failure catalog (docs/failures/<backend>.yaml).

    python3 bench/failure_census.py RUN_DIR [--backend B] [--catalog FILE]

Prints the count of failing records per catalog entry (first matching entry wins), then every
group (op, dtype, verdict) no entry explains with the start of its message; exits 1 when any
failing record is unexplained, 2 when the catalog is malformed. The backend defaults to the
run's summary.json.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from conform.reports import CatalogError, census, load_catalog, read_results

ROOT = Path(__file__).resolve().parents[1]
CATALOGS = ROOT / "docs" / "failures"


def main(argv=None) -> int:
    """Print the census of RUN_DIR; 0 when every failing record is explained."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--backend", help="default: the backend named in RUN_DIR/summary.json")
    parser.add_argument("--catalog", type=Path, help="default: docs/failures/<backend>.yaml")
    args = parser.parse_args(argv)
    backend = args.backend or json.loads((args.run_dir / "summary.json").read_text())["backend"]
    catalog = args.catalog or CATALOGS / f"{backend}.yaml"
    try:
        entries = load_catalog(catalog) if catalog.exists() else []
    except CatalogError as exc:
        print(f"failure_census: {exc}", file=sys.stderr)
        return 2
    result = census(entries, read_results(args.run_dir / "results.jsonl"))
    print("\n".join(result.lines(entries)))
    return 1 if result.unmatched else 0


if __name__ == "__main__":
    sys.exit(main())
