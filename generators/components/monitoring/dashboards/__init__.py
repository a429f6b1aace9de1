"""One module per dashboard: build(env) -> dashboard JSON model (dict), SLUG -> stable UID.

Panels and build() are declarations (title, description, unit, queries, rows) over the
helpers of panels.py, which hold the logic; `duplicates` pairs them (and the modules' import
lists of those helpers) by shape alone, and they stay apart so each reads as its dashboard.
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
    return [(module.SLUG, module.build) for module in modules]
