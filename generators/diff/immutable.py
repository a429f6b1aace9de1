"""The diff's immutable-field check: each changed object's immutable fields (generators/
immutable.py), as one line at the spec line that made them, with the procedure or the refusal.

The base is the ref the diff compares with (in the PR workflow: main as the PR lands on it),
which is what Argo CD has synced when it is in step with main.
"""

from __future__ import annotations

from pathlib import Path

from generators import immutable
from generators.diff.report import Report
from generators.errors import Problem, SpecError
from generators.spec.load import load_document


def problems(root: Path, report: Report) -> list[tuple[str, Problem]]:
    """(environment, problem): notes (recreated by Argo CD) and errors (refused, with the
    migration), in diff order."""
    out: list[tuple[str, Problem]] = []
    for env in report.envs:
        found = [c for change in env.changes if change.action == "changed" and change.before and change.after
                 for c in immutable.changes(change.before, change.after, change.path)]  # fmt: skip
        if not found:
            continue
        try:
            document = load_document(root, env.name)
        except SpecError:  # the environment was removed or does not load: the rendered file
            document = None
        for change in found:
            at = immutable.spec_path(change, document.value) if document else None
            location = document.locate(at) if document and at is not None else None
            out.append((env.name, immutable.problem(change, location, at)))
    return out
