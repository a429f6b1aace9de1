"""Commands a document or a rendered installer header states, read the way a reader copies
them: `helm upgrade [--install] ...` with its `\\` continuation lines joined, spaces collapsed."""

from __future__ import annotations

import re
from pathlib import Path


def helm_commands(text: str) -> list[str]:
    """Every `helm upgrade [--install]` command in `text`, continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", text)
    found = re.findall(r"helm upgrade (?:--install )?\S+ \S+ (?:--repo \S+ )?--version [^\n]*", joined)
    return [" ".join(c.split()) for c in found]


def header(path: Path) -> str:
    """The leading `# ` comment lines of a rendered file, without the `# `."""
    return "".join(
        line[2:]
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True)
        if line.startswith("# ")
    )


def header_command(path: Path) -> str:
    """The one helm command a rendered installer values file's header states."""
    [command] = helm_commands(header(path))
    return command
