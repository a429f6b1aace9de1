"""ExporterDown: every other alert is silent when its exporter is gone, so watch them too.

One rule per exporter (same alert name, an `exporter` label), as the mixins do: absent()
catches a target that vanished from service discovery, == 0 one that fails its scrapes.
"""

from __future__ import annotations

from generators.components.monitoring.alerts.rule import Alert, Rule, context, evaluate
from generators.components.monitoring.promql import GATE_JOB, Queries, selector
from generators.model.environment import Environment
from generators.promql.vocabulary import target_down


def exporter_down(exporter: str, matchers: str) -> Alert:
    """The row of one exporter: its matchers are in the query and the text."""
    return Alert(
        "ExporterDown",
        lambda q: target_down("up" + selector(matchers)),
        for_="{a.exporter_down_for}",
        severity="warning",
        labels={"exporter": exporter},
        facts={"exporter": exporter, "matchers": matchers},
        summary="{exporter} is down or not scraped.",
        description=(
            "Prometheus has had no successful scrape of {exporter} ({matchers}) for "
            "{a.exporter_down_for}. The alerts and dashboards built on it are blind until it "
            "is back."
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
    rows = [exporter_down(name, matchers) for name, matchers in scraped(q.env).items()]
    return evaluate(rows, q, q.m, context(q))
