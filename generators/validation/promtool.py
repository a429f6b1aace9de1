"""`promtool check rules` over every Prometheus rule group an environment ships.

Rule groups come as PrometheusRule objects (spec.groups), as rule files inside ConfigMaps
(a data entry that parses to {groups: [{rules: ...}]}), or as plain rule-group documents.
Each is written to a temporary file, all are checked in ONE promtool run, and its output
is mapped back to the object that holds the group.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generators.output import yamlemit
from policies.context import Finding, RenderedObject
from tools.toolchain import ToolNotInstalled, tool_path

POLICY = "promtool"
_RULES_FOUND = re.compile(r"SUCCESS: (\d+) rules found")


@dataclass(frozen=True)
class RuleSource:
    item: RenderedObject
    where: str  # spec.groups, data[rules.yaml], or "" for a plain document
    groups: Mapping[str, Any]  # {"groups": [...]}, a promtool rule file


@dataclass(frozen=True)
class RulesResult:
    rules: int  # rules promtool counted
    sources: int  # rule files (objects or ConfigMap entries) checked
    findings: tuple[Finding, ...]


def _rule_file(document: Any) -> bool:
    groups = document.get("groups") if isinstance(document, Mapping) else None
    return isinstance(groups, list) and all(isinstance(g, Mapping) and "rules" in g for g in groups)


def rule_sources(objects: Iterable[RenderedObject]) -> list[RuleSource]:
    sources = []
    for item in objects:
        if item.kind == "PrometheusRule":
            sources.append(RuleSource(item, "spec.groups", {"groups": item.spec.get("groups") or []}))
        elif not item.kind and _rule_file(item.obj):
            sources.append(RuleSource(item, "", item.obj))
        for key, document in item.embedded:
            if _rule_file(document):
                sources.append(RuleSource(item, f"data[{key}]", document))
    return sources


def check_rules(sources: list[RuleSource], timeout: float = 120.0) -> RulesResult:
    """Run promtool once over all sources; findings are per source."""
    if not sources:
        return RulesResult(0, 0, ())
    try:
        promtool = tool_path("promtool")
    except ToolNotInstalled as error:
        first = sources[0].item
        return RulesResult(
            0,
            len(sources),
            (Finding(first.path, first.kind, first.name, POLICY, f"cannot check rules: {error}"),),
        )
    with tempfile.TemporaryDirectory(prefix="trainyard-rules-") as tmp:
        files = {}
        for index, source in enumerate(sources):
            path = Path(tmp) / f"{index:04d}.yaml"
            path.write_text(yamlemit.dump(dict(source.groups)), encoding="utf-8")
            files[str(path)] = source
        # One stream, in order: promtool prints `Checking F` to stdout and F's errors to stderr.
        done = subprocess.run(
            [str(promtool), "check", "rules", *files],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )
        rules, errors = _parse(done.stdout, files)
    findings = [
        Finding(
            s.item.path, s.item.kind, s.item.name, POLICY, f"{s.where + ': ' if s.where else ''}{message}"
        )
        for s, message in errors
    ]
    if done.returncode != 0 and not findings:
        first = sources[0].item
        findings.append(
            Finding(
                first.path,
                first.kind,
                first.name,
                POLICY,
                f"promtool exited {done.returncode}: {done.stdout.strip()[:500]}",
            )
        )
    return RulesResult(rules, len(sources), tuple(sorted(findings)))


def _parse(output: str, files: Mapping[str, RuleSource]) -> tuple[int, list[tuple[RuleSource, str]]]:
    """Rules counted and (source, message) per error line, by `Checking <file>` blocks."""
    rules, errors = 0, []
    current: RuleSource | None = None
    failed = False
    for line in output.splitlines():
        text = line.strip()
        if text.startswith("Checking ") and text[len("Checking ") :] in files:
            current, failed = files[text[len("Checking ") :]], False
        elif match := _RULES_FOUND.search(text):
            rules += int(match.group(1))
        elif text == "FAILED:":
            failed = True
        elif current is not None and failed and text:
            errors.append((current, _strip_paths(text, files)))
    return rules, errors


def _strip_paths(text: str, files: Iterable[str]) -> str:
    for path in files:
        text = text.replace(f"{path}: ", "").replace(path, "<rules>")
    return text
