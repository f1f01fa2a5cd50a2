"""Backend text made safe for every output: control characters, NUL, bidi overrides, lone
surrogates and non-characters become visible escapes (``\\x1b``, ``\\u202e``).

A backend's message may hold anything. Written raw, a NUL or an ANSI escape makes junit.xml
invalid XML, a lone surrogate cannot be encoded as UTF-8 at all, and a right-to-left override
(U+202E) reverses the text shown after it in the report, a terminal or a pull-request comment.
:func:`neutral` keeps the text readable and unambiguous; markup is each writer's own business
(HTML and XML escape it, :func:`markdown_text` for summary.md).
"""
from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls; the bidi controls (LRM, RLM, ALM, the
# embeddings and overrides U+202A-202E, the isolates U+2066-2069); zero-width and other
# invisible format characters; lone surrogates; U+FFFE/U+FFFF (not allowed in XML 1.0).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e"
                     "\u2060-\u2069\ufeff\ufff9-\ufffb\ud800-\udfff\ufffe\uffff]")
_MARKDOWN = re.compile(r"([\\`*_{}\[\]<>()#+\-!|~&])")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def neutral(text: str) -> str:
    """``text`` with every unsafe character replaced by its visible escape (tab and newline
    are kept)."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escape, text)


def neutral_value(value):
    """:func:`neutral` applied to every string in ``value`` (dicts, lists, tuples)."""
    if isinstance(value, str):
        return neutral(value)
    if isinstance(value, dict):
        return {k: neutral_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [neutral_value(v) for v in value]
    return value


def backend_label(summary: dict) -> str:
    """The backend as reports show it: its ``Backend.name`` (``backend_name``), else what
    ``--backend`` named (a run written before the name was kept)."""
    return summary.get("backend_name") or summary.get("backend", "")


def markdown_text(text, limit: int = 200) -> str:
    """Any text for one line (a table cell) of summary.md: neutral, on one line, cut to
    ``limit`` characters, every Markdown and HTML special character backslash-escaped."""
    text = " ".join(neutral(str(text)).split())
    if len(text) > limit:
        text = text[:limit] + "…"
    return _MARKDOWN.sub(r"\\\1", text)
