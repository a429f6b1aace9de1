"""Plain-text tables for terminals: aligned columns, numbers right-aligned."""

from __future__ import annotations

import re
from collections.abc import Sequence

_NUMERIC = re.compile(r"[0-9][0-9.,]*[A-Za-z]*( / .*)?|-")


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns separated by two spaces; a column whose cells all look numeric (or '-') is
    right-aligned, so digits line up."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(header)]
    right = [bool(cells) and all(_NUMERIC.fullmatch(r[i]) for r in cells) for i in range(len(header))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right, strict=True)
        ).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in cells)])
