"""What a backend hands back across the worker boundary, made safe before it travels.

A backend is foreign code: its messages may hold lone surrogates (which no UTF-8 writer takes),
control characters, or megabytes of text, and ``str()`` of its exception may itself raise; its
``run`` may return ``None``, a bare array or a string instead of a list of arrays. Each of these
must cost the one case it belongs to, never the worker and the cases it owes. Everything here
runs only where there is a message or an output to check; a passing case pays for one type
check per output.
"""
from __future__ import annotations

import re
import traceback

import numpy as np
from numpy import asarray

#: Messages and tracebacks longer than this keep their head and tail (the exception's type and
#: the innermost frames), with a note of how much was left out.
MAX_TEXT = 16_000

# C0 and C1 control characters but tab and newline, and lone surrogates (not encodable as UTF-8)
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
# kinds of arrays no error model judges: objects (but string arrays: objects all str), NumPy's
# fixed-width strings, bytes, dates and durations
_NOT_NUMERIC = frozenset("OUSMm")


def _unjudged(array: np.ndarray) -> bool:
    """Whether no error model judges ``array``: not numbers, booleans or a string array (an
    object array whose elements are all ``str``: conform's string dtype)."""
    kind = array.dtype.kind
    return kind in _NOT_NUMERIC and not (kind == "O" and all(type(s) is str for s in array.flat))


def safe_text(text) -> str:
    """``text`` as a plain ``str`` every writer (UTF-8 JSON, XML, a terminal) can take: at most
    about :data:`MAX_TEXT` characters, control characters (but tab and newline) and lone
    surrogates written as escapes.

    >>> safe_text("bad \\ud800 \\x1b[31mred\\x00")
    'bad \\\\ud800 \\\\x1b[31mred\\\\x00'
    """
    if type(text) is not str:
        text = _text_of(text)
    if len(text) > MAX_TEXT:
        half = MAX_TEXT // 2
        text = (f"{text[:half]}\n... ({len(text) - 2 * half:,} characters left out) ...\n"
                f"{text[-half:]}")
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escape, text)


def _escape(match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _text_of(value) -> str:
    """``str(value)`` as a plain ``str``, or a note saying why there is none."""
    try:
        text = str(value)
        return text if type(text) is str else str.__str__(text)
    except Exception as exc:   # a hostile __str__
        return f"<str() of a {type(value).__name__} raised {type(exc).__name__}>"


def exception_message(exc: BaseException) -> str:
    """``'TypeName: message'`` for ``exc``, made safe (:func:`safe_text`)."""
    return safe_text(f"{_text_of(type(exc).__name__)}: {_text_of(exc)}")


def exception_traceback(exc: BaseException) -> str:
    """``exc``'s formatted traceback, made safe (:func:`safe_text`). The same exception raised
    again through the same code (a runtime's refusal of a model, remembered for every case of
    its key) is formatted once: Python 3.11 parses every frame's line for its carets (~1.5 ms a
    traceback)."""
    key = (id(exc), _frames(exc.__traceback__))
    found = _FORMATTED.get(key)
    if found is not None and found[0] is exc:
        return found[1]
    try:
        text = safe_text("".join(traceback.format_exception(exc)))
    except Exception as error:   # formatting calls the exception's own code
        return safe_text(f"<the traceback could not be formatted: {_text_of(error)}>")
    if len(_FORMATTED) >= 256:
        _FORMATTED.pop(next(iter(_FORMATTED)))
    _FORMATTED[key] = (exc, text)   # the exception kept: its id names no other meanwhile
    return text


#: (exception id, frames) -> (the exception, its formatted traceback), oldest first.
_FORMATTED: dict = {}


def _frames(tb) -> tuple:
    """Where a traceback passes: each frame's code, line and instruction (the carets)."""
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code, tb.tb_lineno, tb.tb_lasti))
        tb = tb.tb_next
    return tuple(frames)


class WrongReturn(TypeError):
    """A backend's ``run`` (or the function its ``prepare`` returned) gave something other than
    a sequence of numeric arrays, one per output."""


def output_count(spec) -> int:
    """How many outputs ``spec``'s op has."""
    return len(spec.outputs)


def checked_outputs(outputs, expected: int) -> list:
    """``outputs`` as a list of NumPy arrays, or raise :class:`WrongReturn` saying what came
    back instead of ``expected`` arrays.

    >>> [a.dtype.name for a in checked_outputs((np.zeros(2, np.float32),), 1)]
    ['float32']

    ``checked_outputs(None, 1)`` raises ``WrongReturn("run() returned None; expected a list of
    1 array (one per output)")``.
    """
    if type(outputs) is list or type(outputs) is tuple:
        arrays = [*map(asarray, outputs)]
        if len(arrays) == expected:
            for array in arrays:
                if array.dtype.kind in _NOT_NUMERIC and _unjudged(array):
                    break
            else:
                return arrays
    return _explained(outputs, expected)


def _explained(outputs, expected: int) -> list:
    """:func:`checked_outputs` beyond its fast path: the arrays of an iterable that is not a
    list or tuple (a generator, say), or :class:`WrongReturn` saying what is wrong."""
    if outputs is None or isinstance(outputs, (str, bytes, dict, np.ndarray, np.generic)) \
            or not hasattr(outputs, "__iter__"):
        raise WrongReturn(f"run() returned {described(outputs)}; expected a list of "
                          f"{_arrays(expected)} (one per output)")
    outputs = list(outputs)
    arrays = [*map(asarray, outputs)]
    if len(arrays) != expected:
        raise WrongReturn(f"run() returned {len(arrays)} outputs; expected {_arrays(expected)} "
                          "(one per output)")
    for index, array in enumerate(arrays):
        if _unjudged(array):
            raise WrongReturn(f"output {index} is {described(outputs[index])}, not an array of "
                              "numbers or booleans")
    return arrays


def _arrays(count: int) -> str:
    return f"{count} array" if count == 1 else f"{count} arrays"


def described(value) -> str:
    """A short description of what a backend returned: its type, and its value if short."""
    if value is None:
        return "None"
    if isinstance(value, np.ndarray):
        return f"a bare {value.dtype} array of shape {value.shape}"
    try:
        text = repr(value)
    except Exception:   # a hostile __repr__
        text = "?"
    shown = text if len(text) <= 60 else text[:57] + "..."
    return f"a {type(value).__name__} ({safe_text(shown)})"
