"""What the section rules (generators/model/checks/) share: a Problem is
located at the value its path names (or at its key), with the path as the spec path."""

from __future__ import annotations

from typing import Any

from generators.errors import Problem, format_path
from generators.spec.source import Document

Path_ = tuple[str | int, ...]


class Checker:
    section: Path_ = ()  # the paths given to add() and warn() are relative to it

    def __init__(self, doc: Document, value: dict[str, Any]) -> None:
        self.doc = doc
        self.v = value
        self.problems: list[Problem] = []

    def add(self, path: Path_, message: str, hint: str = "", *, key: bool = False) -> None:
        full = (*self.section, *path)
        self.problems.append(Problem(self.doc.locate(full, key=key), message, format_path(full), hint))

    def warn(self, path: Path_, message: str, hint: str = "") -> None:
        full = (*self.section, *path)
        self.problems.append(
            Problem(self.doc.locate(full), message, format_path(full), hint, severity="warning")
        )
