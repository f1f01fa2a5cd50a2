"""NNEF quantization files (``graph.quant``, beside ``graph.nnef``): which tensors are quantized,
and how (NNEF 1.0, chapter 5 "Storing Network Data", quantization files; the seeds' §3.3.5:
activation tensors have globally unique names "so that these can be used to reference
activation tensors, for example to attach quantization information to activations").

A file is a sequence of entries, one per quantized tensor: the tensor's name as a string
literal, a colon, an invocation of a quantization fragment (``linear_quantize``,
``zero_point_linear_quantize``, ``logarithmic_quantize``, ...) with its non-tensor arguments
named (the tensor argument left out), and a semicolon:

    "conv1": linear_quantize(min = -1.0, max = 1.0, bits = 8);

Arguments are NNEF literals: numbers, logicals (``true``/``false``) and strings. ``#`` starts a
comment that runs to the end of the line.
"""
from __future__ import annotations

import re
from pathlib import Path

from conform.harness.backends.nnef_models import literal

_ENTRY = re.compile(r'\s*(["\'])(.*?)\1\s*:\s*(\w+)\s*\((.*?)\)\s*;', re.S)
_ARGUMENT = re.compile(r"\s*(\w+)\s*=\s*(\"[^\"]*\"|'[^']*'|[^,]+?)\s*(?:,|$)")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def format_quantization(entries: dict) -> str:
    """The text of a quantization file: ``entries`` maps a tensor's name to ``(fragment,
    arguments)``.

    >>> format_quantization({"x": ("linear_quantize", {"min": -1.0, "max": 1.0, "bits": 8})})
    '"x": linear_quantize(min = -1.0, max = 1.0, bits = 8);\\n'
    """
    lines = []
    for name, (fragment, arguments) in entries.items():
        listed = ", ".join(f"{key} = {literal(value)}" for key, value in arguments.items())
        lines.append(f'"{name}": {fragment}({listed});\n')
    return "".join(lines)


def parse_quantization(text: str) -> dict:
    """``{tensor name: (fragment, arguments)}`` of a quantization file's text (ValueError at
    the first thing that is not an entry)."""
    text = re.sub(r"#[^\n]*", "", text)
    entries, at = {}, 0
    while text[at:].strip():
        match = _ENTRY.match(text, at)
        if match is None:
            raise ValueError(f"not a quantization entry at {text[at:].strip()[:40]!r}")
        entries[match.group(2)] = (match.group(3), _arguments(match.group(4)))
        at = match.end()
    return entries


def _arguments(text: str) -> dict:
    arguments, at = {}, 0
    while text[at:].strip():
        match = _ARGUMENT.match(text, at)
        if match is None:
            raise ValueError(f"not a named argument at {text[at:].strip()[:40]!r}")
        arguments[match.group(1)] = _value(match.group(2))
        at = match.end()
    return arguments


def _value(token: str):
    """An NNEF literal's value: a string, a logical, an integer or a scalar."""
    if token[0] in "\"'":
        return token[1:-1]
    if token in ("true", "false"):
        return token == "true"
    if not _NUMBER.fullmatch(token):
        raise ValueError(f"{token!r} is not an NNEF literal")
    return float(token) if any(c in token for c in ".eE") else int(token)


def write_quantization(path: Path | str, entries: dict) -> Path:
    """Write ``entries`` (see :func:`format_quantization`) as the quantization file ``path``."""
    path = Path(path)
    path.write_text(format_quantization(entries), encoding="utf-8")
    return path


def read_quantization(path: Path | str) -> dict:
    """The entries of the quantization file ``path`` (see :func:`parse_quantization`)."""
    return parse_quantization(Path(path).read_text(encoding="utf-8"))
