"""Frozen model of an environment; see types.py (shapes), quota.py (derivation), build.py."""

from __future__ import annotations

from pathlib import Path

from generators.layout import ENV_DIR
from generators.model.build import build
from generators.model.types import Environment
from generators.spec.load import load_environment


def load(root: Path, name: str) -> Environment:
    """Load, validate and model environment `name` of the repository at `root`."""
    _, value = load_environment(root, name)
    return build(value, f"{ENV_DIR}/{name}.yaml")


__all__ = ["Environment", "load"]
