"""What the two controllers' own alerts share (one program, two policies: the overflow gate
and the health quarantine, docs/health.md): the alert that no process holds the Lease."""

from __future__ import annotations

from collections.abc import Callable

from generators.components.monitoring.alerts.rule import Alert
from generators.components.monitoring.promql import Queries


def no_leader(
    name: str, leader: Callable[[Queries], str], *, controller: str, process: str, pods: str, stalled: str
) -> Alert:
    """The row for one controller: `leader` its Lease gauge, `stalled` what waits meanwhile."""
    return Alert(
        name,
        lambda q: q.no_leader(leader(q)),
        for_="{a.controller_no_leader_for}",
        severity="warning",
        facts={"controller": controller, "process": process, "pods": pods, "stalled": stalled},
        summary="No {controller} controller holds the Lease.",
        description=(
            "No {process} process has acted for {a.controller_no_leader_for}: {stalled}. Check the "
            "{pods} pods and their log (lease attempt failed)."
        ),
    )
