"""An environment of the repository, loaded, validated and modelled: the spec, then build.py.

The one module of the model that imports generators/spec/ (which reads the model's shared
rules): so it is its own module, and callers import the loader from here.
"""

from __future__ import annotations

from pathlib import Path

from generators.layout import ENV_DIR
from generators.model.build import build
from generators.model.environment import Environment
from generators.spec.load import load_environment


def load(root: Path, name: str) -> Environment:
    """Load, validate and model environment `name` of the repository at `root`."""
    _, value = load_environment(root, name)
    return build(value, f"{ENV_DIR}/{name}.yaml")
