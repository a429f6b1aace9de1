"""CLI commands, one module each (see generators/cli.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def select_environments(root: Path, names: list[str]) -> list[str] | None:
    """The named environments (all shipped ones if none), or None after a usage message."""
    from generators.layout import environment_names

    known = environment_names(root)
    unknown = [n for n in names if n not in known]
    if unknown:
        print(
            f"generate.py: error: unknown environment {unknown[0]!r}; known: {', '.join(known)}",
            file=sys.stderr,
        )
        return None
    return names or known


def add_env_argument(parser: argparse.ArgumentParser) -> None:
    """The one environment a command works on, by name."""
    parser.add_argument("env", metavar="ENV", help="environment name (environments/<ENV>.yaml)")


def add_envs_argument(parser: argparse.ArgumentParser) -> None:
    """The environments a command works on; select_environments() resolves them."""
    parser.add_argument("envs", nargs="*", metavar="ENV", help="environment names (default: all)")


def add_timeout_argument(parser: argparse.ArgumentParser, default: float, per: str) -> None:
    """`--timeout SECONDS`: how long one network request of the command may take."""
    parser.add_argument(
        "--timeout",
        type=float,
        default=default,
        metavar="SECONDS",
        help=f"seconds {per} (default {default:g})",
    )


def add_scale_argument(parser: argparse.ArgumentParser, only: str = "") -> None:
    """`--scale N`: the environment with its node counts divided by N (box/scale.py), the same
    for `box up` and `simulate`; `only` names the action it applies to, if not all."""
    parser.add_argument(
        "--scale",
        type=int,
        default=1,
        metavar="N",
        help=f"{only}divide the environment's node counts by N (a scaled copy of the spec is rendered; "
        "quotas follow)",
    )
