"""One alert rule in mixin shape: the only place annotations and labels are assembled."""

from __future__ import annotations

from typing import Any, Protocol

Rule = dict[str, Any]

VALUE = "{{ $value | humanize }}"  # %.4g with SI prefixes: no float noise
VALUE_PERCENT = "{{ $value | humanizePercentage }}"


class Runbooks(Protocol):
    """Where an alert's runbook is: Monitoring (docs/monitoring.md) or Health (docs/health.md)."""

    def runbook_url(self, alert: str) -> str: ...


def label(name: str) -> str:
    """Alert template text that expands to the value of label `name`."""
    return "{{ $labels." + name + " }}"


def alert(
    m: Runbooks,
    name: str,
    expr: str,
    *,
    severity: str,
    summary: str,
    description: str,
    for_: str | None = None,
    labels: dict[str, str] | None = None,
) -> Rule:
    rule: Rule = {"alert": name, "expr": expr}
    if for_:
        rule["for"] = for_
    rule["labels"] = {"severity": severity, **(labels or {})}
    rule["annotations"] = {"summary": summary, "description": description, "runbook_url": m.runbook_url(name)}
    return rule
