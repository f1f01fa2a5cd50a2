"""certificate.json and certificate.html: the certificate written by ``conform certify``.

certificate.json is the authority (``conform verify`` checks it); certificate.html is a
self-contained rendering of it (Jinja2, autoescaped, no external resources, no script).
"""
from __future__ import annotations

import json
from pathlib import Path

from conform.reports._html import ENV, fmt, label_key, percent
from conform.reports._summary import PROBLEMS as BAD
from conform.verdicts import EXCUSED

CERTIFICATE_JSON, CERTIFICATE_HTML = "certificate.json", "certificate.html"
LISTED_CASES = 500  # cases other than `pass` listed on the page; all of them are in the JSON


def _rows(certificate: dict) -> list[dict]:
    """One row per op x dtype, in op then dtype order."""
    rows = []
    for op, cells in certificate["by_op"].items():
        for label in sorted(cells, key=label_key):
            cell = cells[label]
            counts = cell["counts"]
            rows.append({"op": op, "dtype": label, "cell": cell, "counts": counts,
                         "excused": sum(counts.get(v, 0) for v in EXCUSED),
                         "bad": any(counts.get(v) for v in BAD)})
    return rows


def render_certificate(certificate: dict) -> str:
    """The certificate as one self-contained HTML page."""
    notable = [c for c in certificate["results"]["cases"] if c["verdict"] != "pass"]
    return ENV.get_template("certificate.html.j2").render(
        cert=certificate, rows=_rows(certificate), notable=notable[:LISTED_CASES],
        more=max(0, len(notable) - LISTED_CASES), percent=percent, fmt=fmt)


def write_certificate(out_dir: Path, certificate: dict) -> tuple[Path, Path]:
    """Write certificate.json (the digest covers its content, not its layout) and
    certificate.html into ``out_dir``."""
    out_dir = Path(out_dir)
    json_path, html_path = out_dir / CERTIFICATE_JSON, out_dir / CERTIFICATE_HTML
    json_path.write_text(json.dumps(certificate, indent=1, ensure_ascii=False, allow_nan=False)
                         + "\n", encoding="utf-8")
    html_path.write_text(render_certificate(certificate), encoding="utf-8")
    return json_path, html_path
