"""What the two controllers' own alerts share (one program, two policies: the overflow gate
and the health quarantine, docs/health.md): the alert that no process holds the Lease, and
how each controller's alerts name it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from generators.components.monitoring.alerts.rule import Alert
from generators.components.monitoring.promql import Queries
from generators.model.health import NAME as HEALTH_NAME
from generators.model.overflow import GATE as GATE_NAME


@dataclass(frozen=True)
class Controller:
    """A controller as its alerts' texts name it: in a sentence, its process, its pods (the
    Deployment, named by the model)."""

    title: str
    process: str
    pods: str


GATE = Controller("overflow gate", "overflow gate", GATE_NAME)
HEALTH = Controller("GPU health", HEALTH_NAME, HEALTH_NAME)


def no_leader(name: str, c: Controller, leader: Callable[[Queries], str], stalled: str) -> Alert:
    """The row for controller `c`: `leader` its Lease gauge, `stalled` what waits meanwhile."""
    return Alert(
        name,
        lambda q: q.no_leader(leader(q)),
        for_="{a.controller_no_leader_for}",
        severity="warning",
        facts={"title": c.title, "process": c.process, "pods": c.pods, "stalled": stalled},
        summary="No {title} controller holds the Lease.",
        description=(
            "No {process} process has acted for {a.controller_no_leader_for}: {stalled}. Check the "
            "{pods} pods and their log (lease attempt failed)."
        ),
    )
