"""json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False), faster, same bytes.

Why: with `indent`, the standard library falls back from its C encoder to a generator-based
Python one; for the ~25 kB dashboard JSON of every environment that was the largest single
cost of a render after the YAML work (docs/performance.md). This builds the same text with
one join per container and the C string quoter. tests/test_jsontext.py proves the bytes equal
the standard library's for arbitrary JSON data.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring  # the C implementation when available
from typing import Any

_INDENT = "  "


class _Unusual(Exception):
    """A value outside plain JSON data: let the standard library handle the whole thing."""


def dumps_sorted_indented(value: Any) -> str:
    try:
        return _encode(value, "\n")
    except _Unusual:
        return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _encode(value: Any, newline: str) -> str:
    """`newline` is a line break plus the indent of the line `value` starts on."""
    if isinstance(value, str):
        return encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    inner = newline + _INDENT
    if isinstance(value, dict):
        if not value:
            return "{}"
        if not all(isinstance(key, str) for key in value):
            raise _Unusual  # json converts and sorts other key types its own way
        items = sorted(value.items(), key=lambda item: item[0])
        body = ("," + inner).join(f"{encode_basestring(k)}: {_encode(v, inner)}" for k, v in items)
        return "{" + inner + body + newline + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        return "[" + inner + ("," + inner).join(_encode(v, inner) for v in value) + newline + "]"
    raise _Unusual
