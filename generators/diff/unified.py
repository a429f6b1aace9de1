"""Unified YAML diff of one object, secrets masked, in our canonical YAML on both sides
(so a base rendered by an older emitter shows only real changes, not formatting)."""

from __future__ import annotations

import difflib

from generators.diff.changes import ObjectChange
from generators.diff.masking import masked_pair
from generators.diff.strings import narrow_lines
from generators.output import yamlemit

CONTEXT_LINES = 3
LONG_LINE = 200  # changed lines longer than this show where they differ (single-line PromQL)


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
            n=CONTEXT_LINES,
        )
    )
    lines = narrow_lines([line if line.endswith("\n") else line + "\n" for line in lines], LONG_LINE)
    cut = max(0, len(lines) - max_lines)
    return "".join(lines[:max_lines]), cut
