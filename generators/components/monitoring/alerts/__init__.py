"""Alert rules, one module per area; groups() is what both the PrometheusRule and the plain
rules file carry, so promtool tests exactly what Prometheus loads.

Mixin conventions: CamelCase names, severity critical (drain or act now) | warning,
annotations summary + description + runbook_url (a section of docs/monitoring.md).

Each area module is a table (`RULES`, rows of rule.Alert: name, query, severity, `for`,
texts) evaluated by rule.evaluate with the area's facts, as kubernetes-mixin declares its
alerts as data with the thresholds beside them; the queries come from promql (the one
vocabulary), never written here.
"""

from __future__ import annotations

from typing import Any

from generators.components.monitoring.alerts import exporters, fabric, gpu, health, overflow, scheduling
from generators.components.monitoring.promql import Queries
from generators.model.environment import Environment


def groups(env: Environment) -> list[dict[str, Any]]:
    q = Queries(env)
    return (
        [
            {"name": "trainyard-gpu", "rules": gpu.rules(q)},
            {"name": "trainyard-fabric", "rules": fabric.rules(q)},
            {"name": "trainyard-scheduling", "rules": scheduling.rules(q)},
            {"name": "trainyard-exporters", "rules": exporters.rules(q)},
        ]
        + ([{"name": "trainyard-overflow", "rules": overflow.rules(q)}] if env.overflow else [])
        + ([{"name": "trainyard-health", "rules": quarantine}] if (quarantine := health.rules(q)) else [])
    )
