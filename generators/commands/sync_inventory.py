"""`sync-inventory ENV --nodes FILE`: pools' `nodes:` from `kubectl get nodes -o json`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from generators.commands import add_env_argument, select_environments

if TYPE_CHECKING:  # imported when an argument is converted: not on every start-up
    from fractions import Fraction

HELP = (
    "update the pools' node counts in environments/<ENV>.yaml from `kubectl get nodes -o json` "
    "(Ready, schedulable nodes only; comments and layout kept)"
)
DEFAULT_MAX_DROP = "0.25"


def _fraction(text: str) -> Fraction:
    from fractions import Fraction

    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_env_argument(parser)
    parser.add_argument(
        "--nodes",
        metavar="FILE",
        required=True,
        type=Path,
        help="output of `kubectl get nodes -o json` for the environment's cluster",
    )
    parser.add_argument(
        "--max-drop-fraction",
        metavar="F",
        type=_fraction,
        default=_fraction(DEFAULT_MAX_DROP),
        help=f"refuse when a pool would lose more than this fraction of its nodes at "
        f"once (default {DEFAULT_MAX_DROP})",
    )
    parser.add_argument("--dry-run", action="store_true", help="print what would change; write nothing")


def run(args: argparse.Namespace) -> int:
    from generators.inventory import edit, nodes, sync

    if select_environments(args.root, [args.env]) is None:
        return 2
    try:
        node_list = nodes.read(args.nodes)
    except OSError as exc:
        print(f"generate.py sync-inventory: error: cannot read {args.nodes}: {exc.strerror}", file=sys.stderr)
        return 2
    except nodes.NodeListError as exc:
        print(f"{args.nodes}: error: {exc}", file=sys.stderr)
        return 1
    planned = sync.plan_sync(args.root, args.env, node_list, str(args.nodes), args.max_drop_fraction)
    print(f"{args.env}: {len(node_list)} nodes read from {args.nodes}")
    for update in planned.updates:
        print(f"  {update.describe()}")
    if planned.refusals:
        for line in planned.refusals:
            print(line, file=sys.stderr)
        print(f"refused: nothing written ({len(planned.refusals)} problem(s))", file=sys.stderr)
        return 1
    if planned.edit is None:
        print("node counts already match; nothing to write")
    elif args.dry_run:
        print(f"dry run: {planned.edit.display} not written")
    else:
        edit.write(planned.edit)
        print(f"wrote {planned.edit.display}; next: python generate.py render {args.env}")
    return 0
