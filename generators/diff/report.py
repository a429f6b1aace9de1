"""Both sides of a diff, compared: per environment, object changes and the model summary.

Working tree: rendered in memory from environments/ (what `render` would write; rendered/
on disk may be stale and is not read). Base: the rendered/ files committed at the ref, and
the ref's environment files loaded with TODAY's code for the summary; when they do not
load (the spec format moved on), the summary is skipped and the report says why.

The immutable-field check: each changed object's immutable fields (generators/gitops/
immutable.py), as one line at the spec line that made them, with the procedure or the
refusal. The base is the ref the diff compares with (in the PR workflow: main as the PR
lands on it), which is what Argo CD has synced when it is in step with main.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generators.diff import gitref
from generators.diff.changes import ObjectChange, compare
from generators.diff.objects import ObjectKey, ObjectRecord, from_files, from_rendering
from generators.diff.summary import EnvSummary, summarize
from generators.errors import Problem, SpecError, once
from generators.gitops import immutable
from generators.layout import ENV_DIR, RENDERED, environment_names
from generators.model.environment import Environment
from generators.model.load import load
from generators.pipeline import fleet
from generators.spec.load import load_document
from generators.speedups.parsereuse import rendered_objects

Pair = tuple[dict[str, Any], dict[str, Any], str]  # (before, after, rendered path)


@dataclass(frozen=True)
class EnvReport:
    name: str
    changes: tuple[ObjectChange, ...]
    summary: EnvSummary | None  # None when the base spec does not load with today's code
    note: str | None  # why there is no summary
    model: Environment | None  # the working tree's model (None: environment removed)

    def count(self, action: str) -> int:
        return sum(1 for c in self.changes if c.action == action)


@dataclass(frozen=True)
class Report:
    base: gitref.Base
    envs: tuple[EnvReport, ...]
    # (environment, problem) per changed immutable field (environment_problems below): notes
    # for what Argo CD recreates, errors for what the API would refuse (they fail the diff)
    immutable: tuple[tuple[str, Problem], ...] = ()

    def immutable_lines(self) -> list[str]:
        """The problems as printed: one line each, a base file's once with its environments."""
        return once([(env, p.location.file, p.format()) for env, p in self.immutable])

    @property
    def refused(self) -> bool:
        return any(p.severity == "error" for _, p in self.immutable)

    @property
    def changed(self) -> bool:
        return any(e.changes or (e.summary and not e.summary.empty) for e in self.envs)


@dataclass(frozen=True)
class _BaseModel:
    env: Environment | None  # None: no such environment at the base
    note: str | None = None  # set when the base file exists but does not load


def _base_models(files: dict[str, bytes]) -> dict[str, _BaseModel]:
    """Load the base's environment files with today's loader, from a scratch copy."""
    with tempfile.TemporaryDirectory(prefix="trainyard-base-") as scratch:
        root = Path(scratch)
        (root / ENV_DIR).mkdir()
        for path, content in files.items():
            if path.startswith(f"{ENV_DIR}/") and path.count("/") == 1:
                (root / path).write_bytes(content)
        names = environment_names(root)
        return dict(zip(names, fleet.map_environments(_load_base, root, names), strict=True))


def _load_base(root: Path, name: str) -> _BaseModel:
    try:
        return _BaseModel(load(root, name))
    except SpecError as exc:
        return _BaseModel(
            None,
            f"the base's {ENV_DIR}/{name}.yaml does not load with "
            f"today's code ({exc.problems[0].format()}); object-level diff only",
        )


def _split_by_env(records: dict[ObjectKey, ObjectRecord]) -> dict[str, dict[ObjectKey, ObjectRecord]]:
    out: dict[str, dict[ObjectKey, ObjectRecord]] = {}
    for key, record in records.items():
        out.setdefault(record.key.env, {})[key] = record
    return out


def build(root: Path, ref: str | None) -> Report:
    base = gitref.resolve(root, ref)
    files = gitref.read_tree(root, base.commit, (RENDERED, ENV_DIR))
    names = environment_names(root)
    loaded = fleet.map_environments(fleet.load_and_render, root, names)  # a process pool
    head_models = {name: env for name, (env, _) in zip(names, loaded, strict=True)}
    head_files = {name: files for name, (_, files) in zip(names, loaded, strict=True)}
    # Base files with exactly today's bytes hold today's objects: only the others are parsed.
    known = {
        path: (text.encode("utf-8"), obj)
        for name, rendered in head_files.items()
        for path, (text, obj) in rendered_objects(name, rendered).items()
    }
    base_objects = _split_by_env(from_files(files, known))
    base_models = _base_models(files)
    envs = []
    for name in sorted(set(head_models) | set(base_objects) | set(base_models)):
        head = head_models.get(name)
        head_objects = from_rendering(name, head_files[name]) if head else {}
        changes = compare(base_objects.get(name, {}), head_objects)
        before = base_models.get(name, _BaseModel(None))
        summary = None if before.note else summarize(before.env, head)
        envs.append(EnvReport(name, tuple(changes), summary, before.note, head))
    return Report(base, tuple(envs), tuple(immutable_problems(root, envs)))


def immutable_problems(root: Path, envs: Iterable[EnvReport]) -> list[tuple[str, Problem]]:
    """(environment, problem): notes (recreated by Argo CD) and errors (refused, with the
    migration), in diff order."""
    out: list[tuple[str, Problem]] = []
    for env in envs:
        pairs = [
            (c.before, c.after, c.path) for c in env.changes if c.action == "changed" and c.before and c.after
        ]
        out += [(env.name, problem) for problem in environment_problems(root, env.name, pairs)]
    return out


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
