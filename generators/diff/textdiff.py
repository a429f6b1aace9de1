"""Changed text shown where it differs: a long changed string as a window around its first
difference, and one object's unified YAML diff.

A PromQL expression is one line of 2,500 characters; printed whole on both sides it floods
the diff, and cut to a prefix both sides look the same. So a long changed string is shown
as a window around its first difference, with the position, on both sides.

The unified diff of one object is in our canonical YAML on both sides (so a base rendered
by an older emitter shows only real changes, not formatting), secrets masked, and its long
changed lines narrowed the same way.
"""

from __future__ import annotations

import difflib

from generators.diff.changes import ObjectChange, masked_pair
from generators.output import yamlemit

CONTEXT = 30  # characters of unchanged text shown on each side of the difference
MAX_CHANGE = 80  # characters of the changed middle shown per side
UNIFIED_CONTEXT_LINES = 3
UNIFIED_LONG_LINE = 200  # changed lines longer than this show where they differ (single-line PromQL)


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _common_suffix(a: str, b: str, prefix: int) -> int:
    n = min(len(a), len(b)) - prefix
    i = 0
    while i < n and a[-1 - i] == b[-1 - i]:
        i += 1
    return i


def _window(text: str, start: int, end: int) -> str:
    middle = text[start:end]
    if len(middle) > MAX_CHANGE:
        middle = middle[:MAX_CHANGE] + "…"
    head = text[max(0, start - CONTEXT) : start]
    tail = text[end : end + CONTEXT]
    return (
        ("…" if start > CONTEXT else "") + head + middle + tail + ("…" if end + CONTEXT < len(text) else "")
    )


def narrow(before: str, after: str) -> tuple[str, str, int]:
    """(before window, after window, 0-based offset of the first difference)."""
    prefix = _common_prefix(before, after)
    suffix = _common_suffix(before, after, prefix)
    return (
        _window(before, prefix, len(before) - suffix),
        _window(after, prefix, len(after) - suffix),
        prefix,
    )


def narrow_lines(lines: list[str], limit: int) -> list[str]:
    """Unified-diff lines with each long `-`/`+` pair of a change narrowed to where the two
    differ (`-…ctx OLD ctx…`); short lines and context lines stay as they are."""
    out = list(lines)
    i = 0
    while i < len(out):
        j = i
        while j < len(out) and out[j].startswith("-") and not out[j].startswith("---"):
            j += 1
        k = j
        while k < len(out) and out[k].startswith("+") and not out[k].startswith("+++"):
            k += 1
        for m in range(min(j - i, k - j)):
            old, new = out[i + m], out[j + m]
            if max(len(old), len(new)) > limit:
                end = "\n" if old.endswith("\n") else ""
                a, b, at = narrow(old[1:].rstrip("\n"), new[1:].rstrip("\n"))
                out[i + m] = f"-{a}  [from column {at + 1}]{end}"
                out[j + m] = f"+{b}  [from column {at + 1}]{end}"
        i = max(k, i + 1)
    return out


def unified(change: ObjectChange, max_lines: int) -> tuple[str, int]:
    """The diff text (at most `max_lines` lines) and how many lines were cut."""
    before, after = masked_pair(change.key.kind, change.before, change.after)
    old = yamlemit.dump(before).splitlines(keepends=True) if before is not None else []
    new = yamlemit.dump(after).splitlines(keepends=True) if after is not None else []
    lines = list(
        difflib.unified_diff(
            old,
            new,
            fromfile=f"a/{change.path}" if before is not None else "/dev/null",
            tofile=f"b/{change.path}" if after is not None else "/dev/null",
            n=UNIFIED_CONTEXT_LINES,
        )
    )
    lines = narrow_lines([line if line.endswith("\n") else line + "\n" for line in lines], UNIFIED_LONG_LINE)
    cut = max(0, len(lines) - max_lines)
    return "".join(lines[:max_lines]), cut
