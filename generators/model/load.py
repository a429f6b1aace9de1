"""An environment of the repository, loaded, validated and modelled: the spec's load
(positions, schema, defaults), the cross-field checks (checks/), then build.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from generators.errors import SpecError
from generators.layout import ENV_DIR
from generators.model.build import build
from generators.model.checks import semantics
from generators.model.environment import Environment
from generators.spec.load import load_valid
from generators.spec.source import Document


def load_environment(root: Path, name: str) -> tuple[Document, dict[str, Any]]:
    """Load, schema-check, default and cross-check environment `name`: the plain data
    build() takes, and the document it came from (SpecError on any error; warnings are
    printed and the value returned)."""
    doc, value = load_valid(root, name)
    problems = semantics.check(doc, value, name)
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        raise SpecError(errors)
    for warning in problems:  # nothing invalid: say it, render anyway
        print(warning.format(), file=sys.stderr)
    return doc, value


def load(root: Path, name: str) -> Environment:
    """Load, validate and model environment `name` of the repository at `root`."""
    _, value = load_environment(root, name)
    return build(value, f"{ENV_DIR}/{name}.yaml")
