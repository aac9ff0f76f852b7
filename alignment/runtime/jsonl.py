"""JSON lines in: one JSON object per line, strictly, with one-line errors naming file, line, field.

Every JSONL input (judge input, label files, AQuA-RAT json lines for `alignment build`) is read
here, so each refuses the same things the same way: bytes that are not UTF-8, a line that is not
JSON, a JSON array (a whole file written as `[...]`, or an array on one line) where one object
per line is expected, a field given twice in one object (JSON parsers keep the last silently),
numbers JSON cannot hold (`NaN`, `Infinity`, or `1e999`, which Python reads as infinity) and
nesting too deep to parse. Blank lines are skipped; a line's number counts them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from alignment.errors import UserError


class JsonlError(UserError):
    """Bad JSON lines; from `parse_line` the reason alone (the caller adds file and line)."""


class _NonFinite(float):
    """A number JSON cannot hold, remembering how the line wrote it (NaN, Infinity, 1e999)."""

    text = ""


def _float(text: str) -> float:
    value = float(text)
    if math.isfinite(value):
        return value
    out = _NonFinite(value)
    out.text = text
    return out


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise JsonlError(f"field {key!r} appears twice in one object")
        out[key] = value
    return out


def _non_finite(value: Any) -> tuple[str, float] | None:
    """The path and value of the first non-finite number inside `value` (None when there is
    none); a stack, not recursion: the parser allows nesting deeper than the recursion limit.

    >>> _non_finite({"a": [1, {"b": float("nan")}]})
    ("'a'[1].'b'", nan)
    >>> _non_finite({"a": 1.5}) is None
    True
    """
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            return path, v
        if isinstance(v, dict):
            stack += [(f"{path}.{k!r}" if path else repr(k), x) for k, x in v.items()]
        elif isinstance(v, list):
            stack += [(f"{path}[{i}]", x) for i, x in enumerate(v)]
    return None


def parse_line(line: str) -> dict[str, Any]:
    """One line as a JSON object; `JsonlError` says what is wrong with it.

    >>> parse_line('{"a": 1}')
    {'a': 1}
    >>> parse_line('{"a": 1e999}')
    Traceback (most recent call last):
    alignment.runtime.jsonl.JsonlError: not valid JSON (field 'a': 1e999 is not a finite number)
    """
    try:
        row = json.loads(line, object_pairs_hook=_no_duplicates, parse_float=_float, parse_constant=_float)
    except JsonlError:
        raise
    except json.JSONDecodeError as e:
        raise JsonlError(f"not valid JSON ({e.msg})") from None
    except ValueError as e:  # integers longer than Python converts
        raise JsonlError(f"not valid JSON ({e})") from None
    except RecursionError:
        raise JsonlError("JSON nested too deeply") from None
    if isinstance(row, list):
        raise JsonlError("a JSON array; expected one JSON object per line")
    if not isinstance(row, dict):
        raise JsonlError(f"expected a JSON object, got {type(row).__name__}")
    bad = _non_finite(row)
    if bad is not None:
        field, value = bad
        raise JsonlError(f"not valid JSON (field {field}: {getattr(value, 'text', value)} is not a finite number)")
    return row


def read_text(path: Path, what: str) -> str:
    """The file as UTF-8 text, or a one-line error (missing, a folder, unreadable, not UTF-8)."""
    if path.is_dir():
        raise JsonlError(f"{path}: is a directory, expected {what}")
    if not path.is_file():
        raise JsonlError(f"input file not found: {path}")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise JsonlError(f"{path}: not UTF-8 text (byte {e.start}); expected {what}") from None
    except OSError as e:
        raise JsonlError(f"{path}: cannot read ({e.strerror})") from None


def read_objects(path: str | Path, what: str = "JSON lines, one object per line") -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; `JsonlError` names the file and line.

    Lines are split on newlines only: JSON strings may hold U+2028 and other characters that
    `str.splitlines` would treat as line breaks.
    """
    p = Path(path)
    text = read_text(p, what)
    if text.lstrip().startswith("[") and not text.lstrip().split("\n", 1)[0].rstrip().endswith("]"):
        raise JsonlError(f"{p} line 1: a JSON array over several lines; expected {what}")
    out = []
    for n, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            out.append((n, parse_line(line)))
        except JsonlError as e:
            raise JsonlError(f"{p} line {n}: {e}") from None
    return out
