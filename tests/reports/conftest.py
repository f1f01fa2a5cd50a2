"""Synthetic result records for the report tests (shaped like the harness's results.jsonl lines)."""
from __future__ import annotations

import pytest

from conform.reports import ResultWriter, write_reports

JUDGED = ("pass", "fail", "impl_defined")


def make_record(op: str, dtype: str, verdict: str = "pass", index: int = 0, *, error: float = 0.0,
                bound: float = 0.5, message: str | None = None, **extra) -> dict:
    """A results.jsonl line for case ``op.dtype.index``."""
    record = {"id": f"{op}.{dtype}.{index}", "op": op, "dtype": dtype,
              "input_dtypes": [dtype.split("->")[0]] * 2, "out_dtype": dtype.split("->")[-1],
              "shapes": [[4], [4]], "attrs": {}, "plan": "normal", "seed": index, "seconds": 0.001,
              "verdict": verdict}
    if verdict in JUDGED:
        over = error > bound
        record.update(model="ulp(0.5)", unit="ulp", checked=4, mismatched=int(over),
                      impl_defined_elements=int(verdict == "impl_defined"), max_error=error,
                      bound=bound, histogram=[3, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                      worst={"index": [1], "expected": 1.5, "actual": 1.25, "error": error,
                             "bound": bound, "inputs": [1.0, 0.5]})
        record["histogram"][8 if over else 4] += 1
    if verdict != "pass" and verdict != "impl_defined":
        record["message"] = message or f"{op} {verdict} in case {record['id']}"
    elif message:
        record["message"] = message
    record.update(extra)
    return record


META = {"backend": "synthetic", "backend_version": "synthetic 1.0", "device": "cpu",
        "model_format": "native", "subnormals_declared": "ftz", "subnormals_applied": "ieee",
        "seed": 0, "max_examples": 20, "worker_restarts": 0, "wall_seconds": 1.5}


def write_run(directory, records, backend: str = "synthetic", **meta) -> dict:
    """Write ``records`` as a run directory (results.jsonl + the reports); returns the summary.
    ``meta`` overrides fields of :data:`META`."""
    directory.mkdir(parents=True, exist_ok=True)
    with ResultWriter(directory / "results.jsonl") as writer:
        for record in records:
            writer.write(record)
    return write_reports(directory, {**META, "backend": backend, **meta}, "0.0.test")


# What a hostile backend may say: NUL, ANSI colour codes, BEL, vertical tab, carriage return,
# C1 CSI, a right-to-left override and isolate, zero-width and BOM characters, a lone
# surrogate, a non-character, and markup for HTML, XML and Markdown.
HOSTILE = ("\x00\x1b[31mred\x1b[0m\x07\x0b\r\x9b \u202eevil\u202c \u2066iso\u2069 \u200b\ufeff "
           "\udcff \ufffe <img src=x onerror=alert(1)> </script> ]]> & | **bold** [x](javascript:alert(1))")


FORMULA = "=cmd|' /C calc'!A0"   # what a spreadsheet would run, opening an exported CSV


def write_hostile_run(directory, text: str = HOSTILE):
    """A run directory whose backend says ``text`` in every message it can: errors, failures,
    crashes (with a traceback), unsupported cases, its version string and device; and one
    error whose message is a spreadsheet formula."""
    records = [make_record("add", "float32", "error", 0, message=text, traceback=text),
               make_record("add", "float32", "fail", 1, error=3.0, message=text),
               make_record("add", "float32", "pass", 2),
               make_record("abs", "int32", "unsupported", 0, message=f"abs: {text}"),
               make_record("exp", "float16", "crash", 0, message=text),
               make_record("mul", "float32", "error", 0, message=FORMULA)]
    write_run(directory, records, backend="hostile", backend_version=f"hostile {text}",
              device=text)
    return directory


@pytest.fixture
def hostile_run():
    return write_hostile_run


@pytest.fixture
def record():
    return make_record


@pytest.fixture
def run_dir():
    return write_run
