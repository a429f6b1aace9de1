"""`render [ENV ...] [--check]`: environment files -> rendered/<env>/."""

from __future__ import annotations

import argparse
import sys

from generators.commands import select_environments

HELP = "render environments into rendered/<env>/ (all when none named)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("envs", nargs="*", metavar="ENV", help="environment names (default: all)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; list stale, missing and extra files; exit 1 if any")


def run(args: argparse.Namespace) -> int:
    from generators import model, render
    from generators.errors import SpecError

    names = select_environments(args.root, args.envs)
    if names is None:
        return 2
    rendered = {}
    problems = []
    for name in names:  # load everything first: one bad file means nothing is written
        try:
            rendered[name] = render.render_environment(model.load(args.root, name))
        except SpecError as exc:
            problems.extend(exc.problems)
    if problems:
        for problem in problems:
            print(problem.format(), file=sys.stderr)
        return 1
    everything = not args.envs
    if args.check:
        lines = [line for name in names for line in render.stale(args.root, name, rendered[name])]
        if everything:
            lines += render.unknown_dirs(args.root, set(names))
        for line in lines:
            print(line)
        if lines:
            print(f"{len(lines)} file(s) out of date; run: python generate.py render", file=sys.stderr)
            return 1
        return 0
    for name in names:
        render.write(args.root, name, rendered[name])
    removed = render.remove_unknown(args.root, set(names)) if everything else []
    total = sum(len(files) for files in rendered.values())
    print(f"rendered {total} objects for {len(names)} environment(s)"
          + (f"; removed {', '.join(removed)}" if removed else ""))
    return 0
