"""Long strings that changed, shown where they differ.

A PromQL expression is one line of 2,500 characters; printed whole on both sides it floods
the diff, and cut to a prefix both sides look the same. So a long changed string is shown
as a window around its first difference, with the position, on both sides.
"""

from __future__ import annotations

CONTEXT = 30  # characters of unchanged text shown on each side of the difference
MAX_CHANGE = 80  # characters of the changed middle shown per side


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
