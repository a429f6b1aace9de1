"""Per-environment work over many environments (render, check, validate's Python part)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def map_environments(work: Callable[[Path, str], T], root: Path, names: Sequence[str]) -> list[T]:
    """[work(root, name) for name in names], in order."""
    return [work(root, name) for name in names]
