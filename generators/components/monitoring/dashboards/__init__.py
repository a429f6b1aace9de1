"""One module per dashboard, each a `DASHBOARD` declaration (panels.Dashboard: slug -> stable
UID, title, description, variables, rows of panel functions) over the builders of panels.py,
imported as `g` the way grafonnet dashboards import `g.libsonnet`.

A panel function returns the panels of one row, each line of a panel a fact of it (title,
description, queries, unit where it has one, size); the repeated shapes (a per-label
aggregation legended by its labels, the panel kinds several dashboards draw alike: a gauge or
a counter's increase per label set, a count that reads 0 when nothing matches; the dashboard
and row skeleton, ids) are in panels.py. The queries come from promql (the one vocabulary).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from generators.components.monitoring.dashboards import (
    fabric,
    gpu_hardware,
    overflow,
    quarantine,
    queues,
    training,
    utilization,
)
from generators.model.environment import Environment

Builder = Callable[[Environment], dict[str, Any]]


def builders(env: Environment) -> list[tuple[str, Builder]]:
    """(slug, build) for every dashboard this environment gets, in a fixed order."""
    modules = [gpu_hardware, utilization, fabric, training, queues]
    if env.overflow is not None:
        modules.append(overflow)
    if env.health is not None and env.health.controller is not None:
        modules.append(quarantine)
    return [(module.DASHBOARD.slug, module.DASHBOARD.build) for module in modules]
