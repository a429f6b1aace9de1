"""`validate [ENV ...] [--format text|json] [--list]`: spec, staleness, kubeconform, policies,
promtool over rendered/<env>/. Exit 0 clean (warnings allowed), 1 on any error finding."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from generators.commands import add_envs_argument, select_environments
from generators.errors import once

if TYPE_CHECKING:  # heavy imports stay inside run(), so that --help is fast
    from generators.validation.checks import EnvironmentReport
    from policies.context import Finding

HELP = "check rendered/<env>/: kubeconform, policies/, promtool (all environments when none named)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_envs_argument(parser)
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: one line per finding, then a summary per environment; json: one document for machines",
    )
    parser.add_argument("--list", action="store_true", help="list the policies and exit")


def run(args: argparse.Namespace) -> int:
    from generators.validation.checks import orphan_dirs, validate

    if args.list:
        return _list_policies()
    names = select_environments(args.root, args.envs)
    if names is None:
        return 2
    started = time.perf_counter()
    reports = validate(args.root, names)
    seconds = time.perf_counter() - started
    orphans = [] if args.envs else orphan_dirs(args.root, names)
    findings = sorted([*orphans, *(f for report in reports for f in report.findings)])
    if args.format == "json":
        json.dump(_document(reports, findings, seconds), sys.stdout, indent=2)
        print()
    else:
        lines = [("", f.file, f.line()) for f in orphans]
        lines += [(r.name, f.file, f.line()) for r in reports for f in r.findings]
        for line in once(sorted(lines, key=lambda entry: entry[2])):
            print(line)
        for report in reports:
            print(_summary(report))
        if len(reports) > 1:
            print(
                f"total: {len(reports)} environments, {sum(r.objects for r in reports)} objects, "
                f"{len(findings)} findings, {seconds:.2f}s"
            )
    return 1 if any(f.severity == "error" for f in findings) else 0


def _summary(report: EnvironmentReport) -> str:
    k = report.kubeconform
    return (
        f"{report.name}: {report.objects} objects, {len(report.findings)} findings "
        f"({report.errors} errors, {report.warnings} warnings); kubeconform {k.valid}/{k.expected} "
        f"valid; {report.policies} policies; {report.rules} rules in {report.rule_files} files; "
        f"{report.seconds:.2f}s"
    )


def _document(reports: list[EnvironmentReport], findings: list[Finding], seconds: float) -> dict[str, Any]:
    return {
        "ok": not any(f.severity == "error" for f in findings),
        "seconds": round(seconds, 3),
        "environments": [
            {
                "name": r.name,
                "objects": r.objects,
                "findings": len(r.findings),
                "errors": r.errors,
                "warnings": r.warnings,
                "seconds": round(r.seconds, 3),
                "kubeconform": vars(r.kubeconform),
                "policies": r.policies,
                "rules": {"files": r.rule_files, "rules": r.rules},
            }
            for r in reports
        ],
        "findings": [dataclasses.asdict(f) for f in findings],  # its fields, in order
    }


def _list_policies() -> int:
    from policies import registry

    for policy in registry():
        print(f"{policy.id} ({policy.severity}): {policy.rationale}")
    return 0
