"""Commands a document or a rendered installer header states, read the way a reader copies
them: `helm upgrade [--install] ...` with its `\\` continuation lines joined, spaces collapsed."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import yaml

from tests.support import ROOT

README_JOB_MARKER = "<!-- recipe:training-job -->"


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


def readme_job(name: str) -> dict[str, Any]:
    """README's training Job (the YAML block after its recipe marker), named `<name>-<random>`
    so two tests on one box never collide."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(.*?)```", text[text.index(README_JOB_MARKER) :], re.DOTALL)
    assert block is not None
    job: dict[str, Any] = yaml.safe_load(block.group(1))
    job["metadata"]["name"] = f"{name}-{uuid.uuid4().hex[:6]}"
    return job
