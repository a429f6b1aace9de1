"""Per-environment work over many environments, on every core: render and render --check.

Environments are independent (one file in, one rendered/<env>/ out), so a fleet renders in
a process pool, one environment per task. Workers are forked after the generators are
imported, so they start warm. A worker returns a small Outcome, never live objects: a
render writes its files into a staging directory, and the parent only swaps the staged trees
into place once every environment rendered (one bad environment: nothing is written).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from generators.components import registry  # noqa: F401  (imports every component once, before forking)
from generators.errors import Problem, SpecError
from generators.model.environment import Environment
from generators.model.load import load
from generators.output import templating
from generators.pipeline import render
from generators.speedups import keys

T = TypeVar("T")


def cores() -> int:
    """CPUs this process may run on (a CI container's quota, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def map_environments(work: Callable[[Path, str], T], root: Path, names: Sequence[str]) -> list[T]:
    """[work(root, name) for name in names], in order; in a pool of forked workers when there
    are several environments and several cores. `work` must be a module-level function."""
    jobs = min(len(names), cores())
    if jobs < 2:
        return [work(root, name) for name in names]
    import multiprocessing  # with concurrent.futures ~30 ms to import: not for one environment
    from concurrent.futures import ProcessPoolExecutor

    if "fork" not in multiprocessing.get_all_start_methods():
        return [work(root, name) for name in names]
    templates = templating.environment()
    for name in templates.list_templates():
        templates.get_template(name)
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        return list(pool.map(work, [root] * len(names), names))


@dataclass(frozen=True)
class Outcome:
    """One environment's result: its spec problems, else its files' text or stale lines."""

    name: str
    problems: tuple[Problem, ...] = ()
    staged: str = ""  # rendered/.tmp-<env>-*/ written by the worker, to be swapped in
    objects: int = 0
    stale: tuple[str, ...] = ()
    digest: str = ""  # keys.digest() of the files this environment renders


def _digest(files: Sequence[render.RenderedFile]) -> str:
    return keys.digest((f.path, f.text.encode("utf-8")) for f in files)


def render_staged(root: Path, name: str) -> Outcome:
    """Render and write into a staging directory: workers create the files in parallel (on
    a busy disk each new file costs ~0.2 ms of system time), the parent only renames."""
    try:
        files = render.render_tree(load(root, name))
    except SpecError as error:
        return Outcome(name, tuple(error.problems))
    return Outcome(
        name,
        staged=str(render.stage(root, name, files)),
        objects=len(render.objects(files)),
        digest=_digest(files),
    )


def check_stale(root: Path, name: str) -> Outcome:
    try:
        files = render.render_tree(load(root, name))
    except SpecError as error:
        return Outcome(name, tuple(error.problems))
    return Outcome(name, stale=tuple(render.stale(root, name, files)), digest=_digest(files))


def load_and_render(root: Path, name: str) -> tuple[Environment, list[render.RenderedFile]]:
    """The model and rendered files of one environment (SpecError propagates)."""
    env = load(root, name)
    return env, render.render_tree(env)
