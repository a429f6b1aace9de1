"""What the speed-up layers must give back: the objects parsing gives, exactly (used by the
shape and parse-reuse tests of this folder; a test module does not import another)."""

from __future__ import annotations

from typing import Any


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types and the same key order all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b or (a != a and b != b))  # NaN
