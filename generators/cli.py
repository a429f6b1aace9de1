"""Command line: `python generate.py <command> ...`. Exit 0 ok, 1 findings, 2 usage.

Each command is a module with `HELP`, `add_arguments(parser)` and `run(args) -> int`: the
renderer's in generators/commands/<command>.py, the cluster in a box's and the what-if's in
their own top-level packages (box/, whatif/). Those are named here as strings and loaded only
when the parser is built, so nothing under generators/ imports the box or the what-if
(tests/test_import_graph.py). Command modules import heavy libraries inside run(), so that
`generate.py --help` stays fast.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys
from pathlib import Path

from generators.errors import SpecError

COMMANDS: dict[str, str] = {
    "render": "generators.commands.render",
    "validate": "generators.commands.validate",
    "diff": "generators.commands.diff",
    "plan": "generators.commands.plan",
    "sync-inventory": "generators.commands.sync_inventory",
    "doctor": "generators.commands.doctor",
    "fetch-crds": "generators.commands.fetch_crds",
    "box": "box.command",
    "simulate": "whatif.simulate_command",
    "trace": "whatif.trace_command",
}
ROOT = Path(__file__).resolve().parents[1]


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="generate.py",
        description="Render, validate and diff the GitOps tree of shared GPU clusters "
        "from environments/<env>.yaml.",
    )
    top.add_argument(
        "-C",
        dest="root",
        type=Path,
        default=None,
        metavar="DIR",
        help="run as if started in DIR (a checkout with environments/ and rendered/)",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, path in COMMANDS.items():
        module = importlib.import_module(path)
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(run=module.run, command_parser=command)
    return top


def _parse(argv: list[str] | None) -> argparse.Namespace:
    """Arguments; an unknown option of a command is reported with that command's usage (plain
    argparse prints the top-level usage, which does not list `--check`), with a close match."""
    args, extra = parser().parse_known_args(argv)
    if extra:
        command: argparse.ArgumentParser = args.command_parser
        options = [o for action in command._actions for o in action.option_strings]
        close = difflib.get_close_matches(extra[0], options, n=1)
        command.error(
            f"unrecognized arguments: {' '.join(extra)}" + (f"; did you mean {close[0]}?" if close else "")
        )
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    args.root = (args.root or ROOT).resolve()
    try:
        code: int = args.run(args)
    except SpecError as exc:
        for problem in exc.problems:
            print(problem.format(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return code
