"""Alerts as data, in mixin shape: a family is a table of `Alert` rows, and `evaluate` is the
only place a rule (expr, for, labels, annotations) is assembled.

As in kubernetes-mixin, a row's texts name the settings they quote instead of copying them:
`{m.gpu_temp_limit_celsius}` (monitoring), `{a.gpu_temp_for}` (monitoring.alerts),
`{labels.gpu}` (the alert label, `{{ $labels.gpu }}` in the rule), `{value}` and
`{value_percent}` (the firing value), `{host}` (the host label of the family's exporter), and
the family's own facts (a window, a derived limit) or the row's (`Alert.facts`: a value from
the spec goes in as a fact, never into the template, so its braces stay text). A field the
context lacks fails the render (KeyError, AttributeError), so a mistyped name cannot reach
a rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from generators.components.monitoring.promql import Queries

Rule = dict[str, Any]

VALUE = "{{ $value | humanize }}"  # %.4g with SI prefixes: no float noise
VALUE_PERCENT = "{{ $value | humanizePercentage }}"


class Runbooks(Protocol):
    """Where an alert's runbook is: Monitoring (docs/monitoring.md) or Health (docs/health.md),
    each with its own `runbookUrlPattern` setting."""

    @property
    def runbook_url_pattern(self) -> str: ...


def runbook_url(runbooks: Runbooks, alert: str) -> str:
    """The pattern with `%s` replaced by the alert's name in lower case (a docs anchor)."""
    return runbooks.runbook_url_pattern.replace("%s", alert.lower())


def label(name: str) -> str:
    """Alert template text that expands to the value of label `name`."""
    return "{{ $labels." + name + " }}"


class _Labels:
    """`{labels.x}` in a row's text: the alert template of label x."""

    def __getattr__(self, name: str) -> str:
        return label(name)


@dataclass(frozen=True)
class Alert:
    """One alert: its name, its query (built from the PromQL vocabulary), severity, `for`
    and texts; `for_` and the texts are templates over the family's context (above)."""

    name: str
    expr: Callable[[Queries], str]
    severity: str
    summary: str
    description: str
    for_: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    facts: Mapping[str, object] = field(default_factory=dict)  # this row's own, over the family's


def context(q: Queries, **facts: object) -> dict[str, object]:
    """What every row's texts may name, and the family's facts (which may override `host`)."""
    base: dict[str, object] = {
        "m": q.m,
        "a": q.m.alerts,
        "labels": _Labels(),
        "value": VALUE,
        "value_percent": VALUE_PERCENT,
        "host": label(q.m.host_label),
    }
    return {**base, **facts}


def evaluate(
    rows: Iterable[Alert], q: Queries, runbooks: Runbooks, facts: Mapping[str, object]
) -> list[Rule]:
    """The rules of a family's rows, in row order."""
    rules = []
    for row in rows:
        texts = {**facts, **row.facts}
        rule: Rule = {"alert": row.name, "expr": row.expr(q)}
        if for_ := row.for_.format_map(texts):
            rule["for"] = for_
        rule["labels"] = {"severity": row.severity, **row.labels}
        rule["annotations"] = {
            "summary": row.summary.format_map(texts),
            "description": row.description.format_map(texts),
            "runbook_url": runbook_url(runbooks, row.name),
        }
        rules.append(rule)
    return rules
