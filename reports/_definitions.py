"""What the report says each op is: the standards' sections that define it and, per dtype, the
reason its error model holds (the spec's ``why``). Written into summary.json as
``definitions`` by ``conform run``, so that ``conform report DIR`` shows it again without the
specs."""
from __future__ import annotations

from conform.reports._text import neutral

_STANDARDS = {"xla": "XLA", "onnx": "ONNX", "nnef": "NNEF", "stablehlo": "StableHLO"}


def standard_text(standard: str, entry) -> str:
    """One ``defined_by`` entry as 'ONNX Conv (opset 11)' or 'XLA Exp, section ...'."""
    if not isinstance(entry, dict):
        return f"{_STANDARDS.get(standard, standard)} {entry}"
    text = f"{_STANDARDS.get(standard, standard)} {entry.get('name', '')}".rstrip()
    extras = [f"section {entry['section']}" if entry.get("section") else "",
              f"opset {entry['opset']}" if entry.get("opset") else "", entry.get("note") or ""]
    extras = [e for e in extras if e]
    return text + (f" ({'; '.join(map(str, extras))})" if extras else "")


def _why(spec, label: str) -> str | None:
    target = label.partition("->")[2] or label
    try:   # the judge's own choice: the error model of the output dtype
        return spec.model_for(target).get("why")
    except Exception:   # an op model this version does not know how to read: say nothing
        return None


def op_definitions(specs: dict, cells) -> dict:
    """``{op: {"summary", "defined_by": [text, ...], "why": {dtype label: why}, "regions":
    [{"region", "why"}, ...]}}`` for the (op, dtype label) pairs in ``cells`` whose op is in
    ``specs`` (``regions`` where the op has implementation-defined regions)."""
    out: dict = {}
    for op, label in cells:
        spec = specs.get(op)
        if spec is None:
            continue
        entry = out.get(op)
        if entry is None:
            defined_by = getattr(spec, "defined_by", None) or {}
            entry = out[op] = {
                "summary": neutral(str(getattr(spec, "summary", "") or "")),
                "defined_by": [neutral(standard_text(k, v)) for k, v in defined_by.items()],
                "why": {}}
            regions = [{"region": neutral(str(r["region"])), "why": neutral(str(r.get("why", "")))}
                       for r in getattr(spec, "implementation_defined", None) or ()]
            if regions:   # what the portability section names
                entry["regions"] = regions
        why = _why(spec, label)
        if why:
            entry["why"][label] = neutral(str(why))
    return out
