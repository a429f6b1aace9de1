"""`render [ENV ...] [--check]`: environment files -> rendered/<env>/."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from generators.commands import add_envs_argument, select_environments
from generators.errors import once

if TYPE_CHECKING:  # imported inside run(), so that --help is fast
    from generators.pipeline import fleet

HELP = "render environments into rendered/<env>/ (all when none named)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_envs_argument(parser)
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; list stale, missing and extra files; exit 1 if any",
    )


def run(args: argparse.Namespace) -> int:
    from generators import layout
    from generators.speedups import renderstamp

    names = select_environments(args.root, args.envs)
    if names is None:
        return 2
    inputs = renderstamp.inputs_key(args.root)
    # --check: environments whose stamp vouches for rendered/<env>/ are not rendered again
    # (generators/speedups/renderstamp.py); only stdlib has been imported so far.
    fresh = renderstamp.fresh(args.root, names) if args.check else set()
    todo = [name for name in names if name not in fresh]
    if not todo:
        return _report_stale(args, names, [])
    from generators.pipeline import fleet, render

    # Everything is loaded and rendered before anything is written: one bad file means
    # nothing is written. Several environments render in a process pool (generators/pipeline/fleet.py).
    work = fleet.check_stale if args.check else fleet.render_staged
    base_existed = (args.root / layout.RENDERED).is_dir()
    try:
        outcomes = fleet.map_environments(work, args.root, todo)
        problems = [
            (outcome.name, problem.location.file, problem.format())
            for outcome in outcomes
            for problem in outcome.problems
        ]
        if problems:
            for line in once(problems):
                print(line, file=sys.stderr)
            return 1
        code = _report_stale(args, names, outcomes) if args.check else _write(args, names, outcomes)
        if renderstamp.inputs_key(args.root) == inputs:  # nothing was edited meanwhile
            renderstamp.store(inputs, {outcome.name: outcome.digest for outcome in outcomes})
        return code
    finally:  # after a failure: staged trees never swapped in, and a rendered/ made for them
        render.discard_staged(args.root, todo, remove_empty_base=not base_existed)


def _report_stale(args: argparse.Namespace, names: list[str], outcomes: list[fleet.Outcome]) -> int:
    from generators import layout

    lines = [line for outcome in outcomes for line in outcome.stale]
    if not args.envs:
        lines += layout.unknown_dirs(args.root, set(names))
    for line in lines:
        print(line)
    if lines:
        print(f"{len(lines)} file(s) out of date; run: python generate.py render", file=sys.stderr)
        return 1
    # one line on success, so a hook or CI log shows what was checked (silence read as "skipped")
    print(f"render --check: rendered/ matches {len(names)} environment(s) ({', '.join(names)})")
    return 0


def _write(args: argparse.Namespace, names: list[str], outcomes: list[fleet.Outcome]) -> int:
    from generators.pipeline import render

    for outcome in outcomes:
        render.swap(args.root, outcome.name, Path(outcome.staged))
    removed = render.remove_unknown(args.root, set(names)) if not args.envs else []
    total = sum(outcome.objects for outcome in outcomes)
    print(
        f"rendered {total} objects for {len(names)} environment(s)"
        + (f"; removed {', '.join(removed)}" if removed else "")
    )
    return 0
