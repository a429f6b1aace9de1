"""The diff's immutable-field check: each changed object's immutable fields (generators/
immutable.py), as one line at the spec line that made them, with the procedure or the refusal.

The base is the ref the diff compares with (in the PR workflow: main as the PR lands on it),
which is what Argo CD has synced when it is in step with main.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from generators.errors import Problem, SpecError
from generators.gitops import immutable
from generators.spec.load import load_document

Pair = tuple[dict[str, Any], dict[str, Any], str]  # (before, after, rendered path)


def environment_problems(root: Path, name: str, pairs: Iterable[Pair]) -> list[Problem]:
    """The lines for one environment's changed objects, located in its spec at `root`."""
    found = [c for before, after, path in pairs for c in immutable.changes(before, after, path)]
    if not found:
        return []
    try:
        document = load_document(root, name)
    except SpecError:  # the environment was removed or does not load: the rendered file
        document = None
    out = []
    for change in found:
        at = immutable.spec_path(change, document.value) if document else None
        location = document.locate(at) if document and at is not None else None
        out.append(immutable.problem(change, location, at))
    return out
