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
