"""`trace from-workloads WORKLOADS.json --env ENV [--pods PODS.json] [-o FILE]`: a trace for
`simulate` from a real cluster's Kueue Workloads (whatif/workloads.py,
docs/whatif.md "A trace from a real cluster")."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from generators.commands import select_environments

HELP = (
    "build a what-if trace from a real cluster: trace from-workloads FILE (kubectl get workloads "
    "-A -o json) --env ENV [--pods FILE (kubectl get pods -A -o json)]"
)
HEADER = """\
# Trace for {env} from a real cluster's Kueue Workloads, by
#   python generate.py trace from-workloads {workloads} --env {env}{pods_option}
# {kept} jobs; times in seconds of the cluster's clock. Durations: {durations}.
# How each key is read: whatif/workloads.py and docs/whatif.md.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="trace_command", required=True, metavar="SOURCE")
    command = sub.add_parser(
        "from-workloads",
        help="one trace job per Finished Workload of kubectl get workloads -A -o json",
        description="one trace job per Finished Workload of kubectl get workloads -A -o json "
        "(docs/whatif.md, A trace from a real cluster)",
    )
    command.add_argument("workloads", metavar="FILE", type=Path, help="kubectl get workloads -A -o json")
    command.add_argument(
        "--env", required=True, metavar="ENV", help="the environment the cluster runs (teams by namespace)"
    )
    command.add_argument(
        "--pods",
        type=Path,
        metavar="FILE",
        help="kubectl get pods -A -o json: durations from the pods' own run times, not the conditions",
    )
    command.add_argument("-o", "--output", type=Path, metavar="FILE", help="write here, not to stdout")


def _usage(message: str) -> int:
    print(f"generate.py trace: error: {message}", file=sys.stderr)
    return 2


def _display(path: Path, root: Path) -> str:
    absolute = path if path.is_absolute() else Path.cwd() / path
    return os.path.relpath(absolute, root) if absolute.is_relative_to(root) else str(path)


def run(args: argparse.Namespace) -> int:
    if select_environments(args.root, [args.env]) is None:
        return 2
    for given in (args.workloads, args.pods):
        if given is not None and not given.is_file():
            return _usage(f"no file {given}")
    from generators.model.load import load
    from whatif import trace, workloads

    env = load(args.root, args.env)
    source = workloads.read(args.workloads, _display(args.workloads, args.root), "Workload")
    pods = workloads.read(args.pods, _display(args.pods, args.root), "Pod") if args.pods else None
    header = HEADER.format(
        env=env.name,
        workloads=source.display,
        pods_option=f" --pods {pods.display}" if pods else "",
        kept="{kept}",
        durations="the longest run of each Workload's Succeeded pods"
        if pods
        else "PodsReady (else Admitted) to Finished, from the Workloads' conditions",
    )
    converted = workloads.convert(source, env, pods, header)
    text = converted.text.replace("{kept}", str(converted.kept), 1)
    # What it wrote must load as a trace of this environment: a failure here is this command's bug.
    with tempfile.TemporaryDirectory(prefix="trainyard-trace-") as temp:
        check = Path(temp) / "trace.yaml"
        check.write_text(text, encoding="utf-8")
        trace.load(check, "the converted trace", env)
    for line in workloads.notes(converted, source.display):
        print(line, file=sys.stderr)
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0
