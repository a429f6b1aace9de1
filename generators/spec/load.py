"""Environment file -> schema-valid, defaulted plain data (or SpecError). No model yet: the
cross-field checks follow in generators/model/load.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from generators.errors import Location, Problem, SpecError
from generators.layout import ENV_DIR, environment_names
from generators.spec import schema
from generators.spec.source import Document, load_file, merge

MAX_EXTENDS_DEPTH = 4


def load_document(root: Path, name: str) -> Document:
    """The environment file merged over its `extends:` chain."""
    path = root / ENV_DIR / f"{name}.yaml"
    chain: list[Document] = []
    seen: set[Path] = set()
    names: list[str] = []
    display = f"{ENV_DIR}/{name}.yaml"
    while True:
        if path.resolve() in seen:
            files = [*names, path.name]
            raise SpecError(
                [
                    Problem(
                        chain[-1].locate(("extends",)),
                        "extends: forms a cycle: " + " -> ".join(files),
                        "extends",
                        "one of these files must not extend the next",
                    )
                ]
            )
        if len(chain) > MAX_EXTENDS_DEPTH:
            raise SpecError(
                [
                    Problem(
                        chain[-1].locate(("extends",)),
                        f"extends: chain deeper than {MAX_EXTENDS_DEPTH}",
                        "extends",
                    )
                ]
            )
        seen.add(path.resolve())
        names.append(path.name)
        doc = load_file(path, display)
        chain.append(doc)
        parent = doc.value.get("extends")
        if parent is None:
            break
        if not isinstance(parent, str) or "/" in parent or parent.startswith("."):
            raise SpecError(
                [
                    Problem(
                        doc.locate(("extends",)),
                        "extends must name a file in the same folder",
                        "extends",
                        "e.g. extends: _defaults.yaml",
                    )
                ]
            )
        path = path.parent / parent
        display = f"{ENV_DIR}/{parent}"
        if not path.is_file():
            raise SpecError([Problem(doc.locate(("extends",)), f"base file {parent!r} not found", "extends")])
    merged = chain[-1]
    for overlay in reversed(chain[:-1]):
        merged = merge(merged, overlay)
    merged.value.pop("extends", None)
    return merged


def load_valid(root: Path, name: str) -> tuple[Document, dict[str, Any]]:
    """Load, schema-check and default environment `name` (the cross-field checks are the
    model's: generators/model/load.load_environment runs them on this)."""
    if not (root / ENV_DIR / f"{name}.yaml").is_file():
        known = environment_names(root)
        raise SpecError(
            [
                Problem(
                    Location(f"{ENV_DIR}/{name}.yaml"),
                    f"no environment named {name!r}",
                    hint=f"known environments: {', '.join(known) or 'none'}",
                )
            ]
        )
    doc = load_document(root, name)
    problems = schema.check(doc)
    if problems:
        raise SpecError(problems)
    return doc, schema.apply_defaults(doc.value)
