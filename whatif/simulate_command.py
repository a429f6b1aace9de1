"""`simulate ENV --trace FILE [--base REF] [--speed X] [--until SECONDS] [--scale N] [--format ...]`:
replay a job trace on the real Kueue and controllers of a cluster in a box, for the working
tree and the base ref (docs/whatif.md)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from generators.commands import add_env_argument, add_scale_argument, select_environments

HELP = (
    "replay a job trace against the rendered queues on a cluster in a box (real Kueue, scheduler, "
    "controllers), for the working tree and --base REF; report waits, GPU-hours, preemptions"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_env_argument(parser)
    parser.add_argument(
        "--trace",
        type=Path,
        metavar="FILE",
        help="the job trace (docs/whatif.md, The trace format); default the spec's whatif.trace "
        "at its whatif.speed",
    )
    parser.add_argument(
        "--base",
        metavar="REF",
        help="also replay on environments/ as committed at REF and report base -> head",
    )
    parser.add_argument(
        "--speed",
        type=int,
        metavar="X",
        help="divide the trace's arrivals and durations and the controllers' durations "
        "by X (default: the spec's whatif.speed, else that key's schema default)",
    )
    parser.add_argument(
        "--until",
        metavar="SECONDS",
        help="stop the replay at this trace second (a number, or a duration like 24h); jobs still "
        "waiting count as never admitted, running ones count their GPU-hours up to it; 'end': "
        "until every job finished (default: the trace's until:, else 'end')",
    )
    add_scale_argument(parser)
    parser.add_argument("--format", choices=("text", "markdown", "json"), default="text")


def _usage(message: str) -> int:
    print(f"generate.py simulate: error: {message}", file=sys.stderr)
    return 2


def horizon(text: str | None) -> float | None:
    """--until as trace seconds (math.inf for 'end', None when not given); ValueError with
    the one-line reason for a bad value."""
    import math

    from box.speed import SpeedError, seconds_of

    if text is None:
        return None
    if text == "end":
        return math.inf
    try:
        seconds = float(text) if text.replace(".", "", 1).isdigit() else seconds_of(text)
    except SpeedError:
        raise ValueError(
            f"--until takes trace seconds or a duration like 24h, or 'end', not {text!r}"
        ) from None
    if not 0 < seconds < math.inf:
        raise ValueError(f"--until must be above zero, not {text!r}")
    return seconds


def default_speed() -> int:
    """The schema's default of whatif.speed: the highest speed the sweep showed to hold
    (docs/whatif.md "Fidelity"), one number for the PR's replay and for the command line."""
    from generators.spec.schema import subschema

    return int(subschema(("whatif", "speed"))["default"])


def run(args: argparse.Namespace) -> int:
    if select_environments(args.root, [args.env]) is None:
        return 2
    if args.trace is None:  # the spec's `whatif`, as the PR workflow replays it (docs/whatif.md)
        from generators.diff.whatif import configured

        spec = next((c for c in configured(args.root) if c.env == args.env), None)
        if spec is None:
            return _usage(f"no --trace, and environments/{args.env}.yaml has no whatif.trace")
        args.trace = args.root / spec.trace
        args.speed = spec.speed if args.speed is None else args.speed
    args.speed = default_speed() if args.speed is None else args.speed
    if args.speed < 1:
        return _usage(f"--speed must be a positive integer, not {args.speed}")
    if args.scale < 1:
        return _usage(f"--scale must be a positive integer, not {args.scale}")
    try:
        until = horizon(args.until)
    except ValueError as err:
        return _usage(str(err))
    path = args.trace if args.trace.is_absolute() else Path.cwd() / args.trace
    if not path.is_file():
        return _usage(f"no trace file {args.trace}")
    display = os.path.relpath(path, args.root) if path.is_relative_to(args.root) else str(args.trace)
    from generators.diff.gitref import GitError
    from generators.errors import SpecError
    from whatif import report
    from whatif.horizon import first_arrival_if_none_before, resolve
    from whatif.run import simulate
    from whatif.trace import load

    # a malformed trace is refused (SpecError, file:line:col) before anything runs; the trace's
    # own until: is checked there, --until here
    trace = load(path, display)
    cut = resolve(until, trace.until)
    first = first_arrival_if_none_before((j.at for j in trace.jobs), cut) if until and cut else None
    if first is not None:
        return _usage(
            f"--until {args.until}: no job of the trace arrives before it (the first at {first:g} s)"
        )
    try:
        import kubernetes  # noqa: F401
    except ImportError:
        return _usage("the box needs the development requirements; run: make setup")
    from box.up import BoxError
    from tools.toolchain import ToolNotInstalled

    def say(line: str) -> None:
        print(line, file=sys.stderr)

    try:
        result = simulate(args.root, args.env, path, display, args.base, args.scale, args.speed, say, until)
    except GitError as err:
        return _usage(str(err))
    except (BoxError, ToolNotInstalled) as err:
        print(f"generate.py simulate: error: {err}", file=sys.stderr)
        return 1
    except SpecError:
        raise  # the CLI prints spec and trace problems at file:line:col
    except Exception as err:  # a component failed: its own message (with its log tail), no traceback
        print(
            f"generate.py simulate: error: the replay failed ({type(err).__name__}): {err}", file=sys.stderr
        )
        return 1
    for label, replayed in result.replays.items():
        if not replayed.complete:
            say(
                f"{label}: not every job finished within the replay's budget "
                f"({replayed.wall_seconds:.0f} s); they count as never admitted or still running"
            )
    title = (
        f"what-if {args.env}: {display} at speed {args.speed}"
        + (f", scale {args.scale}" if args.scale > 1 else "")
        + (f", until {report.duration(cut)}" if cut is not None else "")
        + " (times are trace time)"
    )
    render = {"text": report.text, "markdown": report.markdown, "json": report.as_json}[args.format]
    sys.stdout.write(render(result.head, result.base, title))
    return 0
