"""`plan ENV`: pools, team quotas and priority tiers of one environment, as tables."""

from __future__ import annotations

import argparse
import sys

from generators.commands import add_env_argument, select_environments

HELP = "print the capacity and queue plan of one environment: pools, team quotas, priority tiers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_env_argument(parser)


def run(args: argparse.Namespace) -> int:
    from generators.model.load import load
    from generators.output.plan import plan

    if select_environments(args.root, [args.env]) is None:
        return 2
    sys.stdout.write(plan(load(args.root, args.env)))
    return 0
