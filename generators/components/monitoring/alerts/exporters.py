"""ExporterDown: every other alert is silent when its exporter is gone, so watch them too.

One rule per exporter (same alert name, an `exporter` label), as the mixins do: absent()
catches a target that vanished from service discovery, == 0 one that fails its scrapes.
"""

from __future__ import annotations

from generators.components.monitoring.alerts.rule import Rule, alert
from generators.components.monitoring.promql import GATE_JOB, Queries, selector
from generators.model.environment import Environment
from generators.model.promql import target_down


def exporter_down(q: Queries, exporter: str, matchers: str) -> Rule:
    m = q.m
    up = "up" + selector(matchers)
    return alert(
        m,
        "ExporterDown",
        target_down(up),
        for_=m.alerts.exporter_down_for,
        severity="warning",
        labels={"exporter": exporter},
        summary=f"{exporter} is down or not scraped.",
        description=(
            f"Prometheus has had no successful scrape of {exporter} ({matchers}) for "
            f"{m.alerts.exporter_down_for}. The alerts and dashboards built on it are blind "
            "until it is back."
        ),
    )


def scraped(env: Environment) -> dict[str, str]:
    """Exporter name -> matchers of every target the dashboards and rules read (also what
    `generate.py doctor` sorts series by)."""
    exporters = env.monitoring.selectors.by_exporter()
    if env.overflow is not None:  # the gate's own metrics: its alerts and panels need them
        exporters[GATE_JOB] = Queries(env).gate_matchers()
    return exporters


def rules(q: Queries) -> list[Rule]:
    return [exporter_down(q, name, matchers) for name, matchers in scraped(q.env).items()]
