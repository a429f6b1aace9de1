"""Overflow alerts: a gate that flaps (hysteresis failing, inference bouncing between the
cluster and providers) and a virtual node that is down (nowhere to spill to)."""

from __future__ import annotations

from generators.components.alerts.rule import VALUE, Rule, alert, label
from generators.components.promql import Queries

FLAP_WINDOW = "1h"


def flapping(q: Queries) -> Rule:
    m = q.m
    limit = m.alerts.gate_transitions_per_hour
    transitions = q.gate("trainyard_gate_transitions_total")
    return alert(
        m,
        "OverflowGateFlapping",
        f"sum by (gate) (increase({transitions}[{FLAP_WINDOW}])) > {limit}",
        severity="warning",
        summary=f"Overflow gate {label('gate')} changed state {VALUE} times in {FLAP_WINDOW}.",
        description=(
            f"The overflow gate of provider {label('gate')} opened or closed {VALUE} times in "
            f"the last {FLAP_WINDOW} (more than {limit}). Inference is bouncing between the "
            "cluster and the provider: widen the band (closeWhenFreeGpusAtLeast vs "
            "openWhenFreeGpusBelow) or lengthen closeAfterSeconds."
        ),
    )


def virtual_node(q: Queries) -> Rule:
    m = q.m
    ready = q.ksm("kube_node_status_condition", 'condition="Ready"', 'status="true"', q.virtual_nodes())
    return alert(
        m,
        "VirtualNodeNotReady",
        f"max by (node) ({ready}) == 0",
        for_=m.alerts.virtual_node_not_ready_for,
        severity="warning",
        summary=f"Virtual node {label('node')} is not Ready.",
        description=(
            f"Virtual node {label('node')} has been NotReady for "
            f"{m.alerts.virtual_node_not_ready_for}: inference cannot spill to its provider. "
            "Check the virtual-kubelet Deployment and the provider credentials."
        ),
    )


def rules(q: Queries) -> list[Rule]:
    return [flapping(q), virtual_node(q)]
