"""Placeholders of the shipped examples, warned about in an environment that is not one.

The shipped environments (dev, staging, prod) and the schema defaults name things nobody
owns: the repository https://github.com/example/trainyard.git, the runbook links under
it, images under ghcr.io/example/. They are valid values, so the
schema passes them, and an environment copied from an example renders and validates clean
while Argo CD would sync from a repository that is not the fork and the nodes would pull
images no registry serves. So every string of the defaulted spec that
carries one is a warning at its line:col (printed, the environment still renders: a fork
may render before its images exist), unless the file says it is an example (`example: true`,
as the shipped ones do). Decision recorded in docs/adopting.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from generators.errors import Problem, format_path
from generators.spec.source import Document

# github.com/example/... or ghcr.io/example/...: the example owner of the repository, the
# runbook links and the images. Hosts such as *.example.com are not matched: a guide's
# reader fills those in, and nothing is fetched from them before they are.
PLACEHOLDER = re.compile(r"(?:github\.com|ghcr\.io)/example(?:/|$)")
HINT = "use your own (docs/adopting.md), or mark an example environment with `example: true`"

Path_ = tuple[str | int, ...]


def _strings(value: Any, path: Path_ = ()) -> Iterator[tuple[Path_, str]]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _strings(child, (*path, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _strings(child, (*path, i))
    elif isinstance(value, str):
        yield path, value


def _why(path: Path_) -> str:
    last = str(path[-1])
    if last == "repoURL":
        return "Argo CD would sync this environment from the example repository, not yours"
    if last == "repository" or "image" in path:
        return "no registry serves it: the pods would never start (ImagePullBackOff)"
    if last.startswith("runbookUrl"):
        return "alert runbook links would open the example repository"
    return "nobody you know owns it"


def _written(doc: Document, path: Path_) -> bool:
    """Whether a file states the value (else it is the schema's default)."""
    node: Any = doc.value
    for part in path:
        in_dict = isinstance(node, dict) and part in node
        if not (in_dict or (isinstance(node, list) and isinstance(part, int) and part < len(node))):
            return False
        node = node[part]
    return True


def check(doc: Document, value: dict[str, Any]) -> list[Problem]:
    if value.get("example"):
        return []
    return [
        Problem(
            doc.locate(path),
            ("" if _written(doc, path) else "the default ")
            + f"{text!r} is a placeholder of the shipped examples: {_why(path)}",
            format_path(path),
            HINT,
            severity="warning",
        )
        for path, text in _strings(value)
        if PLACEHOLDER.search(text)
    ]
