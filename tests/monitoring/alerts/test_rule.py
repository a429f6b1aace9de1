"""rule.evaluate, the one place an alert row becomes a rule (generators/components/monitoring/
alerts/rule.py): templates name settings, labels and facts; a spec value enters as a fact and
stays text; a name the context lacks fails instead of shipping. Expected values are literals
worked out from the row written here and the shipped dev spec (monitoring defaults)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from generators.components.monitoring.alerts.rule import Alert, context, evaluate
from generators.components.monitoring.promql import Queries
from tests.monitoring.conftest import load_shipped


class Book:
    runbook_url_pattern = "https://runbooks.invalid/%s"


def queries() -> Queries:
    return Queries(load_shipped("dev").env)


ROW = Alert(
    "Example",
    lambda q: "vector(1) > 0",
    severity="warning",
    for_="{a.gpu_temp_for}",
    labels={"team": "gpu"},
    facts={"window": "7m"},
    summary="GPU {labels.gpu} on {host} above {m.gpu_temp_limit_celsius} °C for {window}.",
    description="{value} / {value_percent}",
)


def test_a_row_names_its_settings_labels_and_facts() -> None:
    q = queries()
    assert evaluate([ROW], q, Book(), context(q)) == [
        {
            "alert": "Example",
            "expr": "vector(1) > 0",
            "for": "2m",  # monitoring.alerts.gpuTempFor's default (docs/monitoring.md)
            "labels": {"severity": "warning", "team": "gpu"},
            "annotations": {
                "summary": "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} above 78 °C for 7m.",
                "description": "{{ $value | humanize }} / {{ $value | humanizePercentage }}",
                "runbook_url": "https://runbooks.invalid/example",
            },
        }
    ]


def test_no_for_is_no_for_key_and_a_fact_with_braces_stays_text() -> None:
    q = queries()
    row = replace(
        ROW, for_="", facts={"matchers": 'job=~"a{2}"'}, summary="{matchers}", description="of {matchers}"
    )
    rule = evaluate([row], q, Book(), context(q))[0]
    assert "for" not in rule
    assert rule["annotations"]["summary"] == 'job=~"a{2}"'
    assert rule["annotations"]["description"] == 'of job=~"a{2}"'


def test_a_name_the_context_lacks_fails_the_render() -> None:
    q = queries()
    with pytest.raises(AttributeError):
        evaluate([replace(ROW, summary="{a.gpu_tmp_for}")], q, Book(), context(q))
    with pytest.raises(KeyError):
        evaluate([replace(ROW, description="{windw}")], q, Book(), context(q))
