"""Per-environment work over many environments, on every core: render and render --check.

Environments are independent (one file in, one rendered/<env>/ out), so a fleet renders in
a process pool, one environment per task. Workers are forked after the generators are
imported, so they start warm. A worker returns text, never live objects: pickling 4,300
rendered files' text costs milliseconds, and the parent decides what is written.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from generators import model, render
from generators.components import COMPONENTS
from generators.errors import Problem, SpecError

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
    if jobs < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return [work(root, name) for name in names]
    for component in COMPONENTS:  # imported once here, inherited by every worker
        importlib.import_module(f"generators.components.{component}")
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        return list(pool.map(work, [root] * len(names), names))


@dataclass(frozen=True)
class Outcome:
    """One environment's result: its spec problems, else its files' text or stale lines."""

    name: str
    problems: tuple[Problem, ...] = ()
    files: tuple[render.FileText, ...] = ()
    stale: tuple[str, ...] = ()


def render_texts(root: Path, name: str) -> Outcome:
    try:
        files = render.render_environment(model.load(root, name))
    except SpecError as error:
        return Outcome(name, tuple(error.problems))
    return Outcome(name, files=tuple(render.FileText(f.path, f.text) for f in files))


def check_stale(root: Path, name: str) -> Outcome:
    try:
        files = render.render_environment(model.load(root, name))
    except SpecError as error:
        return Outcome(name, tuple(error.problems))
    return Outcome(name, stale=tuple(render.stale(root, name, files)))
